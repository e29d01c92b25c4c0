// The shape ops: stack, SliceChannel (split), squeeze, expand_dims, tile, repeat, reverse and
// transpose, as registered ops with MXNet's names and attributes. None needs a kernel of its own: stack and
// SliceChannel move rows with the backend's 2-D copy (as Concat and slice_axis), squeeze and
// expand_dims copy, and tile, repeat, reverse and transpose gather through a strided view of their
// input (stride 0 on a repeated axis, a negative stride on a reversed one, permuted strides), so
// each OpDef names the same function for every device. nd::transpose itself returns a view and
// runs no op; the registered transpose is what a traced graph (hybridize) and MXNet's symbol
// files run, where the view's permutation becomes a node. Here: the front ends, inference, gradients and the kernels.
#include "ndarray/ops/shape_ops.hpp"

#include <algorithm>
#include <string>

#include "ndarray/backend/backend.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/core/strided_index.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/manipulation_kernels.hpp"
#include "ndarray/ops/reduce.hpp"
#include "ndarray/ops/reshape_kernels.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

// A tuple attribute of up to kMax values (squeeze's and reverse's axes, tile's reps), inline so
// that Params stay trivially copyable. `given` false: squeeze's axis=None (every axis of extent 1).
struct TupleParams {
  static constexpr int kMax = 12;
  std::int32_t count = 0;
  bool given = true;
  std::int64_t values[kMax] = {};
  std::vector<std::int64_t> list() const { return {values, values + count}; }
};
struct StackParams {
  int axis = 0;
};
struct SplitParams {
  int num_outputs = 1;
  int axis = 1;
  bool squeeze_axis = false;
};
struct ExpandDimsParams {
  int axis = 0;
};
struct RepeatParams {
  std::int64_t repeats = 1;
  int axis = 0;
  bool has_axis = false;  // false: the flattened input (MXNet's axis=None)
};

TupleParams tuple_params(const char* op, const char* what, const std::vector<std::int64_t>& values) {
  if (values.size() > static_cast<std::size_t>(TupleParams::kMax)) {
    throw ValueError(std::string(op) + ": at most " + std::to_string(TupleParams::kMax) + " " + what + ", got " +
                     std::to_string(values.size()));
  }
  TupleParams p;
  p.count = static_cast<std::int32_t>(values.size());
  std::copy(values.begin(), values.end(), p.values);
  return p;
}

std::string tuple_text(const std::vector<std::int64_t>& values) {
  std::string t = "(";
  for (std::size_t i = 0; i < values.size(); ++i) t += (i ? ", " : "") + std::to_string(values[i]);
  return t + (values.size() == 1 ? ",)" : ")");
}

// Each axis of `axes` normalised for `shape` (mx::IndexError naming op when out of range), sorted;
// mx::ValueError for an axis given twice.
std::vector<int> normalized_axes(const char* op, const std::vector<std::int64_t>& axes, const Shape& shape) {
  std::vector<int> out;
  for (std::int64_t a : axes) out.push_back(normalize_axis(op, static_cast<int>(a), shape));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw ValueError(std::string(op) + ": axis " + tuple_text(axes) + " names an axis twice (array of shape " +
                     shape.tuple_str() + ")");
  }
  return out;
}

// A view of `shape` and element `strides` of x's contiguous data from element `offset`, gathered
// into y: the kernel of tile, repeat and reverse on every device.
void gather_view(const ExecContext& ec, const Invocation& inv, const Shape& shape, const std::vector<std::int64_t>& strides,
                 std::int64_t offset) {
  const NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  if (y.size() == 0) return;
  const char* in = static_cast<const char*>(x.data()) + offset * static_cast<std::int64_t>(dtype_size(x.dtype()));
  backend(ec.ctx).gather(ec.ctx, y.dtype(), make_view_index(inv.op->name, shape, strides), in, y.data());
}

// --- stack and SliceChannel --------------------------------------------------------------------------

void stack_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& first = inv.inputs[0];
  for (std::size_t i = 1; i < inv.inputs.size(); ++i) {
    const NDArray& x = inv.inputs[i];
    nd::check_same_dtype("stack", first, x);
    if (x.shape() != first.shape()) {
      throw ShapeError("stack: operand " + std::to_string(i) + " " + nd::describe(x) + " does not have the shape of operand 0 " +
                       nd::describe(first));
    }
  }
  std::vector<std::int64_t> dims = first.shape().dims();
  dims.push_back(1);  // room for the new axis, so that normalize_axis accepts ndim
  const int a = normalize_axis("stack", inv.params.as<StackParams>().axis, Shape(dims));
  dims.pop_back();
  dims.insert(dims.begin() + a, static_cast<std::int64_t>(inv.inputs.size()));
  out = {{Shape(dims), first.dtype()}};
}

// The new axis of stack's output, or the split axis of SliceChannel's input.
int stack_axis(const Invocation& inv) { return normalize_axis("stack", inv.params.as<StackParams>().axis, inv.outputs[0].shape()); }

// Input i's rows (its extents from the axis on) at column i of the output's rows.
void stack_kernel(const ExecContext& ec, const Invocation& inv) {
  const int a = stack_axis(inv);
  const NDArray& out = inv.outputs[0];
  const std::size_t width = row_bytes(inv.inputs[0], a), height = outer_count(out.shape(), a);
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
    copy_rows(ec, static_cast<char*>(out.data()) + i * width, width * inv.inputs.size(), inv.inputs[i].data(), width,
              width, height);
  }
}

const OpDef& split_def();

// Each input's gradient is its slice of the output's: one SliceChannel with squeeze_axis.
std::vector<NDArray> stack_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const SplitParams p{static_cast<int>(inv.inputs.size()), stack_axis(inv), true};
  return invoke(split_def(), {g[0]}, p);
}

std::vector<std::pair<std::string, std::string>> stack_attrs(const Params& params) {
  return {{"axis", std::to_string(params.as<StackParams>().axis)}};
}

// num_args, the number of inputs, is what the node's inputs say: accepted.
Params stack_parse(const AttrList& attrs) {
  AttrReader a("stack", attrs);
  const StackParams p{a.axis("axis", 0)};
  a.ignore({"num_args"});
  a.finish();
  return p;
}

// The split axis, checked: x.shape[axis] a multiple of num_outputs, and of one part per output
// under squeeze_axis.
int split_axis(const Invocation& inv) {
  const auto& p = inv.params.as<SplitParams>();
  const NDArray& x = inv.inputs[0];
  const int a = normalize_axis("split", p.axis, x.shape());
  const std::int64_t n = x.shape()[a];
  if (p.num_outputs < 1 || n % p.num_outputs != 0) {
    throw ShapeError("split: axis " + std::to_string(p.axis) + " of " + nd::describe(x) + " (extent " +
                     std::to_string(n) + ") cannot be cut into " + std::to_string(p.num_outputs) + " equal parts");
  }
  if (p.squeeze_axis && n != p.num_outputs) {
    throw ShapeError("split: squeeze_axis needs parts of extent 1, but axis " + std::to_string(p.axis) + " of " +
                     nd::describe(x) + " cut into " + std::to_string(p.num_outputs) + " gives parts of extent " +
                     std::to_string(n / p.num_outputs));
  }
  return a;
}

void split_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<SplitParams>();
  const NDArray& x = inv.inputs[0];
  const int a = split_axis(inv);
  std::vector<std::int64_t> dims = x.shape().dims();
  dims[static_cast<std::size_t>(a)] /= p.num_outputs;
  if (p.squeeze_axis) {
    dims.erase(dims.begin() + a);
    if (dims.empty()) dims.push_back(1);  // MXNet 1.x has no 0-d arrays
  }
  out.assign(static_cast<std::size_t>(p.num_outputs), OutputSpec{Shape(dims), x.dtype()});
}

// Output j's rows are the j-th part of each of the input's rows.
void split_kernel(const ExecContext& ec, const Invocation& inv) {
  const NDArray& x = inv.inputs[0];
  const int a = split_axis(inv);
  const std::size_t in_width = row_bytes(x, a), height = outer_count(x.shape(), a);
  const std::size_t width = in_width / inv.outputs.size();
  for (std::size_t j = 0; j < inv.outputs.size(); ++j) {
    copy_rows(ec, inv.outputs[j].data(), width, static_cast<const char*>(x.data()) + j * width, in_width, width, height);
  }
}

// The parts' gradients joined along the axis (zero for a part no gradient reached).
std::vector<NDArray> split_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const int a = split_axis(inv);
  std::vector<std::int64_t> part = inv.inputs[0].shape().dims();
  part[static_cast<std::size_t>(a)] /= inv.params.as<SplitParams>().num_outputs;
  std::vector<NDArray> parts;
  for (std::size_t j = 0; j < inv.outputs.size(); ++j) {
    const NDArray& gj = j < g.size() ? g[j] : NDArray();
    parts.push_back(gj.is_none() ? nd::zeros(Shape(part), inv.outputs[j].context(), inv.outputs[j].dtype())
                                 : gj.reshape(Shape(part)));
  }
  return {parts.size() == 1 ? parts[0] : nd::concat(parts, a)};
}

std::vector<std::pair<std::string, std::string>> split_attrs(const Params& params) {
  const auto& p = params.as<SplitParams>();
  return {{"num_outputs", std::to_string(p.num_outputs)},
          {"axis", std::to_string(p.axis)},
          {"squeeze_axis", format_bool(p.squeeze_axis)}};
}

Params split_parse(const AttrList& attrs) {
  AttrReader a("SliceChannel", attrs);
  SplitParams p;
  p.num_outputs = static_cast<int>(a.integer("num_outputs"));
  if (p.num_outputs < 1) a.fail("num_outputs", "must be at least 1");
  p.axis = a.axis("axis", 1);
  p.squeeze_axis = a.boolean("squeeze_axis", false);
  a.finish();
  return p;
}

// --- squeeze and expand_dims: copies into a shape with axes of extent 1 removed or added ----------

void squeeze_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<TupleParams>();
  const NDArray& x = inv.inputs[0];
  std::vector<bool> drop(static_cast<std::size_t>(x.ndim()), false);
  if (p.given) {
    for (int a : normalized_axes("squeeze", p.list(), x.shape())) {
      if (x.shape()[a] != 1) {
        throw ShapeError("squeeze: axis " + std::to_string(a) + " of " + nd::describe(x) + " has extent " +
                         std::to_string(x.shape()[a]) + ", not 1");
      }
      drop[static_cast<std::size_t>(a)] = true;
    }
  } else {
    for (int d = 0; d < x.ndim(); ++d) drop[static_cast<std::size_t>(d)] = x.shape()[d] == 1;
  }
  std::vector<std::int64_t> dims;
  for (int d = 0; d < x.ndim(); ++d) {
    if (!drop[static_cast<std::size_t>(d)]) dims.push_back(x.shape()[d]);
  }
  if (dims.empty()) dims.push_back(1);  // MXNet 1.x has no 0-d arrays
  out = {{Shape(dims), x.dtype()}};
}

void expand_dims_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  std::vector<std::int64_t> dims = x.shape().dims();
  dims.push_back(1);
  const int a = normalize_axis("expand_dims", inv.params.as<ExpandDimsParams>().axis, Shape(dims));
  dims.pop_back();
  dims.insert(dims.begin() + a, 1);
  out = {{Shape(dims), x.dtype()}};
}

// The gradient has the output's elements in the input's shape (a view).
std::vector<NDArray> reshaped_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  return {g[0].reshape(inv.inputs[0].shape())};
}

std::vector<std::pair<std::string, std::string>> squeeze_attrs(const Params& params) {
  const auto& p = params.as<TupleParams>();
  return {{"axis", p.given ? tuple_text(p.list()) : "None"}};
}

Params squeeze_parse(const AttrList& attrs) {
  AttrReader a("squeeze", attrs);
  TupleParams p;
  if (a.is_none("axis")) {
    p.given = false;
  } else {
    p = tuple_params("squeeze", "axes", a.tuple("axis"));
    if (p.count == 0) p.given = false;  // "()" as None
  }
  a.finish();
  return p;
}

std::vector<std::pair<std::string, std::string>> expand_dims_attrs(const Params& params) {
  return {{"axis", std::to_string(params.as<ExpandDimsParams>().axis)}};
}

Params expand_dims_parse(const AttrList& attrs) {
  AttrReader a("expand_dims", attrs);
  const ExpandDimsParams p{a.axis("axis")};
  a.finish();
  return p;
}

// --- tile, repeat, reverse: gathers through a strided view ---------------------------------------

// x's shape and reps, the shorter padded with leading 1s.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> tile_extents(const Invocation& inv) {
  std::vector<std::int64_t> dims = inv.inputs[0].shape().dims(), reps = inv.params.as<TupleParams>().list();
  const std::size_t n = std::max(dims.size(), reps.size());
  dims.insert(dims.begin(), n - dims.size(), 1);
  reps.insert(reps.begin(), n - reps.size(), 1);
  return {dims, reps};
}

void tile_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto [dims, reps] = tile_extents(inv);
  std::vector<std::int64_t> result;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (reps[d] < 0) {
      throw ValueError("tile: reps " + tuple_text(inv.params.as<TupleParams>().list()) + " has a negative count (input " +
                       nd::describe(inv.inputs[0]) + ")");
    }
    result.push_back(dims[d] * reps[d]);
  }
  if (result.empty()) result.push_back(1);  // a 0-d input with reps ()
  out = {{Shape(result), inv.inputs[0].dtype()}};
}

// The output as (r_0, d_0, r_1, d_1, ...): stride 0 along each r_i, x's strides along each d_i.
void tile_kernel(const ExecContext& ec, const Invocation& inv) {
  const auto [dims, reps] = tile_extents(inv);
  const std::vector<std::int64_t> dense = contiguous_strides(Shape(dims));
  std::vector<std::int64_t> shape, strides;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    shape.insert(shape.end(), {reps[d], dims[d]});
    strides.insert(strides.end(), {0, dense[d]});
  }
  gather_view(ec, inv, Shape(shape), strides, 0);
}

// The output's gradient as (r_0, d_0, r_1, d_1, ...) summed over each r_i.
std::vector<NDArray> tile_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const auto [dims, reps] = tile_extents(inv);
  std::vector<std::int64_t> split;
  for (std::size_t d = 0; d < dims.size(); ++d) split.insert(split.end(), {reps[d], dims[d]});
  NDArray sum = g[0].reshape(Shape(split));
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    if (reps[static_cast<std::size_t>(d)] != 1) sum = nd::sum(sum, 2 * d, true);
  }
  return {sum.reshape(inv.inputs[0].shape())};
}

std::vector<std::pair<std::string, std::string>> tile_attrs(const Params& params) {
  return {{"reps", tuple_text(params.as<TupleParams>().list())}};
}

Params tile_parse(const AttrList& attrs) {
  AttrReader a("tile", attrs);
  const TupleParams p = tuple_params("tile", "reps", a.tuple("reps"));
  a.finish();
  return p;
}

// x as (outer, n, inner) around repeat's axis (the flattened x: (1, size, 1)).
ReduceShape repeat_shape(const Invocation& inv) {
  const auto& p = inv.params.as<RepeatParams>();
  const NDArray& x = inv.inputs[0];
  if (!p.has_axis) return {1, x.size(), 1};
  std::vector<std::int64_t> dims = x.shape().dims();
  const int a = normalize_axis("repeat", p.axis, x.shape());
  ReduceShape s{1, dims[static_cast<std::size_t>(a)], 1};
  for (int d = 0; d < a; ++d) s.outer *= dims[static_cast<std::size_t>(d)];
  for (int d = a + 1; d < x.ndim(); ++d) s.inner *= dims[static_cast<std::size_t>(d)];
  return s;
}

void repeat_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<RepeatParams>();
  const NDArray& x = inv.inputs[0];
  if (p.repeats < 0) {
    throw ValueError("repeat: repeats must be non-negative, got " + std::to_string(p.repeats) + " (input " +
                     nd::describe(x) + ")");
  }
  if (!p.has_axis) {
    out = {{Shape{x.size() * p.repeats}, x.dtype()}};
    return;
  }
  std::vector<std::int64_t> dims = x.shape().dims();
  dims[static_cast<std::size_t>(normalize_axis("repeat", p.axis, x.shape()))] *= p.repeats;
  out = {{Shape(dims), x.dtype()}};
}

// The output as (outer, n, repeats, inner), stride 0 along repeats.
void repeat_kernel(const ExecContext& ec, const Invocation& inv) {
  const ReduceShape s = repeat_shape(inv);
  const std::int64_t r = inv.params.as<RepeatParams>().repeats;
  gather_view(ec, inv, Shape{s.outer, s.length, r, s.inner}, {s.length * s.inner, s.inner, 0, 1}, 0);
}

std::vector<NDArray> repeat_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const ReduceShape s = repeat_shape(inv);
  const std::int64_t r = inv.params.as<RepeatParams>().repeats;
  return {nd::sum(g[0].reshape({s.outer, s.length, r, s.inner}), 2).reshape(inv.inputs[0].shape())};
}

std::vector<std::pair<std::string, std::string>> repeat_attrs(const Params& params) {
  const auto& p = params.as<RepeatParams>();
  return {{"repeats", std::to_string(p.repeats)}, {"axis", p.has_axis ? std::to_string(p.axis) : "None"}};
}

Params repeat_parse(const AttrList& attrs) {
  AttrReader a("repeat", attrs);
  RepeatParams p;
  p.repeats = a.integer("repeats");
  p.has_axis = !a.is_none("axis");
  if (p.has_axis) p.axis = a.axis("axis");
  a.finish();
  return p;
}

void reverse_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  normalized_axes("reverse", inv.params.as<TupleParams>().list(), x.shape());  // checks them
  out = {{x.shape(), x.dtype()}};
}

// x read with negative strides along the reversed axes, from the last element along each.
void reverse_kernel(const ExecContext& ec, const Invocation& inv) {
  const Shape& shape = inv.inputs[0].shape();
  std::vector<std::int64_t> strides = contiguous_strides(shape);
  std::int64_t offset = 0;
  for (int a : normalized_axes("reverse", inv.params.as<TupleParams>().list(), shape)) {
    const auto i = static_cast<std::size_t>(a);
    if (shape[a] > 0) offset += (shape[a] - 1) * strides[i];
    strides[i] = -strides[i];
  }
  gather_view(ec, inv, shape, strides, offset);
}

const OpDef& reverse_def();

std::vector<NDArray> reverse_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  return {invoke1(reverse_def(), {g[0]}, inv.params)};
}

std::vector<std::pair<std::string, std::string>> reverse_attrs(const Params& params) {
  return {{"axis", tuple_text(params.as<TupleParams>().list())}};
}

Params reverse_parse(const AttrList& attrs) {
  AttrReader a("reverse", attrs);
  const TupleParams p = tuple_params("reverse", "axes", a.tuple("axis"));
  a.finish();
  return p;
}

// transpose: axes () reverses them, as MXNet's.
std::vector<int> transpose_axes(const Invocation& inv) {
  const NDArray& x = inv.inputs[0];
  const std::vector<std::int64_t> given = inv.params.as<TupleParams>().list();
  std::vector<int> axes;
  if (given.empty()) {
    for (int d = x.ndim() - 1; d >= 0; --d) axes.push_back(d);
    return axes;
  }
  if (static_cast<int>(given.size()) != x.ndim()) {
    throw ShapeError("transpose: axes " + tuple_text(given) + " do not permute the " + std::to_string(x.ndim()) +
                     " axes of " + nd::describe(x));
  }
  for (std::int64_t a : given) axes.push_back(normalize_axis("transpose", static_cast<int>(a), x.shape()));
  std::vector<int> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw ValueError("transpose: axes " + tuple_text(given) + " name an axis twice (array " + nd::describe(x) + ")");
  }
  return axes;
}

void transpose_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const NDArray& x = inv.inputs[0];
  std::vector<std::int64_t> dims;
  for (int a : transpose_axes(inv)) dims.push_back(x.shape()[a]);
  out = {{Shape(dims), x.dtype()}};
}

// Output axis d reads input axis axes[d].
void transpose_kernel(const ExecContext& ec, const Invocation& inv) {
  const std::vector<std::int64_t> dense = contiguous_strides(inv.inputs[0].shape());
  std::vector<std::int64_t> strides;
  for (int a : transpose_axes(inv)) strides.push_back(dense[static_cast<std::size_t>(a)]);
  gather_view(ec, inv, inv.outputs[0].shape(), strides, 0);
}

const OpDef& transpose_def();

std::vector<NDArray> transpose_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const std::vector<int> axes = transpose_axes(inv);
  std::vector<std::int64_t> inverse(axes.size());
  for (std::size_t d = 0; d < axes.size(); ++d) inverse[static_cast<std::size_t>(axes[d])] = static_cast<std::int64_t>(d);
  return {invoke1(transpose_def(), {g[0]}, tuple_params("transpose", "axes", inverse))};
}

std::vector<std::pair<std::string, std::string>> transpose_attrs(const Params& params) {
  return {{"axes", tuple_text(params.as<TupleParams>().list())}};
}

Params transpose_parse(const AttrList& attrs) {
  AttrReader a("transpose", attrs);
  const TupleParams p = tuple_params("transpose", "axes", a.tuple("axes", {}));
  a.finish();
  return p;
}

// One kernel for every device each: the backend's copies and gathers.
const OpDef& stack_def() {
  static const OpDef def{"stack", &stack_infer, &stack_kernel, NDG_GPU_KERNEL(stack_kernel), &stack_gradient,
                         &stack_attrs, &stack_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& split_def() {
  static const OpDef def{"SliceChannel", &split_infer, &split_kernel, NDG_GPU_KERNEL(split_kernel), &split_gradient,
                         &split_attrs, &split_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& squeeze_def() {
  static const OpDef def{"squeeze", &squeeze_infer, &reshape_copy_kernel, NDG_GPU_KERNEL(reshape_copy_kernel),
                         &reshaped_gradient, &squeeze_attrs, &squeeze_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& expand_dims_def() {
  static const OpDef def{"expand_dims", &expand_dims_infer, &reshape_copy_kernel, NDG_GPU_KERNEL(reshape_copy_kernel),
                         &reshaped_gradient, &expand_dims_attrs, &expand_dims_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& tile_def() {
  static const OpDef def{"tile", &tile_infer, &tile_kernel, NDG_GPU_KERNEL(tile_kernel), &tile_gradient, &tile_attrs,
                         &tile_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& repeat_def() {
  static const OpDef def{"repeat", &repeat_infer, &repeat_kernel, NDG_GPU_KERNEL(repeat_kernel), &repeat_gradient,
                         &repeat_attrs, &repeat_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& reverse_def() {
  static const OpDef def{"reverse", &reverse_infer, &reverse_kernel, NDG_GPU_KERNEL(reverse_kernel), &reverse_gradient,
                         &reverse_attrs, &reverse_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
const OpDef& transpose_def() {
  static const OpDef def{"transpose", &transpose_infer, &transpose_kernel, NDG_GPU_KERNEL(transpose_kernel),
                         &transpose_gradient, &transpose_attrs, &transpose_parse};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool shape_ops_family_registered = (stack_def(), split_def(), squeeze_def(), expand_dims_def(), tile_def(),
                                                 repeat_def(), reverse_def(), transpose_def(), true);

std::vector<std::int64_t> widened(const std::vector<int>& axes) { return {axes.begin(), axes.end()}; }

}  // namespace

const OpDef& transpose_op() { return transpose_def(); }
Params transpose_params(const std::vector<int>& axes) { return tuple_params("transpose", "axes", widened(axes)); }
}  // namespace mx::op

namespace mx::nd {

NDArray stack(const std::vector<NDArray>& arrays, int axis) {
  if (arrays.empty()) throw ValueError("stack: needs at least one array");
  for (const NDArray& x : arrays) detail::check_not_none("stack", x);
  detail::check_same_context("stack", arrays);
  return op::invoke1(op::stack_def(), arrays, op::StackParams{axis});
}

std::vector<NDArray> split(const NDArray& x, int num_outputs, int axis, bool squeeze_axis) {
  detail::check_not_none("split", x);
  if (num_outputs < 1) {
    throw ValueError("split: num_outputs must be at least 1, got " + std::to_string(num_outputs) + " (input " +
                     detail::describe(x) + ")");
  }
  return op::invoke(op::split_def(), {x}, op::SplitParams{num_outputs, axis, squeeze_axis});
}

NDArray squeeze(const NDArray& x, const std::vector<int>& axis) {
  detail::check_not_none("squeeze", x);
  op::TupleParams p = op::tuple_params("squeeze", "axes", op::widened(axis));
  p.given = !axis.empty();
  return op::invoke1(op::squeeze_def(), {x}, p);
}

NDArray expand_dims(const NDArray& x, int axis) {
  detail::check_not_none("expand_dims", x);
  return op::invoke1(op::expand_dims_def(), {x}, op::ExpandDimsParams{axis});
}

NDArray tile(const NDArray& x, const std::vector<std::int64_t>& reps) {
  detail::check_not_none("tile", x);
  return op::invoke1(op::tile_def(), {x}, op::tuple_params("tile", "reps", reps));
}

NDArray repeat(const NDArray& x, std::int64_t repeats, std::optional<int> axis) {
  detail::check_not_none("repeat", x);
  return op::invoke1(op::repeat_def(), {x}, op::RepeatParams{repeats, axis.value_or(0), axis.has_value()});
}

NDArray reverse(const NDArray& x, const std::vector<int>& axis) {
  detail::check_not_none("reverse", x);
  return op::invoke1(op::reverse_def(), {x}, op::tuple_params("reverse", "axes", op::widened(axis)));
}

}  // namespace mx::nd
