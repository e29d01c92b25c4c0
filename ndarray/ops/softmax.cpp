// The softmax family: softmax and log_softmax along an axis, each one fused pass (max, sum of
// exponentials, result) instead of five elementwise and reduction ops, and their gradients
// _backward_softmax and _backward_log_softmax, one fused pass each (sum along the line, result)
// instead of four ops. Here: the front ends, inference, gradients and the CPU loops; the CUDA
// launches are in cuda/ops/softmax.cu.
#include "ndarray/softmax.hpp"

#include <cmath>

#include "ndarray/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce_kernels.hpp"
#include "ndarray/ops/softmax_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;


// The CPU reference: each (outer, inner) line of `length` elements, max-shifted so that exp
// cannot overflow.
template <class T>
void softmax_cpu_loop(const T* x, T* y, ReduceShape s, bool log) {
  const std::int64_t lines = s.outer * s.inner;
  parallel_for(lines, [&](std::int64_t line) {
    const std::int64_t o = line / s.inner, i = line % s.inner;
    const T* in = x + o * s.length * s.inner + i;
    T* out = y + o * s.length * s.inner + i;
    T max = in[0];
    for (std::int64_t k = 1; k < s.length; ++k) max = in[k * s.inner] > max ? in[k * s.inner] : max;
    T sum = 0;
    for (std::int64_t k = 0; k < s.length; ++k) sum += std::exp(in[k * s.inner] - max);
    const T log_sum = std::log(sum);
    for (std::int64_t k = 0; k < s.length; ++k) {
      const T shifted = in[k * s.inner] - max;
      out[k * s.inner] = log ? shifted - log_sum : std::exp(shifted) / sum;
    }
  }, lines * s.length);
}

void softmax_cpu(const ExecContext&, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const ReduceShape s = softmax_shape(inv);
  if (s.length == 0 || inv.outputs[0].size() == 0) return;
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    softmax_cpu_loop(static_cast<const T*>(inv.inputs[0].data()), static_cast<T*>(inv.outputs[0].data()), s, p.log);
  });
}

void softmax_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  nd::check_floating(inv.op->name, x);
  normalize_axis(inv.op->name, inv.params.as<SoftmaxParams>().axis, x.shape());
  out = {{x.shape(), x.dtype()}};
}

// The backward ops' CPU reference: per (outer, inner) line, the sum of the terms, then dx.
template <class T>
void softmax_backward_cpu_loop(const T* g, const T* y, T* dx, ReduceShape s, bool log) {
  const std::int64_t lines = s.outer * s.inner;
  parallel_for(lines, [&](std::int64_t line) { softmax_backward_line(g, y, dx, s, line, log); },
               lines * s.length);
}

void softmax_backward_cpu(const ExecContext&, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const ReduceShape s = softmax_shape(inv);
  if (inv.outputs[0].size() == 0) return;
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_cpu_loop(static_cast<const T*>(inv.inputs[0].data()), static_cast<const T*>(inv.inputs[1].data()),
                              static_cast<T*>(inv.outputs[0].data()), s, p.log);
  });
}

// _backward_softmax / _backward_log_softmax: inputs (g, y), output dx of y's shape and dtype.
void softmax_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &g = inv.inputs[0], &y = inv.inputs[1];
  nd::check_floating(inv.op->name, y);
  nd::check_same_dtype(inv.op->name, g, y);
  if (g.shape() != y.shape()) {
    throw ShapeError(std::string(inv.op->name) + ": output gradient " + nd::describe(g) + " does not match output " +
                     nd::describe(y));
  }
  normalize_axis(inv.op->name, inv.params.as<SoftmaxParams>().axis, y.shape());
  out = {{y.shape(), y.dtype()}};
}

std::vector<std::pair<std::string, std::string>> softmax_attrs(const Params& params) {
  return {{"axis", std::to_string(params.as<SoftmaxParams>().axis)}};
}

// MXNet's attributes (also its backward ops'). temperature other than 1, use_length (a length
// input) and dtype (a result of another dtype than the input's) are refused.
template <bool log>
Params softmax_parse(const AttrList& attrs) {
  AttrReader a(log ? "log_softmax" : "softmax", attrs);
  const int axis = a.axis("axis", -1);
  if (a.real("temperature", 1.0) != 1.0) a.fail("temperature", "is not supported: ndgluon divides by 1");
  if (a.boolean("use_length", false)) a.fail("use_length", "is not supported: the op takes no length input");
  if (!a.text("dtype", "").empty()) a.fail("dtype", "is not supported: the result has the input's dtype");
  a.finish();
  return SoftmaxParams{axis, log};
}

const OpDef& softmax_backward_def() {
  static const OpDef def{"_backward_softmax", &softmax_backward_infer, &softmax_backward_cpu,
                         NDG_GPU_KERNEL(gpu::softmax_backward), nullptr, &softmax_attrs, &softmax_parse<false>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& log_softmax_backward_def() {
  static const OpDef def{"_backward_log_softmax", &softmax_backward_infer, &softmax_backward_cpu,
                         NDG_GPU_KERNEL(gpu::softmax_backward), nullptr, &softmax_attrs, &softmax_parse<true>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// One backward op on the recorded output: dx = g - exp(y) * sum(g) (log_softmax), y * (g - sum(g * y))
// (softmax), sums along the axis.
std::vector<NDArray> softmax_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const auto& p = inv.params.as<SoftmaxParams>();
  return {invoke1(p.log ? log_softmax_backward_def() : softmax_backward_def(), {g[0], inv.outputs[0]}, p)};
}

const OpDef& softmax_def() {
  static const OpDef def{"softmax", &softmax_infer, &softmax_cpu, NDG_GPU_KERNEL(gpu::softmax), &softmax_gradient,
                         &softmax_attrs, &softmax_parse<false>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& log_softmax_def() {
  static const OpDef def{"log_softmax", &softmax_infer, &softmax_cpu, NDG_GPU_KERNEL(gpu::softmax),
                         &softmax_gradient, &softmax_attrs, &softmax_parse<true>};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool family_registered =
    (softmax_def(), log_softmax_def(), softmax_backward_def(), log_softmax_backward_def(), true);

}  // namespace

ReduceShape softmax_shape(const Invocation& inv) {
  const Shape& shape = inv.inputs[0].shape();
  return around_axis(shape, normalize_axis(inv.op->name, inv.params.as<SoftmaxParams>().axis, shape));
}

}  // namespace mx::op

namespace mx::nd {

NDArray softmax(const NDArray& x, int axis) {
  check_not_none("softmax", x);
  return op::invoke1(op::softmax_def(), {x}, op::SoftmaxParams{axis, false});
}

NDArray log_softmax(const NDArray& x, int axis) {
  check_not_none("log_softmax", x);
  return op::invoke1(op::log_softmax_def(), {x}, op::SoftmaxParams{axis, true});
}

}  // namespace mx::nd
