// The reduction family: sum, max, min, argmax, argmin over every element or along one axis, and
// mean and norm built on them. Here: the front ends, inference, gradients and the CPU loops; the
// CUDA launches are in cuda/ops/reduce.cu. Float sums accumulate in double on the CPU (more exact
// than the GPU's tree, which makes the CPU a good reference) and integer sums in int64.
#include "ndarray/ops/reduce.hpp"

#include <array>
#include <type_traits>
#include <vector>

#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/functors.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

// --- CPU loops ------------------------------------------------------------------------------------

template <class T>
using CpuSumType = std::conditional_t<mx::is_float_v<T>, double, std::int64_t>;

template <class T>
void sum_loop(const T* in, T* out, ReduceShape s) {
  parallel_for(s.outer, [&](std::int64_t o) {
    std::vector<CpuSumType<T>> acc(static_cast<std::size_t>(s.inner), 0);
    for (std::int64_t k = 0; k < s.length; ++k) {
      const T* row = in + (o * s.length + k) * s.inner;
      for (std::int64_t i = 0; i < s.inner; ++i) acc[static_cast<std::size_t>(i)] += row[i];
    }
    for (std::int64_t i = 0; i < s.inner; ++i) out[o * s.inner + i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
  }, s.outer > 1 ? s.outer * s.length * s.inner : 0);
}

// A full sum: one long row split across threads.
template <class T>
void sum_all_loop(const T* in, T* out, std::int64_t n) {
  CpuSumType<T> total = 0;
  const int threads = threads_for(n);
  if (threads == 1) {
    for (std::int64_t i = 0; i < n; ++i) total += in[i];
  } else {
#pragma omp parallel for reduction(+ : total) schedule(static) num_threads(threads)
    for (std::int64_t i = 0; i < n; ++i) total += in[i];
  }
  *out = static_cast<T>(total);
}

// max/min and their positions; ties keep the first position, NaN wins (functors::Compare).
template <ReduceOp op, class T, class Out>
void select_loop(const T* in, Out* out, ReduceShape s) {
  const std::int64_t outputs = s.outer * s.inner;
  parallel_for(outputs, [&](std::int64_t j) {
    const std::int64_t o = j / s.inner, i = j % s.inner;
    const T* base = in + o * s.length * s.inner + i;
    T best = base[0];
    std::int64_t best_k = 0;
    for (std::int64_t k = 1; k < s.length; ++k) {
      const T v = base[k * s.inner];
      if (functors::Compare<op>::better(v, best)) {
        best = v;
        best_k = k;
      }
    }
    if constexpr (functors::is_arg_reduce(op)) out[j] = static_cast<Out>(best_k);
    else out[j] = static_cast<Out>(best);
  }, outputs > 1 ? outputs * s.length : 0);
}

void reduce_cpu(const ExecContext&, const Invocation& inv) {
  const ReduceShape s = reduce_shape(inv);
  void* out = inv.outputs[0].data();
  dispatch_dtype(inv.inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(inv.inputs[0].data());
    switch (inv.params.as<ReduceParams>().op) {
      case ReduceOp::sum:
        if (s.outer == 1 && s.inner == 1) sum_all_loop(in, static_cast<T*>(out), s.length);
        else sum_loop(in, static_cast<T*>(out), s);
        return;
      case ReduceOp::max: return select_loop<ReduceOp::max>(in, static_cast<T*>(out), s);
      case ReduceOp::min: return select_loop<ReduceOp::min>(in, static_cast<T*>(out), s);
      case ReduceOp::argmax: return select_loop<ReduceOp::argmax>(in, static_cast<float*>(out), s);
      case ReduceOp::argmin: return select_loop<ReduceOp::argmin>(in, static_cast<float*>(out), s);
      case ReduceOp::count: break;
    }
  });
}

// --- inference, gradient, attributes ----------------------------------------------------------------

std::optional<int> axis_of(const ReduceParams& p) { return p.has_axis ? std::optional<int>(p.axis) : std::nullopt; }

void reduce_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<ReduceParams>();
  const NDArray& x = inv.inputs[0];
  const char* name = inv.op->name;
  std::vector<std::int64_t> dims;
  if (!p.has_axis) {
    dims.assign(p.keepdims ? static_cast<std::size_t>(std::max(x.ndim(), 1)) : 1, 1);
  } else {
    const int a = normalize_axis(name, p.axis, x.shape());
    for (int d = 0; d < x.ndim(); ++d) {
      if (d != a) dims.push_back(x.shape()[d]);
      else if (p.keepdims) dims.push_back(1);
    }
    if (dims.empty()) dims.push_back(1);  // MXNet 1.x has no 0-d arrays
  }
  if (p.op != ReduceOp::sum && reduce_shape(inv).length == 0) {
    throw ShapeError(std::string(name) + ": zero-size reduction on " + nd::describe(x) +
                     (p.has_axis ? " along axis " + std::to_string(p.axis) : std::string()) + " has no identity");
  }
  out = {{Shape(dims), functors::is_arg_reduce(p.op) ? DType::float32 : x.dtype()}};
}

// The reduced result (or its gradient) reshaped so that it broadcasts against the input.
NDArray expand_reduced(const NDArray& r, const Shape& input, std::optional<int> axis) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(input.ndim()), 1);
  if (axis) {
    const int a = normalize_axis("reduce", *axis, input);
    for (int d = 0; d < input.ndim(); ++d) dims[static_cast<std::size_t>(d)] = d == a ? 1 : input[d];
  }
  return r.reshape(Shape(dims));
}

// sum: the gradient spread over the reduced elements; max/min: to every element equal to the
// extreme.
std::vector<NDArray> reduce_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const auto& p = inv.params.as<ReduceParams>();
  const NDArray& x = inv.inputs[0];
  const NDArray spread = nd::broadcast_to(expand_reduced(g[0], x.shape(), axis_of(p)), x.shape());
  if (p.op == ReduceOp::sum) return {spread};
  return {spread * (x == expand_reduced(inv.outputs[0], x.shape(), axis_of(p)))};
}

std::vector<std::pair<std::string, std::string>> reduce_attrs(const Params& params) {
  const auto& p = params.as<ReduceParams>();
  std::vector<std::pair<std::string, std::string>> attrs;
  if (p.has_axis) attrs.emplace_back("axis", std::to_string(p.axis));
  attrs.emplace_back("keepdims", format_bool(p.keepdims));
  return attrs;
}

// MXNet's attributes: axis a tuple (sum, max, min) or an integer (argmax, argmin), absent, "None"
// or "()" for every element. Several axes and exclude are refused: ndgluon reduces one axis or all.
template <ReduceOp op>
Params reduce_parse(const AttrList& attrs) {
  AttrReader a(op_name(op), attrs);
  const std::vector<std::int64_t> axes = a.tuple("axis", {});
  if (axes.size() > 1) a.fail("axis", "is not supported: ndgluon reduces along one axis or all of them");
  if (!axes.empty() && axes[0] != static_cast<int>(axes[0])) a.fail("axis", "is out of range");
  if (a.boolean("exclude", false)) a.fail("exclude", "is not supported");
  const ReduceParams p{op, axes.empty() ? 0 : static_cast<int>(axes[0]), !axes.empty(), a.boolean("keepdims", false)};
  a.finish();
  return p;
}

#define NDG_REDUCE_OP(NAME, GRADIENT)                                                                 \
  OpDef{#NAME, &reduce_infer, &reduce_cpu, NDG_GPU_KERNEL(gpu::reduce), GRADIENT, &reduce_attrs, \
        &reduce_parse<ReduceOp::NAME>}
// In ReduceOp's order; argmax/argmin give positions, which have no gradient.
const std::array<OpDef, static_cast<std::size_t>(ReduceOp::count)> reduce_defs{
    NDG_REDUCE_OP(sum, &reduce_gradient), NDG_REDUCE_OP(max, &reduce_gradient), NDG_REDUCE_OP(min, &reduce_gradient),
    NDG_REDUCE_OP(argmax, nullptr), NDG_REDUCE_OP(argmin, nullptr)};
#undef NDG_REDUCE_OP

[[maybe_unused]] const bool reduce_family_registered = [] {
  for (const OpDef& def : reduce_defs) register_op(def);
  return true;
}();

}  // namespace

const OpDef& reduce_op(ReduceOp op) { return reduce_defs[static_cast<std::size_t>(op)]; }

ReduceShape reduce_shape(const Invocation& inv) {
  const auto& p = inv.params.as<ReduceParams>();
  const Shape& shape = inv.inputs[0].shape();
  if (!p.has_axis) return {1, shape.numel(), 1};
  return around_axis(shape, normalize_axis(inv.op->name, p.axis, shape));
}

ReduceShape around_axis(const Shape& shape, int axis) {
  ReduceShape s;
  for (int d = 0; d < shape.ndim(); ++d) {
    if (d < axis) s.outer *= shape[d];
    else if (d == axis) s.length = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}

}  // namespace mx::op

namespace mx::nd {

namespace detail {

NDArray sum_to(const NDArray& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  if (shape.ndim() == 0) return sum(grad).reshape(shape);  // sum keeps one axis: MXNet has no 0-d result
  NDArray r = grad;
  while (r.ndim() > shape.ndim()) r = sum(r, 0);
  for (int d = 0; d < shape.ndim(); ++d) {
    if (shape[d] == 1 && r.shape()[d] != 1) r = sum(r, d, true);
  }
  return r.reshape(shape);
}

}  // namespace detail

NDArray reduce(ReduceOp op, const NDArray& x, std::optional<int> axis, bool keepdims) {
  detail::check_not_none(op_name(op), x);
  return op::invoke1(op::reduce_defs[static_cast<std::size_t>(op)], {x},
                     op::ReduceParams{op, axis.value_or(0), axis.has_value(), keepdims});
}

NDArray mean(const NDArray& x, std::optional<int> axis, bool keepdims) {
  detail::check_floating("mean", x);
  const std::int64_t count = axis ? x.shape()[normalize_axis("mean", *axis, x.shape())] : x.size();
  return sum(x, axis, keepdims) / static_cast<double>(count);
}

NDArray norm(const NDArray& x) {
  detail::check_floating("norm", x);
  return sqrt(sum(square(x)));
}

}  // namespace mx::nd
