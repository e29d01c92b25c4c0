// _multi_update: MXNet 1.9's element-wise optimizer rules beyond SGD and Adam
// (ndarray/ops/update_rules.hpp) on a list of weights of one context and dtype, one parallel
// pass on cpu(0) and one launch on a GPU (cuda/ops/multi_update.cu). ndgluon's own op (MXNet has
// one per rule and per weight: nag_mom_update, rmsprop_update, ...); not exported to symbol JSON,
// as no optimizer op is part of a model.
//
// Inputs, per weight: w, g, its states (RuleParams::num_states), and the float32 master copy under
// multi_precision; then one (num_weights, 8) float64 array of TensorScalars, and, for the rules
// that scale by norms (RuleParams::norms), one (num_weights, 2) float32 array of them, both on the
// weights' context. Outputs, per weight: w, the states, the master copy. Every weight has one dtype; the
// states are float32 with a master copy, else the weight's dtype.
#include "ndarray/ops/multi_update.hpp"
#include "ndarray/ops/optimizer.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "ndarray/core/checks.hpp"
#include "ndarray/core/contiguous.hpp"
#include "ndarray/graph/trace.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/profiler/profiler.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

std::size_t per_weight(const RuleParams& p) { return 2 + static_cast<std::size_t>(p.num_states + p.master); }

void fused_update_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = inv.op->name;
  const RuleParams& p = inv.params.as<RuleParams>();
  const std::size_t n = static_cast<std::size_t>(p.num_weights), each = per_weight(p);
  const std::size_t extra = p.norms ? 2 : 1;
  if (inv.inputs.size() != n * each + extra) {
    throw ValueError(std::string(op) + ": " + std::to_string(n) + " weights need " + std::to_string(n * each + extra) +
                     " inputs, got " + std::to_string(inv.inputs.size()));
  }
  const NDArray& scalars = inv.inputs[n * each];
  if (p.norms && (inv.inputs.back().dtype() != DType::float32 ||
                  inv.inputs.back().shape() != Shape{static_cast<std::int64_t>(n), 2})) {
    throw ShapeError(std::string(op) + ": the per-weight norms " + nd::describe(inv.inputs.back()) + " must be (" +
                     std::to_string(n) + ", 2) float32");
  }
  if (scalars.dtype() != DType::float64 || scalars.shape() != Shape{static_cast<std::int64_t>(n), 8}) {
    throw ShapeError(std::string(op) + ": the per-weight scalars " + nd::describe(scalars) + " must be (" +
                     std::to_string(n) + ", 8) float64");
  }
  if (p.master && !is_half(inv.inputs[0].dtype())) {
    throw DTypeError(std::string(op) + ": a float32 master copy is for float16 and bfloat16 weights, not " +
                     nd::describe(inv.inputs[0]));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const NDArray& w = inv.inputs[i * each];
    nd::check_floating(op, w);
    nd::check_same_dtype(op, inv.inputs[0], w);
    const DType state = p.master ? DType::float32 : w.dtype();
    for (std::size_t j = 1; j < each; ++j) {
      const NDArray& x = inv.inputs[i * each + j];
      const DType want = j == 1 ? w.dtype() : state;
      if (x.dtype() != want) {
        throw DTypeError(std::string(op) + ": " + nd::describe(x) + " of weight " + std::to_string(i) + " " +
                         nd::describe(w) + " must be " + dtype_name(want));
      }
      if (x.shape() != w.shape()) {
        throw ShapeError(std::string(op) + ": " + nd::describe(x) + " does not match weight " + std::to_string(i) +
                         " " + nd::describe(w));
      }
    }
    out.push_back({w.shape(), w.dtype()});
    for (std::size_t j = 2; j < each; ++j) out.push_back({w.shape(), state});
  }
}

// One parallel pass over the list: chunks of kParallelThreshold elements of every weight.
void multi_update_cpu(const ExecContext&, const Invocation& inv) {
  const RuleParams& p = inv.params.as<RuleParams>();
  const std::size_t n = static_cast<std::size_t>(p.num_weights), each = per_weight(p), outs = each - 1;
  const auto* scalars = static_cast<const TensorScalars*>(inv.inputs[n * each].data());
  const auto* norms = p.norms ? static_cast<const float*>(inv.inputs.back().data()) : nullptr;
  struct Chunk {
    std::size_t weight;
    std::int64_t begin, end;
  };
  std::vector<Chunk> chunks;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t size = inv.inputs[i * each].size();
    for (std::int64_t b = 0; b < size; b += kParallelThreshold) chunks.push_back({i, b, std::min(size, b + kParallelThreshold)});
  }
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const auto run = [&](auto state_tag) {
      using S = decltype(state_tag);
      using A = ComputeType<S>;
      parallel_for(static_cast<std::int64_t>(chunks.size()), [&](std::int64_t c) {
        const Chunk& chunk = chunks[static_cast<std::size_t>(c)];
        const std::size_t i = chunk.weight;
        T* w = static_cast<T*>(inv.outputs[i * outs].data());
        const T* g = static_cast<const T*>(inv.inputs[i * each + 1].data());
        S* states[3] = {};
        for (int k = 0; k < p.num_states; ++k) states[k] = static_cast<S*>(inv.outputs[i * outs + 1 + k].data());
        S* master = p.master ? static_cast<S*>(inv.outputs[i * outs + outs - 1].data()) : nullptr;
        for (std::int64_t e = chunk.begin; e < chunk.end; ++e) {
          const A updated = apply_rule<A, S>(p, scalars[i], master ? A(master[e]) : A(w[e]), A(g[e]), states, e,
                                             norms ? norms + 2 * i : nullptr);
          if (master) master[e] = static_cast<S>(updated);
          w[e] = static_cast<T>(updated);
        }
      }, static_cast<std::int64_t>(chunks.size()) * kParallelThreshold);
    };
    if (p.master) run(float{});
    else run(T{});
  });
}

void multi_sum_sq_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = inv.op->name;
  if (inv.inputs.empty()) throw ValueError(std::string(op) + ": needs at least one array");
  for (const NDArray& x : inv.inputs) {
    nd::check_floating(op, x);
    nd::check_same_dtype(op, inv.inputs[0], x);
    if (!x.is_contiguous()) throw ValueError(std::string(op) + ": " + nd::describe(x) + " is a strided view");
  }
  out.push_back({Shape{static_cast<std::int64_t>(inv.inputs.size())}, DType::float32});
}

void multi_sum_sq_cpu(const ExecContext&, const Invocation& inv) {
  struct Chunk {
    std::size_t array;
    std::int64_t begin, end;
  };
  std::vector<Chunk> chunks;
  std::vector<std::size_t> first(inv.inputs.size() + 1, 0);
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
    first[i] = chunks.size();
    const std::int64_t size = inv.inputs[i].size();
    for (std::int64_t b = 0; b < size; b += kSumChunk) chunks.push_back({i, b, std::min(size, b + kSumChunk)});
  }
  first.back() = chunks.size();
  std::vector<double> partial(chunks.size());
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    parallel_for(static_cast<std::int64_t>(chunks.size()), [&](std::int64_t c) {
      const Chunk& chunk = chunks[static_cast<std::size_t>(c)];
      const T* x = static_cast<const T*>(inv.inputs[chunk.array].data());
      double sum = 0;
      for (std::int64_t e = chunk.begin; e < chunk.end; ++e) sum += static_cast<double>(x[e]) * static_cast<double>(x[e]);
      partial[static_cast<std::size_t>(c)] = sum;
    }, static_cast<std::int64_t>(chunks.size()) * kSumChunk);
  });
  float* out = static_cast<float*>(inv.outputs[0].data());
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
    double sum = 0;
    for (std::size_t c = first[i]; c < first[i + 1]; ++c) sum += partial[c];
    out[i] = static_cast<float>(sum);
  }
}

[[maybe_unused]] const bool registered = (multi_update_op(), multi_sum_sq_op(), true);

}  // namespace

const OpDef& multi_update_op() {
  static const OpDef def{"_multi_update", &fused_update_infer, &multi_update_cpu, NDG_GPU_KERNEL(gpu::multi_update),
                         nullptr};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& multi_sum_sq_op() {
  static const OpDef def{"multi_sum_sq", &multi_sum_sq_infer, &multi_sum_sq_cpu, NDG_GPU_KERNEL(gpu::multi_sum_sq),
                         nullptr};
  static const OpDef& reg = register_op(def);
  return reg;
}

}  // namespace mx::op

namespace mx::nd {

NDArray multi_sum_sq(const std::vector<NDArray>& arrays) {
  for (const NDArray& x : arrays) detail::check_not_none("multi_sum_sq", x);
  for (const NDArray& x : arrays) {
    if (x.context() != arrays[0].context()) check_same_context("multi_sum_sq", arrays[0], x);
  }
  return op::invoke1(op::multi_sum_sq_op(), std::vector<NDArray>(arrays));
}

// The invocation that every call runs, made once: inputs_ ends with the scalars (and the norms), which
// each call replaces.
struct MultiRuleUpdate::Lists {
  op::Invocation inv;
  std::size_t per_weight_inputs = 0;
};

MultiRuleUpdate::~MultiRuleUpdate() = default;
MultiRuleUpdate::MultiRuleUpdate(MultiRuleUpdate&&) noexcept = default;
MultiRuleUpdate& MultiRuleUpdate::operator=(MultiRuleUpdate&&) noexcept = default;

MultiRuleUpdate::MultiRuleUpdate(std::int32_t num_states, std::vector<NDArray>& weights,
                                 const std::vector<NDArray>& grads, std::vector<std::vector<NDArray>>& states,
                                 std::vector<NDArray>* masters)
    : lists_(std::make_unique<Lists>()), num_weights_(weights.size()), num_states_(num_states),
      master_(masters != nullptr) {
  std::vector<NDArray>& inputs_ = lists_->inv.inputs;
  std::vector<NDArray>& outputs_ = lists_->inv.outputs;
  const char* op = "_multi_update";
  const std::size_t n = weights.size();
  if (grads.size() != n || states.size() != n || (masters && masters->size() != n)) {
    throw ValueError(std::string(op) + ": " + std::to_string(n) + " weights, " + std::to_string(grads.size()) +
                     " gradients, " + std::to_string(states.size()) + " state lists" +
                     (masters ? ", " + std::to_string(masters->size()) + " float32 copies" : std::string()) +
                     "; every weight needs its own");
  }
  for (std::size_t i = 0; i < n; ++i) {
    detail::check_not_none(op, weights[i]);
    detail::check_floating(op, weights[i]);
    if (weights[i].context() != weights[0].context()) check_same_context(op, weights[0], weights[i]);
    if (static_cast<std::int32_t>(states[i].size()) != num_states) {
      throw ValueError(std::string(op) + ": weight " + std::to_string(i) + " has " + std::to_string(states[i].size()) +
                       " states; the rule keeps " + std::to_string(num_states));
    }
    const std::size_t first = inputs_.size();
    inputs_.push_back(weights[i]);
    inputs_.push_back(grads[i]);
    outputs_.push_back(weights[i]);
    for (NDArray& s : states[i]) {
      inputs_.push_back(s);
      outputs_.push_back(s);
    }
    if (masters) {
      inputs_.push_back((*masters)[i]);
      outputs_.push_back((*masters)[i]);
    }
    for (std::size_t k = first; k < inputs_.size(); ++k) detail::check_not_none(op, inputs_[k]);
    if (grads[i].context() != weights[i].context()) check_same_context(op, weights[i], grads[i]);
  }
  lists_->per_weight_inputs = inputs_.size();
  lists_->inv.op = &op::multi_update_op();
  if (n == 0) return;
  // The op's own checks (dtypes, shapes, writable outputs), once: a dry run of its shape inference.
  op::RuleParams p;
  p.num_weights = static_cast<std::int32_t>(n);
  p.num_states = num_states;
  p.master = master_ ? 1 : 0;
  lists_->inv.params = p;
  inputs_.push_back(empty(Shape{static_cast<std::int64_t>(n), 8}, weights[0].context(), DType::float64));
  std::vector<op::OutputSpec> specs;
  lists_->inv.op->infer(lists_->inv, specs);
  for (const NDArray& out : outputs_) detail::check_writable(op, out);
}

void MultiRuleUpdate::operator()(const op::RuleParams& params, const std::vector<op::TensorScalars>& scalars,
                                 const NDArray& norms) const {
  const char* op = "_multi_update";
  if (scalars.size() != num_weights_) {
    throw ValueError(std::string(op) + ": " + std::to_string(num_weights_) + " weights, " +
                     std::to_string(scalars.size()) + " scalar sets; every weight needs its own");
  }
  if (params.num_states != num_states_) {
    throw ValueError(std::string(op) + ": the rule keeps " + std::to_string(params.num_states) +
                     " states; the lists hold " + std::to_string(num_states_));
  }
  if (num_weights_ == 0) return;
  op::Invocation& inv = lists_->inv;
  const Context ctx = inv.inputs[0].context();
  if (!norms.is_none()) {
    if (norms.context() != ctx) check_same_context(op, inv.inputs[0], norms);
    if (norms.dtype() != DType::float32 || norms.shape() != Shape{static_cast<std::int64_t>(num_weights_), 2}) {
      throw ShapeError(std::string(op) + ": the per-weight norms " + describe(norms) + " must be (" +
                       std::to_string(num_weights_) + ", 2) float32");
    }
  }
  op::RuleParams p = params;
  p.num_weights = static_cast<std::int32_t>(num_weights_);
  p.master = master_ ? 1 : 0;
  p.norms = norms.is_none() ? 0 : 1;
  std::vector<double> table(num_weights_ * 8);
  for (std::size_t i = 0; i < num_weights_; ++i) {
    const op::TensorScalars& s = scalars[i];
    const double row[8] = {s.lr, s.wd, s.c0, s.c1, s.c2, s.c3, s.c4, s.unused};
    std::copy(row, row + 8, table.begin() + static_cast<std::ptrdiff_t>(i * 8));
  }
  inv.inputs.resize(lists_->per_weight_inputs);
  inv.inputs.push_back(array(table.data(), DType::float64, Shape{static_cast<std::int64_t>(num_weights_), 8}, ctx,
                             DType::float64));
  if (!norms.is_none()) inv.inputs.push_back(norms);
  inv.params = p;
  if (op::trace_sink() != nullptr) {  // being traced: the whole front end, which records it
    op::invoke_into(*inv.op, inv.inputs, inv.outputs, p);
    return;
  }
  // Checked when the lists were made: only the kernel.
  const profiler::Range range(op);
  op::run_kernel(inv);
}

void multi_rule_update(const op::RuleParams& params, std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
                       std::vector<std::vector<NDArray>>& states, std::vector<NDArray>* masters,
                       const std::vector<op::TensorScalars>& scalars, const NDArray& norms) {
  const MultiRuleUpdate lists(params.num_states, weights, grads, states, masters);
  lists(params, scalars, norms);
}

}  // namespace mx::nd
