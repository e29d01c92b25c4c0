// The manipulation family: views (transpose, swapaxes, broadcast_to: new strides on shared
// storage, no kernel), and the copies Concat, slice_axis, Cast and pick (with _backward_pick) as
// registered ops. Here: the front ends, inference, gradients and CPU loops; the Cast and pick
// launches are in cuda/ops/manipulation.cu.
#include "ndarray/ops/manipulation.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/core/contiguous.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/manipulation_kernels.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/reduce_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;


// --- Concat and slice_axis: copies of rows (the extents from the axis on), by the backend's 2-D copy

struct AxisParams {
  int axis = 0;
};
struct SliceAxisParams {
  static constexpr std::int64_t kToEnd = std::numeric_limits<std::int64_t>::max();  // MXNet's end "None"
  int axis = 0;
  std::int64_t begin = 0, end = 0;  // negative counts from the end
};

void concat_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& first = inv.inputs[0];
  const int axis = inv.params.as<AxisParams>().axis;
  const int a = normalize_axis("concat", axis, first.shape());
  std::vector<std::int64_t> dims(first.shape().begin(), first.shape().end());
  dims[static_cast<std::size_t>(a)] = 0;
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
    const NDArray& x = inv.inputs[i];
    nd::check_same_dtype("concat", first, x);
    bool fits = x.ndim() == first.ndim();
    for (int d = 0; fits && d < x.ndim(); ++d) fits = d == a || x.shape()[d] == first.shape()[d];
    if (!fits) {
      throw ShapeError("concat: operand " + std::to_string(i) + " " + nd::describe(x) + " does not match operand 0 " +
                       nd::describe(first) + " outside axis " + std::to_string(axis));
    }
    dims[static_cast<std::size_t>(a)] += x.shape()[a];
  }
  out = {{Shape(dims), first.dtype()}};
}

// Each input's rows side by side in the output's rows.
void concat_kernel(const ExecContext& ec, const Invocation& inv) {
  const NDArray& out = inv.outputs[0];
  const int a = normalize_axis("concat", inv.params.as<AxisParams>().axis, out.shape());
  const std::size_t pitch = row_bytes(out, a), height = outer_count(out.shape(), a);
  std::size_t column = 0;
  for (const NDArray& x : inv.inputs) {
    const std::size_t width = row_bytes(x, a);
    copy_rows(ec, static_cast<char*>(out.data()) + column, pitch, x.data(), width, width, height);
    column += width;
  }
}

std::vector<NDArray> concat_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const int a = normalize_axis("concat", inv.params.as<AxisParams>().axis, g[0].shape());
  std::vector<NDArray> grads;
  std::int64_t begin = 0;
  for (const NDArray& x : inv.inputs) {
    grads.push_back(nd::slice_axis(g[0], a, begin, begin + x.shape()[a]));
    begin += x.shape()[a];
  }
  return grads;
}

std::vector<std::pair<std::string, std::string>> concat_attrs(const Params& params) {
  return {{"dim", std::to_string(params.as<AxisParams>().axis)}};
}

// MXNet's attributes; num_args, the number of inputs, is what the node's inputs say: ignored.
Params concat_parse(const AttrList& attrs) {
  AttrReader a("Concat", attrs);
  const AxisParams p{a.axis("dim", 1)};
  a.ignore({"num_args"});
  a.finish();
  return p;
}

// slice_axis's axis and [begin, end) made non-negative; mx::IndexError when out of range.
SliceAxisParams slice_range(const Invocation& inv) {
  SliceAxisParams p = inv.params.as<SliceAxisParams>();
  const NDArray& x = inv.inputs[0];
  const int axis = p.axis;
  p.axis = normalize_axis("slice_axis", axis, x.shape());
  const std::int64_t n = x.shape()[p.axis];
  if (p.begin < 0) p.begin += n;
  if (p.end == SliceAxisParams::kToEnd) p.end = n;
  if (p.end < 0) p.end += n;
  if (p.begin < 0 || p.end > n || p.begin > p.end) {
    throw IndexError("slice_axis: range [" + std::to_string(p.begin) + ", " + std::to_string(p.end) +
                     ") is out of range for axis " + std::to_string(axis) + " of " + nd::describe(x));
  }
  return p;
}

void slice_axis_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const SliceAxisParams p = slice_range(inv);
  std::vector<std::int64_t> dims(inv.inputs[0].shape().begin(), inv.inputs[0].shape().end());
  dims[static_cast<std::size_t>(p.axis)] = p.end - p.begin;
  out = {{Shape(dims), inv.inputs[0].dtype()}};
}

void slice_axis_kernel(const ExecContext& ec, const Invocation& inv) {
  const SliceAxisParams p = slice_range(inv);
  const NDArray &x = inv.inputs[0], &out = inv.outputs[0];
  const std::size_t item_row = row_bytes(x, p.axis + 1);  // bytes of one index along the axis
  copy_rows(ec, out.data(), row_bytes(out, p.axis), static_cast<const char*>(x.data()) + static_cast<std::size_t>(p.begin) * item_row,
            row_bytes(x, p.axis), row_bytes(out, p.axis), outer_count(x.shape(), p.axis));
}

// g between zeros: concat(zeros before, g, zeros after) along the axis.
std::vector<NDArray> slice_axis_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const SliceAxisParams p = slice_range(inv);
  const Shape& shape = inv.inputs[0].shape();
  std::vector<NDArray> parts;
  for (auto [from, to] : {std::pair{std::int64_t{0}, p.begin}, std::pair{p.end, shape[p.axis]}}) {
    if (to <= from) continue;
    std::vector<std::int64_t> dims(shape.begin(), shape.end());
    dims[static_cast<std::size_t>(p.axis)] = to - from;
    parts.push_back(nd::zeros(Shape(dims), g[0].context(), g[0].dtype()));
  }
  parts.insert(parts.begin() + (p.begin > 0 ? 1 : 0), g[0]);
  return {nd::concat(parts, p.axis)};
}

std::vector<std::pair<std::string, std::string>> slice_axis_attrs(const Params& params) {
  const auto& p = params.as<SliceAxisParams>();
  return {{"axis", std::to_string(p.axis)},
          {"begin", std::to_string(p.begin)},
          {"end", p.end == SliceAxisParams::kToEnd ? "None" : std::to_string(p.end)}};
}

Params slice_axis_parse(const AttrList& attrs) {
  AttrReader a("slice_axis", attrs);
  SliceAxisParams p;
  p.axis = a.axis("axis");
  p.begin = a.integer("begin");
  p.end = a.is_none("end") ? SliceAxisParams::kToEnd : a.integer("end");
  a.finish();
  return p;
}

// --- Cast -----------------------------------------------------------------------------------------

void cast_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  out = {{inv.inputs[0].shape(), inv.params.as<CastParams>().dtype}};
}

void cast_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const std::int64_t n = y.size();
  dispatch_dtype(x.dtype(), [&](auto from_tag) {
    dispatch_dtype(y.dtype(), [&](auto to_tag) {
      using S = decltype(from_tag);
      using D = decltype(to_tag);
      const S* in = static_cast<const S*>(x.data());
      D* out = static_cast<D*>(y.data());
      parallel_for_simd(n, [&](std::int64_t i) { out[i] = static_cast<D>(in[i]); });
    });
  });
}

std::vector<NDArray> cast_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  // Under amp, the cast back of a float32 weight's gradient goes straight into its buffer.
  return {gradient_into(inv, 0, [&] { return nd::cast(g[0], inv.inputs[0].dtype()); })};
}

std::vector<std::pair<std::string, std::string>> cast_attrs(const Params& params) {
  return {{"dtype", dtype_name(params.as<CastParams>().dtype)}};
}

Params cast_parse(const AttrList& attrs) {
  AttrReader a("Cast", attrs);
  const CastParams p{a.dtype("dtype")};
  a.finish();
  return p;
}

// --- pick and _backward_pick ---------------------------------------------------------------------

// pick: inputs (data, index), output data's shape without the axis, or with extent 1 there
// (keepdims). The index has either of those shapes (MXNet accepts both whatever keepdims says).
void pick_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &data = inv.inputs[0], &index = inv.inputs[1];
  const auto& p = inv.params.as<PickParams>();
  const int a = normalize_axis("pick", p.axis, data.shape());
  std::vector<std::int64_t> kept = data.shape().dims(), dropped = kept;
  kept[static_cast<std::size_t>(a)] = 1;
  dropped.erase(dropped.begin() + a);
  if (dropped.empty()) dropped.push_back(1);  // MXNet 1.x has no 0-d arrays
  const Shape kept_shape(kept), dropped_shape(dropped);
  if (index.shape() != dropped_shape && index.shape() != kept_shape) {
    throw ShapeError("pick: index " + nd::describe(index) + " does not match data " + nd::describe(data) +
                     " along axis " + std::to_string(p.axis) + "; expected index of shape " +
                     dropped_shape.tuple_str() + " or " + kept_shape.tuple_str());
  }
  if (data.shape()[a] == 0 && index.size() > 0) {
    throw ShapeError("pick: axis " + std::to_string(p.axis) + " of data " + nd::describe(data) +
                     " has no element to pick for index " + nd::describe(index));
  }
  out = {{p.keepdims ? kept_shape : dropped_shape, data.dtype()}};
}

void pick_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &data = inv.inputs[0], &index = inv.inputs[1], &y = inv.outputs[0];
  const ReduceShape s = pick_shape(inv);
  const bool wrap = inv.params.as<PickParams>().wrap;
  dispatch_dtype(data.dtype(), [&](auto data_tag) {
    dispatch_dtype(index.dtype(), [&](auto index_tag) {
      using T = decltype(data_tag);
      using I = decltype(index_tag);
      const T* x = static_cast<const T*>(data.data());
      const I* idx = static_cast<const I*>(index.data());
      T* out = static_cast<T*>(y.data());
      parallel_for(y.size(), [&](std::int64_t i) { out[i] = pick_element(x, idx, s, wrap, i); });
    });
  });
}

// _backward_pick: inputs (output gradient, index), output the data's gradient, whose shape the
// params carry (its ndim and its extent along the axis).
void pick_backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray &g = inv.inputs[0], &index = inv.inputs[1];
  const auto& p = inv.params.as<PickParams>();
  if (p.ndim < 1 || p.axis < -p.ndim || p.axis >= p.ndim || g.size() != index.size()) {
    throw ShapeError("_backward_pick: output gradient " + nd::describe(g) + " and index " + nd::describe(index) +
                     " do not fit data of " + std::to_string(p.ndim) + " axes along axis " + std::to_string(p.axis));
  }
  std::vector<std::int64_t> dims = g.shape().dims();
  if (p.ndim == 1) {
    dims = {p.length};
  } else {
    const int a = p.axis < 0 ? p.axis + p.ndim : p.axis;
    if (p.keepdims) dims[static_cast<std::size_t>(a)] = p.length;
    else dims.insert(dims.begin() + a, p.length);
  }
  out = {{Shape(dims), g.dtype()}};
}

void pick_backward_cpu(const ExecContext&, const Invocation& inv) {
  const NDArray &g = inv.inputs[0], &index = inv.inputs[1], &dx = inv.outputs[0];
  const ReduceShape s = pick_shape(inv);
  const bool wrap = inv.params.as<PickParams>().wrap;
  dispatch_dtype(g.dtype(), [&](auto grad_tag) {
    dispatch_dtype(index.dtype(), [&](auto index_tag) {
      using T = decltype(grad_tag);
      using I = decltype(index_tag);
      const T* grad = static_cast<const T*>(g.data());
      const I* idx = static_cast<const I*>(index.data());
      T* out = static_cast<T*>(dx.data());
      parallel_for(dx.size(), [&](std::int64_t i) { out[i] = pick_backward_element(grad, idx, s, wrap, i); });
    });
  });
}

std::vector<std::pair<std::string, std::string>> pick_attrs(const Params& params) {
  const auto& p = params.as<PickParams>();
  return {{"axis", std::to_string(p.axis)},
          {"keepdims", format_bool(p.keepdims)},
          {"mode", p.wrap ? "wrap" : "clip"}};
}

// pick's MXNet attributes; axis "None" (pick from the flattened data) is refused. _backward_pick
// has none to parse: its params carry the data's shape, which attributes do not give.
Params pick_parse(const AttrList& attrs) {
  AttrReader a("pick", attrs);
  if (a.is_none("axis")) a.fail("axis", "(the flattened data) is not supported: give an axis");
  PickParams p;
  p.axis = a.axis("axis", -1);
  p.keepdims = a.boolean("keepdims", false);
  p.wrap = a.choice("mode", "clip", {"clip", "wrap"}) == "wrap";
  a.finish();
  return p;
}

const OpDef& pick_backward_def() {
  static const OpDef def{"_backward_pick", &pick_backward_infer, &pick_backward_cpu,
                         NDG_GPU_KERNEL(gpu::pick_backward), nullptr, &pick_attrs};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}

// The data's gradient: the output gradient at the picked positions, zero elsewhere (one
// _backward_pick); none for the index.
std::vector<NDArray> pick_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const Shape& data = inv.inputs[0].shape();
  PickParams p = inv.params.as<PickParams>();
  p.ndim = data.ndim();
  p.length = data[normalize_axis("pick", p.axis, data)];
  return {invoke1(pick_backward_def(), {g[0], inv.inputs[1]}, p), NDArray()};
}

// One kernel for every device: the backend's 2-D copy.
const OpDef& concat_def() {
  static const OpDef def{"Concat", &concat_infer, &concat_kernel, NDG_GPU_KERNEL(concat_kernel), &concat_gradient,
                         &concat_attrs, &concat_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& slice_axis_def() {
  static const OpDef def{"slice_axis", &slice_axis_infer, &slice_axis_kernel, NDG_GPU_KERNEL(slice_axis_kernel),
                         &slice_axis_gradient, &slice_axis_attrs, &slice_axis_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& cast_def() {
  static const OpDef def{"Cast", &cast_infer, &cast_cpu, NDG_GPU_KERNEL(gpu::cast), &cast_gradient, &cast_attrs,
                         &cast_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& pick_def() {
  static const OpDef def{"pick", &pick_infer, &pick_cpu, NDG_GPU_KERNEL(gpu::pick), &pick_gradient, &pick_attrs,
                         &pick_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool manipulation_family_registered =
    (concat_def(), slice_axis_def(), cast_def(), pick_def(), pick_backward_def(), true);

}  // namespace

// Bytes of one element times the product of extents from `axis` on.
std::size_t row_bytes(const NDArray& x, int axis) {
  std::int64_t n = 1;
  for (int d = axis; d < x.ndim(); ++d) n *= x.shape()[d];
  return static_cast<std::size_t>(n) * dtype_size(x.dtype());
}

std::size_t outer_count(const Shape& shape, int axis) {
  std::int64_t n = 1;
  for (int d = 0; d < axis; ++d) n *= shape[d];
  return static_cast<std::size_t>(n);
}

void copy_rows(const ExecContext& ec, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
               std::size_t width, std::size_t height) {
  if (width > 0 && height > 0) backend(ec.ctx).copy_2d(ec.ctx, dst, dst_pitch, src, src_pitch, width, height);
}

// The data's shape is pick's first input, and _backward_pick's output.
ReduceShape pick_shape(const Invocation& inv) {
  const Shape& data = inv.op == &pick_backward_def() ? inv.outputs[0].shape() : inv.inputs[0].shape();
  return around_axis(data, normalize_axis("pick", inv.params.as<PickParams>().axis, data));
}

}  // namespace mx::op

namespace mx::nd {

namespace {

std::string axes_str(const std::vector<int>& axes) {
  std::string out = "(";
  for (std::size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + std::to_string(axes[i]);
  return out + ")";
}

}  // namespace

NDArray transpose(const NDArray& x, const std::vector<int>& axes_in) {
  detail::check_not_none("transpose", x);
  std::vector<int> axes = axes_in;
  if (axes.empty()) {
    axes.resize(static_cast<std::size_t>(x.ndim()));
    std::iota(axes.rbegin(), axes.rend(), 0);
  }
  for (auto& a : axes) a = a < 0 ? a + x.ndim() : a;
  std::vector<int> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(static_cast<std::size_t>(x.ndim()));
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) {
    throw ShapeError("transpose: axes " + axes_str(axes_in) + " are not a permutation of the " +
                     std::to_string(x.ndim()) + " axes of " + detail::describe(x));
  }
  // Out axis d is input axis axes[d]: its extent and stride.
  const std::vector<std::int64_t> in_strides = x.strides();
  std::vector<std::int64_t> out_dims, out_strides;
  for (int a : axes) {
    out_dims.push_back(x.shape()[a]);
    out_strides.push_back(in_strides[static_cast<std::size_t>(a)]);
  }
  NDArray out = x.as_strided(Shape(out_dims), out_strides);
  detail::view_index("transpose", out);  // reports a view that the kernels could not step through
  if (autograd::needs_record({&x})) {
    autograd::record_op("transpose", out, {&x}, [axes](const NDArray& g) {
      std::vector<int> inverse(axes.size());
      for (std::size_t d = 0; d < axes.size(); ++d) inverse[static_cast<std::size_t>(axes[d])] = static_cast<int>(d);
      return std::vector<NDArray>{transpose(g, inverse)};
    });
  }
  return out;
}

NDArray swapaxes(const NDArray& x, int axis1, int axis2) {
  detail::check_not_none("swapaxes", x);
  const int a = normalize_axis("swapaxes", axis1, x.shape());
  const int b = normalize_axis("swapaxes", axis2, x.shape());
  std::vector<int> axes(static_cast<std::size_t>(x.ndim()));
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[static_cast<std::size_t>(a)], axes[static_cast<std::size_t>(b)]);
  return transpose(x, axes);
}

NDArray broadcast_to(const NDArray& x, const Shape& shape) {
  detail::check_not_none("broadcast_to", x);
  if (broadcast_shapes("broadcast_to", x.shape(), shape) != shape) {
    throw ShapeError("broadcast_to: " + detail::describe(x) + " cannot be broadcast to " + shape.tuple_str());
  }
  // x's strides right-aligned against shape; 0 where an axis is repeated or added.
  const std::vector<std::int64_t> in_strides = x.strides();
  std::vector<std::int64_t> strides(static_cast<std::size_t>(shape.ndim()), 0);
  for (int d = 0; d < x.ndim(); ++d) {
    if (x.shape()[d] != 1) strides[static_cast<std::size_t>(d + shape.ndim() - x.ndim())] = in_strides[static_cast<std::size_t>(d)];
  }
  NDArray out = x.as_strided(shape, strides);
  detail::view_index("broadcast_to", out);  // reports a view that the kernels could not step through
  if (autograd::needs_record({&x})) {
    autograd::record_op("broadcast_to", out, {&x}, [from = x.shape()](const NDArray& g) {
      return std::vector<NDArray>{detail::sum_to(g, from)};
    });
  }
  return out;
}

NDArray concat(const std::vector<NDArray>& arrays, int axis) {
  if (arrays.empty()) throw ValueError("concat: needs at least one array");
  for (const NDArray& x : arrays) detail::check_not_none("concat", x);
  detail::check_same_context("concat", arrays);  // names every operand's context
  return op::invoke1(op::concat_def(), arrays, op::AxisParams{axis});
}

NDArray slice_axis(const NDArray& x, int axis, std::int64_t begin, std::int64_t end) {
  detail::check_not_none("slice_axis", x);
  return op::invoke1(op::slice_axis_def(), {x}, op::SliceAxisParams{axis, begin, end});
}

NDArray pick(const NDArray& data, const NDArray& index, int axis, bool keepdims, const std::string& mode) {
  detail::check_not_none("pick", data);
  detail::check_not_none("pick", index);
  if (mode != "clip" && mode != "wrap") {
    throw ValueError("pick: mode must be \"clip\" or \"wrap\", got \"" + mode + "\" (data " + detail::describe(data) +
                     ", index " + detail::describe(index) + ")");
  }
  return op::invoke1(op::pick_def(), {data, index}, op::PickParams{axis, keepdims, mode == "wrap"});
}

NDArray cast(const NDArray& x, DType dtype) {
  detail::check_not_none("Cast", x);
  if (dtype == x.dtype()) return x.copy();
  return op::invoke1(op::cast_def(), {x}, op::CastParams{dtype});
}

}  // namespace mx::nd
