// The optimizer family: sgd_update, sgd_mom_update and adam_update, each one fused in-place pass
// over a parameter (ndarray/ops/optimizer_kernels.hpp). Here: the front ends, inference, attributes
// and the CPU loops; the CUDA launches are in cuda/ops/optimizer.cu.
#include "ndarray/ops/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>

#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/optimizer_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;
using functors::OptimizerStep;
using Attrs = std::vector<std::pair<std::string, std::string>>;

// One output per updated array (weight and the states, each of weight's shape): the weight in its
// dtype, the states in the state dtype (float32 under multi_precision).
void update_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& weight = inv.inputs[0];
  nd::check_floating(inv.op->name, weight);
  out.assign(inv.inputs.size() - 1, {weight.shape(), state_dtype(inv.op, weight.dtype())});
  out[0].dtype = weight.dtype();
}

// inputs: per weight w, g, then the states (m, w32); outputs: per weight w and the states. Checks
// that the list is whole, of one weight dtype, and that each weight's operands have its shape.
void multi_update_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const char* op = inv.op->name;
  const std::size_t per_weight = update_layout(inv.op).per_weight();
  const std::size_t weights = static_cast<std::size_t>(inv.params.as<MultiStep>().num_weights);
  if (inv.inputs.size() != weights * per_weight) {
    throw ValueError(std::string(op) + ": " + std::to_string(weights) + " weights need " +
                     std::to_string(weights * per_weight) + " inputs, got " + std::to_string(inv.inputs.size()));
  }
  for (std::size_t i = 0; i < weights; ++i) {
    const NDArray& w = inv.inputs[i * per_weight];
    nd::check_floating(op, w);
    nd::check_same_dtype(op, inv.inputs[0], w);
    const DType states = state_dtype(inv.op, w.dtype());
    for (std::size_t j = 1; j < per_weight; ++j) {
      const NDArray& x = inv.inputs[i * per_weight + j];
      if (x.dtype() != (j == 1 ? w.dtype() : states)) {
        throw DTypeError(std::string(op) + ": " + nd::describe(x) + " of weight " + std::to_string(i) + " " +
                         nd::describe(w) + " must be " + dtype_name(j == 1 ? w.dtype() : states));
      }
      if (x.shape() != w.shape()) {
        throw ShapeError(std::string(op) + ": " + nd::describe(x) + " does not match weight " + std::to_string(i) +
                         " " + nd::describe(w));
      }
    }
    out.push_back({w.shape(), w.dtype()});
    for (std::size_t j = 2; j < per_weight; ++j) out.push_back({w.shape(), states});
  }
}

// --- CPU loops: the reference of each CUDA kernel ------------------------------------------------

// weight (and mom, for the momentum ops; the float32 master copy, for the mp_ ops) updated from
// grad. S is the states' type.
template <class T, class S>
void sgd_loop(const OptimizerStep& step, T* w, const T* g, S* m, S* master, std::int64_t n) {
  parallel_for(n, [&](std::int64_t i) { step.sgd(w[i], g[i], m ? m + i : nullptr, master ? master + i : nullptr); });
}

void sgd_cpu(const ExecContext&, const Invocation& inv) {
  const UpdateLayout layout = update_layout(inv.op);
  dispatch_update(inv, inv.outputs[0].dtype(), [&](auto weight_tag, auto state_tag) {
    using T = decltype(weight_tag);
    using S = decltype(state_tag);
    S* m = layout.momentum ? static_cast<S*>(inv.outputs[1].data()) : nullptr;
    S* master = layout.master ? static_cast<S*>(inv.outputs.back().data()) : nullptr;
    sgd_loop(inv.params.as<OptimizerStep>(), static_cast<T*>(inv.outputs[0].data()),
             static_cast<const T*>(inv.inputs[1].data()), m, master, inv.outputs[0].size());
  });
}

void multi_sgd_cpu(const ExecContext&, const Invocation& inv) {
  const functors::OptimizerStep& step = inv.params.as<MultiStep>().step;
  const UpdateLayout layout = update_layout(inv.op);
  const std::size_t per_weight = layout.per_weight(), outs = per_weight - 1;
  dispatch_update(inv, inv.inputs[0].dtype(), [&](auto weight_tag, auto state_tag) {
    using T = decltype(weight_tag);
    using S = decltype(state_tag);
    for (std::size_t i = 0; i < inv.inputs.size() / per_weight; ++i) {
      S* m = layout.momentum ? static_cast<S*>(inv.outputs[i * outs + 1].data()) : nullptr;
      S* master = layout.master ? static_cast<S*>(inv.outputs[i * outs + outs - 1].data()) : nullptr;
      sgd_loop(step, static_cast<T*>(inv.outputs[i * outs].data()),
               static_cast<const T*>(inv.inputs[i * per_weight + 1].data()), m, master, inv.inputs[i * per_weight].size());
    }
  });
}

void adam_cpu(const ExecContext&, const Invocation& inv) {
  const OptimizerStep& step = inv.params.as<OptimizerStep>();
  dispatch_update(inv, inv.outputs[0].dtype(), [&](auto weight_tag, auto state_tag) {
    using T = decltype(weight_tag);
    using S = decltype(state_tag);
    T* w = static_cast<T*>(inv.outputs[0].data());
    const T* g = static_cast<const T*>(inv.inputs[1].data());
    S* m = static_cast<S*>(inv.outputs[1].data());
    S* v = static_cast<S*>(inv.outputs[2].data());
    S* master = update_layout(inv.op).master ? static_cast<S*>(inv.outputs[3].data()) : nullptr;
    parallel_for(inv.outputs[0].size(), [&](std::int64_t i) { step.adam(w[i], g[i], m[i], v[i], master ? master + i : nullptr); });
  });
}

// multi_all_finite: inputs any floating arrays; output (1,) float32, 1 when every element is finite.
void all_finite_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  for (const NDArray& x : inv.inputs) nd::check_floating(inv.op->name, x);
  out = {{Shape{1}, DType::float32}};
}

void all_finite_cpu(const ExecContext&, const Invocation& inv) {
  bool finite = true;
  for (const NDArray& x : inv.inputs) {
    dispatch_floating(x.dtype(), inv.op->name, [&](auto tag) {
      using T = decltype(tag);
      const T* v = static_cast<const T*>(x.data());
      for (std::int64_t i = 0; i < x.size() && finite; ++i) finite = std::isfinite(static_cast<double>(v[i]));
    });
  }
  *static_cast<float*>(inv.outputs[0].data()) = finite ? 1.0f : 0.0f;
}

Attrs all_finite_attrs(const Params& params) {
  return {{"num_arrays", std::to_string(params.as<AllFiniteParams>().num_arrays)}, {"init_output", "True"}};
}

Params all_finite_parse(const Attrs& attrs) {
  AttrReader a("multi_all_finite", attrs);
  const std::int64_t n = a.integer("num_arrays", 1);
  if (!a.boolean("init_output", true)) a.fail("init_output", "must be True: the output is not read");
  a.finish();
  return AllFiniteParams{static_cast<std::int32_t>(n)};
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

template <bool momentum, bool mp = false>
Params sgd_parse(const Attrs& attrs) {
  AttrReader a(mp ? (momentum ? "mp_sgd_mom_update" : "mp_sgd_update") : (momentum ? "sgd_mom_update" : "sgd_update"),
               attrs);
  const OptimizerStep s = read_step(a, momentum);
  a.finish();
  return s;
}

template <bool mp = false>
Params adam_parse(const Attrs& attrs) {
  AttrReader a(mp ? "mp_adam_update" : "adam_update", attrs);
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

template <bool momentum, bool mp = false>
Params multi_sgd_parse(const Attrs& attrs) {
  AttrReader a(mp ? (momentum ? "multi_mp_sgd_mom_update" : "multi_mp_sgd_update")
                  : (momentum ? "multi_sgd_mom_update" : "multi_sgd_update"),
               attrs);
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
[[maybe_unused]] const bool optimizer_family_registered =
    (sgd_update_op(), sgd_mom_update_op(), adam_update_op(), multi_sgd_update_op(), multi_sgd_mom_update_op(),
     mp_sgd_update_op(), mp_sgd_mom_update_op(), mp_adam_update_op(), multi_mp_sgd_update_op(),
     multi_mp_sgd_mom_update_op(), multi_all_finite_op(), true);

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
                         &adam_attrs, &adam_parse<>};
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

const OpDef& mp_sgd_update_op() {
  static const OpDef def{"mp_sgd_update", &update_infer, &sgd_cpu, NDG_GPU_KERNEL(gpu::sgd_update), nullptr, &sgd_attrs,
                         &sgd_parse<false, true>};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& mp_sgd_mom_update_op() {
  static const OpDef def{"mp_sgd_mom_update", &update_infer, &sgd_cpu, NDG_GPU_KERNEL(gpu::sgd_update), nullptr,
                         &sgd_mom_attrs, &sgd_parse<true, true>};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& mp_adam_update_op() {
  static const OpDef def{"mp_adam_update", &update_infer, &adam_cpu, NDG_GPU_KERNEL(gpu::adam_update), nullptr,
                         &adam_attrs, &adam_parse<true>};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& multi_mp_sgd_update_op() {
  static const OpDef def{"multi_mp_sgd_update", &multi_update_infer, &multi_sgd_cpu,
                         NDG_GPU_KERNEL(gpu::multi_sgd_update), nullptr, &multi_sgd_attrs, &multi_sgd_parse<false, true>};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& multi_mp_sgd_mom_update_op() {
  static const OpDef def{"multi_mp_sgd_mom_update", &multi_update_infer, &multi_sgd_cpu,
                         NDG_GPU_KERNEL(gpu::multi_sgd_update), nullptr, &multi_sgd_attrs, &multi_sgd_parse<true, true>};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& multi_all_finite_op() {
  static const OpDef def{"multi_all_finite", &all_finite_infer, &all_finite_cpu, NDG_GPU_KERNEL(gpu::all_finite),
                         nullptr, &all_finite_attrs, &all_finite_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

UpdateLayout update_layout(const OpDef* op) {
  const std::string_view name = op->name;
  const bool master = name.starts_with("mp_") || name.starts_with("multi_mp_");
  return {name.find("mom") != std::string_view::npos, master};
}

DType state_dtype(const OpDef* op, DType weight) { return update_layout(op).master ? DType::float32 : weight; }

}  // namespace mx::op

namespace mx::nd {
namespace {

// Throws unless `operand` (grad or a state) can be updated alongside weight: weight's context and
// shape, and weight's dtype (or `dtype`: float32 for the states of the mp_ ops).
void check_operand(const char* op, const char* role, const NDArray& weight, const NDArray& operand,
                   std::optional<DType> dtype = {}) {
  detail::check_not_none(op, operand);
  if (operand.context() != weight.context()) {
    throw ContextMismatch(std::string(op) + ": " + role + " " + detail::describe(operand) + " is not on weight " +
                          detail::describe(weight) + "'s context. Move it first with copyto(" +
                          weight.context().str() + ") or as_in_context(" + weight.context().str() + ")");
  }
  if (dtype && operand.dtype() != *dtype) {
    throw DTypeError(std::string(op) + ": " + role + " " + detail::describe(operand) + " of weight " +
                     detail::describe(weight) + " must be " + dtype_name(*dtype) + "; convert with astype(...)");
  }
  if (!dtype && operand.dtype() != weight.dtype()) {
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
void multi_sgd(const op::OpDef& def, std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
               std::vector<NDArray>* moms, std::vector<NDArray>* masters, functors::OptimizerStep step) {
  const char* op = def.name;
  if (grads.size() != weights.size() || (moms && moms->size() != weights.size()) ||
      (masters && masters->size() != weights.size())) {
    throw ValueError(std::string(op) + ": " + std::to_string(weights.size()) + " weights, " +
                     std::to_string(grads.size()) + " gradients" +
                     (moms ? ", " + std::to_string(moms->size()) + " momenta" : std::string()) +
                     (masters ? ", " + std::to_string(masters->size()) + " float32 copies" : std::string()) +
                     "; every weight needs its own");
  }
  const std::optional<DType> state = masters ? std::optional<DType>(DType::float32) : std::nullopt;
  if (weights.empty()) return;
  std::vector<NDArray> inputs, outputs;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    check_weight(op, weights[i]);
    check_operand(op, "grad", weights[i], grads[i]);
    if (moms) check_operand(op, "mom", weights[i], (*moms)[i], state);
    if (masters) check_operand(op, "weight32", weights[i], (*masters)[i], DType::float32);
    if (weights[i].context() != weights[0].context()) check_same_context(op, weights[0], weights[i]);
    inputs.push_back(weights[i]);
    inputs.push_back(grads[i]);
    outputs.push_back(weights[i]);
    for (std::vector<NDArray>* states : {moms, masters}) {
      if (!states) continue;
      inputs.push_back((*states)[i]);
      outputs.push_back((*states)[i]);
    }
  }
  const op::MultiStep params{step, static_cast<std::int32_t>(weights.size())};
  op::invoke_into(def, std::move(inputs), std::move(outputs), params);
}

}  // namespace

void multi_sgd_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads, double lr, double wd,
                      double rescale_grad, double clip_gradient) {
  multi_sgd(op::multi_sgd_update_op(), weights, grads, nullptr, nullptr, common_step(lr, wd, rescale_grad, clip_gradient));
}

void multi_sgd_mom_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads, std::vector<NDArray>& moms,
                          double lr, double momentum, double wd, double rescale_grad, double clip_gradient) {
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.momentum = momentum;
  multi_sgd(op::multi_sgd_mom_update_op(), weights, grads, &moms, nullptr, step);
}

void multi_mp_sgd_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
                         std::vector<NDArray>& weights32, double lr, double wd, double rescale_grad,
                         double clip_gradient) {
  multi_sgd(op::multi_mp_sgd_update_op(), weights, grads, nullptr, &weights32,
            common_step(lr, wd, rescale_grad, clip_gradient));
}

void multi_mp_sgd_mom_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
                             std::vector<NDArray>& moms, std::vector<NDArray>& weights32, double lr, double momentum,
                             double wd, double rescale_grad, double clip_gradient) {
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.momentum = momentum;
  multi_sgd(op::multi_mp_sgd_mom_update_op(), weights, grads, &moms, &weights32, step);
}

void mp_sgd_update(NDArray& weight, const NDArray& grad, NDArray& weight32, double lr, double wd, double rescale_grad,
                   double clip_gradient) {
  const char* op = "mp_sgd_update";
  check_weight(op, weight);
  check_operand(op, "grad", weight, grad);
  check_operand(op, "weight32", weight, weight32, DType::float32);
  op::invoke_into(op::mp_sgd_update_op(), {weight, grad, weight32}, {weight, weight32},
                  common_step(lr, wd, rescale_grad, clip_gradient));
}

void mp_sgd_mom_update(NDArray& weight, const NDArray& grad, NDArray& mom, NDArray& weight32, double lr,
                       double momentum, double wd, double rescale_grad, double clip_gradient) {
  const char* op = "mp_sgd_mom_update";
  check_weight(op, weight);
  check_operand(op, "grad", weight, grad);
  check_operand(op, "mom", weight, mom, DType::float32);
  check_operand(op, "weight32", weight, weight32, DType::float32);
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.momentum = momentum;
  op::invoke_into(op::mp_sgd_mom_update_op(), {weight, grad, mom, weight32}, {weight, mom, weight32}, step);
}

NDArray multi_all_finite(const std::vector<NDArray>& arrays) {
  const char* op = "multi_all_finite";
  if (arrays.empty()) throw ValueError(std::string(op) + ": needs at least one array");
  for (const NDArray& x : arrays) {
    detail::check_not_none(op, x);
    detail::check_floating(op, x);
    if (x.context() != arrays[0].context()) check_same_context(op, arrays[0], x);
  }
  return op::invoke1(op::multi_all_finite_op(), arrays, op::AllFiniteParams{static_cast<std::int32_t>(arrays.size())});
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

void mp_adam_update(NDArray& weight, const NDArray& grad, NDArray& mean, NDArray& var, NDArray& weight32, double lr,
                    double beta1, double beta2, double epsilon, double wd, double rescale_grad, double clip_gradient) {
  const char* op = "mp_adam_update";
  check_weight(op, weight);
  check_operand(op, "grad", weight, grad);
  check_operand(op, "mean", weight, mean, DType::float32);
  check_operand(op, "var", weight, var, DType::float32);
  check_operand(op, "weight32", weight, weight32, DType::float32);
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.beta1 = beta1;
  step.beta2 = beta2;
  step.epsilon = epsilon;
  op::invoke_into(op::mp_adam_update_op(), {weight, grad, mean, var, weight32}, {weight, mean, var, weight32}, step);
}

}  // namespace mx::nd
