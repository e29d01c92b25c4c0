// The optimizer family: sgd_update, sgd_mom_update and adam_update, each one fused in-place pass
// over a parameter (ndarray/ops/optimizer_kernels.hpp). Here: the front ends, inference, attributes
// and the CPU loops; the CUDA launches are in cuda/ops/optimizer.cu.
#include "ndarray/optimizer_ops.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include "ndarray/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/optimizer_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;
using functors::OptimizerStep;
using Attrs = std::vector<std::pair<std::string, std::string>>;

// One output per updated array (weight and the states), each of weight's shape and dtype.
void update_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& weight = inv.inputs[0];
  nd::check_floating(inv.op->name, weight);
  out.assign(inv.inputs.size() - 1, {weight.shape(), weight.dtype()});
}

// inputs: per weight w, g (and m); outputs: per weight w (and m). Checks that the list is whole and
// of one dtype, and that each weight's operands have its shape.
void multi_update_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = inv.op->name;
  const std::size_t per_weight = inv.op == &multi_sgd_mom_update_op() ? 3 : 2;
  const std::size_t weights = static_cast<std::size_t>(inv.params.as<MultiStep>().num_weights);
  if (inv.inputs.size() != weights * per_weight) {
    throw ValueError(std::string(op) + ": " + std::to_string(weights) + " weights need " +
                     std::to_string(weights * per_weight) + " inputs, got " + std::to_string(inv.inputs.size()));
  }
  for (std::size_t i = 0; i < weights; ++i) {
    const NDArray& w = inv.inputs[i * per_weight];
    nd::check_floating(op, w);
    nd::check_same_dtype(op, inv.inputs[0], w);
    for (std::size_t j = 1; j < per_weight; ++j) {
      const NDArray& x = inv.inputs[i * per_weight + j];
      nd::check_same_dtype(op, w, x);
      if (x.shape() != w.shape()) {
        throw ShapeError(std::string(op) + ": " + nd::describe(x) + " does not match weight " + std::to_string(i) +
                         " " + nd::describe(w));
      }
    }
    out.push_back({w.shape(), w.dtype()});
    if (per_weight == 3) out.push_back({w.shape(), w.dtype()});
  }
}

// --- CPU loops: the reference of each CUDA kernel ------------------------------------------------

// weight (and mom, for sgd_mom_update) updated from grad.
void sgd_cpu(const ExecContext&, const Invocation& inv) {
  const OptimizerStep& step = inv.params.as<OptimizerStep>();
  dispatch_floating(inv.outputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    T* w = static_cast<T*>(inv.outputs[0].data());
    const T* g = static_cast<const T*>(inv.inputs[1].data());
    T* m = inv.outputs.size() > 1 ? static_cast<T*>(inv.outputs[1].data()) : nullptr;
    const std::int64_t n = inv.outputs[0].size();
    parallel_for(n, [&](std::int64_t i) { step.sgd(w[i], g[i], m ? m + i : nullptr); });
  });
}

void multi_sgd_cpu(const ExecContext&, const Invocation& inv) {
  const functors::OptimizerStep& step = inv.params.as<MultiStep>().step;
  const std::size_t per_weight = inv.inputs.size() / static_cast<std::size_t>(inv.params.as<MultiStep>().num_weights);
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < inv.inputs.size() / per_weight; ++i) {
      T* w = static_cast<T*>(inv.outputs[i * (per_weight - 1)].data());
      const T* g = static_cast<const T*>(inv.inputs[i * per_weight + 1].data());
      T* m = per_weight == 3 ? static_cast<T*>(inv.outputs[i * 2 + 1].data()) : nullptr;
      parallel_for(inv.inputs[i * per_weight].size(), [&](std::int64_t j) { step.sgd(w[j], g[j], m ? m + j : nullptr); });
    }
  });
}

void adam_cpu(const ExecContext&, const Invocation& inv) {
  const OptimizerStep& step = inv.params.as<OptimizerStep>();
  dispatch_floating(inv.outputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    T* w = static_cast<T*>(inv.outputs[0].data());
    const T* g = static_cast<const T*>(inv.inputs[1].data());
    T* m = static_cast<T*>(inv.outputs[1].data());
    T* v = static_cast<T*>(inv.outputs[2].data());
    const std::int64_t n = inv.outputs[0].size();
    parallel_for(n, [&](std::int64_t i) { step.adam(w[i], g[i], m[i], v[i]); });
  });
}

// --- attributes, as MXNet names them ---------------------------------------------------------------

Attrs sgd_attrs(const Params& params) {
  const auto& s = params.as<OptimizerStep>();
  return {{"lr", format_real(s.lr)},
          {"wd", format_real(s.wd)},
          {"rescale_grad", format_real(s.rescale)},
          {"clip_gradient", format_real(s.clip)}};
}

Attrs sgd_mom_attrs(const Params& params) {
  Attrs attrs = sgd_attrs(params);
  attrs.emplace_back("momentum", format_real(params.as<OptimizerStep>().momentum));
  return attrs;
}

Attrs adam_attrs(const Params& params) {
  const auto& s = params.as<OptimizerStep>();
  Attrs attrs = sgd_attrs(params);
  attrs.emplace_back("beta1", format_real(s.beta1));
  attrs.emplace_back("beta2", format_real(s.beta2));
  attrs.emplace_back("epsilon", format_real(s.epsilon));
  return attrs;
}

// MXNet writes a tuple of per-weight rates; the list shares one.
Attrs multi_sgd_attrs(const Params& params) {
  const MultiStep& m = params.as<MultiStep>();
  const auto tuple = [&](double v) {
    std::string t = "(";
    for (std::int32_t i = 0; i < m.num_weights; ++i) t += (i ? ", " : "") + format_real(v);
    return t + (m.num_weights == 1 ? ",)" : ")");
  };
  Attrs attrs = {{"lrs", tuple(m.step.lr)}, {"wds", tuple(m.step.wd)},
                 {"rescale_grad", format_real(m.step.rescale)}, {"clip_gradient", format_real(m.step.clip)},
                 {"num_weights", std::to_string(m.num_weights)}};
  if (params.as<MultiStep>().step.momentum != 0) attrs.emplace_back("momentum", format_real(m.step.momentum));
  return attrs;
}

// --- the attributes parsed: MXNet's names and defaults -------------------------------------------

// What sgd_update, sgd_mom_update and adam_update share (and momentum where the update has it).
// lazy_update only changes updates of sparse gradients, which ndgluon does not have: ignored.
OptimizerStep read_step(AttrReader& a, bool momentum) {
  OptimizerStep s;
  s.lr = a.real("lr");
  s.wd = a.real("wd", 0.0);
  s.rescale = a.real("rescale_grad", 1.0);
  s.clip = a.real("clip_gradient", -1.0);
  if (momentum) s.momentum = a.real("momentum", 0.0);
  a.ignore({"lazy_update"});
  return s;
}

template <bool momentum>
Params sgd_parse(const Attrs& attrs) {
  AttrReader a(momentum ? "sgd_mom_update" : "sgd_update", attrs);
  const OptimizerStep s = read_step(a, momentum);
  a.finish();
  return s;
}

Params adam_parse(const Attrs& attrs) {
  AttrReader a("adam_update", attrs);
  OptimizerStep s = read_step(a, false);
  s.beta1 = a.real("beta1", 0.9);
  s.beta2 = a.real("beta2", 0.999);
  s.epsilon = a.real("epsilon", 1e-8);
  a.finish();
  return s;
}

// MXNet's per-weight rates (lrs, wds): one value per weight, all equal, since the list shares one.
double shared_rate(AttrReader& a, const char* name, std::int32_t weights) {
  const std::vector<double> v = a.real_tuple(name);
  if (v.size() != static_cast<std::size_t>(weights)) {
    a.fail(name, "must have one value per weight (num_weights " + std::to_string(weights) + ")");
  }
  if (std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) != v.end()) {
    a.fail(name, "is not supported: ndgluon's multi-tensor update shares one value across the list");
  }
  return v[0];
}

template <bool momentum>
Params multi_sgd_parse(const Attrs& attrs) {
  AttrReader a(momentum ? "multi_sgd_mom_update" : "multi_sgd_update", attrs);
  MultiStep m;
  const std::int64_t weights = a.integer("num_weights", 1);
  if (weights < 1 || weights > std::numeric_limits<std::int32_t>::max()) a.fail("num_weights", "must be positive");
  m.num_weights = static_cast<std::int32_t>(weights);
  m.step.lr = shared_rate(a, "lrs", m.num_weights);
  m.step.wd = shared_rate(a, "wds", m.num_weights);
  m.step.rescale = a.real("rescale_grad", 1.0);
  m.step.clip = a.real("clip_gradient", -1.0);
  if (momentum) m.step.momentum = a.real("momentum", 0.0);
  a.finish();
  return m;
}

// Every op of the family is in the registry from the start (find_op, graph import).
[[maybe_unused]] const bool family_registered =
    (sgd_update_op(), sgd_mom_update_op(), adam_update_op(), multi_sgd_update_op(), multi_sgd_mom_update_op(), true);

}  // namespace

const OpDef& sgd_update_op() {
  static const OpDef def{"sgd_update", &update_infer, &sgd_cpu, NDG_GPU_KERNEL(gpu::sgd_update), nullptr, &sgd_attrs,
                         &sgd_parse<false>};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& sgd_mom_update_op() {
  static const OpDef def{"sgd_mom_update", &update_infer, &sgd_cpu, NDG_GPU_KERNEL(gpu::sgd_update), nullptr,
                         &sgd_mom_attrs, &sgd_parse<true>};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& adam_update_op() {
  static const OpDef def{"adam_update", &update_infer, &adam_cpu, NDG_GPU_KERNEL(gpu::adam_update), nullptr,
                         &adam_attrs, &adam_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& multi_sgd_update_op() {
  static const OpDef def{"multi_sgd_update", &multi_update_infer, &multi_sgd_cpu,
                         NDG_GPU_KERNEL(gpu::multi_sgd_update), nullptr, &multi_sgd_attrs, &multi_sgd_parse<false>};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& multi_sgd_mom_update_op() {
  static const OpDef def{"multi_sgd_mom_update", &multi_update_infer, &multi_sgd_cpu,
                         NDG_GPU_KERNEL(gpu::multi_sgd_update), nullptr, &multi_sgd_attrs, &multi_sgd_parse<true>};
  static const OpDef& reg = register_op(def);
  return reg;
}

}  // namespace mx::op

namespace mx::nd {
namespace {

// Throws unless `operand` (grad or a state) can be updated alongside weight.
void check_operand(const char* op, const char* role, const NDArray& weight, const NDArray& operand) {
  detail::check_not_none(op, operand);
  if (operand.context() != weight.context()) {
    throw ContextMismatch(std::string(op) + ": " + role + " " + detail::describe(operand) + " is not on weight " +
                          detail::describe(weight) + "'s context. Move it first with copyto(" +
                          weight.context().str() + ") or as_in_context(" + weight.context().str() + ")");
  }
  if (operand.dtype() != weight.dtype()) {
    throw DTypeError(std::string(op) + ": " + role + " " + detail::describe(operand) +
                     " does not have the dtype of weight " + detail::describe(weight) + "; convert with astype(...)");
  }
  if (operand.shape() != weight.shape()) {
    throw ShapeError(std::string(op) + ": " + role + " " + detail::describe(operand) + " does not match weight " +
                     detail::describe(weight));
  }
}

void check_weight(const char* op, const NDArray& weight) {
  detail::check_not_none(op, weight);
  detail::check_floating(op, weight);
}

functors::OptimizerStep common_step(double lr, double wd, double rescale_grad, double clip_gradient) {
  functors::OptimizerStep step;
  step.lr = lr;
  step.wd = wd;
  step.rescale = rescale_grad;
  step.clip = clip_gradient;
  return step;
}

}  // namespace

void sgd_update(NDArray& weight, const NDArray& grad, double lr, double wd, double rescale_grad, double clip_gradient) {
  const char* op = "sgd_update";
  check_weight(op, weight);
  check_operand(op, "grad", weight, grad);
  op::invoke_into(op::sgd_update_op(), {weight, grad}, {weight}, common_step(lr, wd, rescale_grad, clip_gradient));
}

void sgd_mom_update(NDArray& weight, const NDArray& grad, NDArray& mom, double lr, double momentum, double wd,
                    double rescale_grad, double clip_gradient) {
  const char* op = "sgd_mom_update";
  check_weight(op, weight);
  check_operand(op, "grad", weight, grad);
  check_operand(op, "mom", weight, mom);
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.momentum = momentum;
  op::invoke_into(op::sgd_mom_update_op(), {weight, grad, mom}, {weight, mom}, step);
}

namespace {

// weights[i] (and moms[i]) updated from grads[i], one launch per list. Everything is checked
// before anything changes.
void multi_sgd(const char* op, std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
               std::vector<NDArray>* moms, functors::OptimizerStep step) {
  if (grads.size() != weights.size() || (moms && moms->size() != weights.size())) {
    throw ValueError(std::string(op) + ": " + std::to_string(weights.size()) + " weights, " +
                     std::to_string(grads.size()) + " gradients" +
                     (moms ? " and " + std::to_string(moms->size()) + " momenta" : std::string()) +
                     "; every weight needs its own");
  }
  if (weights.empty()) return;
  std::vector<NDArray> inputs, outputs;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    check_weight(op, weights[i]);
    check_operand(op, "grad", weights[i], grads[i]);
    if (moms) check_operand(op, "mom", weights[i], (*moms)[i]);
    if (weights[i].context() != weights[0].context()) check_same_context(op, weights[0], weights[i]);
    inputs.push_back(weights[i]);
    inputs.push_back(grads[i]);
    outputs.push_back(weights[i]);
    if (moms) {
      inputs.push_back((*moms)[i]);
      outputs.push_back((*moms)[i]);
    }
  }
  const op::MultiStep params{step, static_cast<std::int32_t>(weights.size())};
  op::invoke_into(moms ? op::multi_sgd_mom_update_op() : op::multi_sgd_update_op(), std::move(inputs),
                  std::move(outputs), params);
}

}  // namespace

void multi_sgd_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads, double lr, double wd,
                      double rescale_grad, double clip_gradient) {
  multi_sgd("multi_sgd_update", weights, grads, nullptr, common_step(lr, wd, rescale_grad, clip_gradient));
}

void multi_sgd_mom_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads, std::vector<NDArray>& moms,
                          double lr, double momentum, double wd, double rescale_grad, double clip_gradient) {
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.momentum = momentum;
  multi_sgd("multi_sgd_mom_update", weights, grads, &moms, step);
}

void adam_update(NDArray& weight, const NDArray& grad, NDArray& mean, NDArray& var, double lr, double beta1,
                 double beta2, double epsilon, double wd, double rescale_grad, double clip_gradient) {
  const char* op = "adam_update";
  check_weight(op, weight);
  check_operand(op, "grad", weight, grad);
  check_operand(op, "mean", weight, mean);
  check_operand(op, "var", weight, var);
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.beta1 = beta1;
  step.beta2 = beta2;
  step.epsilon = epsilon;
  op::invoke_into(op::adam_update_op(), {weight, grad, mean, var}, {weight, mean, var}, step);
}

}  // namespace mx::nd
