#include "ndarray/manipulation.hpp"

#include <algorithm>
#include <numeric>

#include "ndarray/autograd.hpp"
#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"
#include "ndarray/contiguous.hpp"
#include "ndarray/creation.hpp"

namespace mx::nd {

namespace {

std::string axes_str(const std::vector<int>& axes) {
  std::string out = "(";
  for (std::size_t i = 0; i < axes.size(); ++i) out += (i ? ", " : "") + std::to_string(axes[i]);
  return out + ")";
}

// Bytes of one element times the product of extents from `axis` on.
std::size_t row_bytes(const NDArray& x, int axis) {
  std::int64_t n = 1;
  for (int d = axis; d < x.ndim(); ++d) n *= x.shape()[d];
  return static_cast<std::size_t>(n) * dtype_size(x.dtype());
}

std::int64_t outer_count(const Shape& shape, int axis) {
  std::int64_t n = 1;
  for (int d = 0; d < axis; ++d) n *= shape[d];
  return n;
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
  const NDArray& first = arrays[0];
  detail::check_same_context("concat", arrays);
  const int a = normalize_axis("concat", axis, first.shape());
  std::vector<std::int64_t> out_dims(first.shape().begin(), first.shape().end());
  out_dims[static_cast<std::size_t>(a)] = 0;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const NDArray& x = arrays[i];
    detail::check_same_dtype("concat", first, x);
    bool fits = x.ndim() == first.ndim();
    for (int d = 0; fits && d < x.ndim(); ++d) fits = d == a || x.shape()[d] == first.shape()[d];
    if (!fits) {
      throw ShapeError("concat: operand " + std::to_string(i) + " " + detail::describe(x) +
                       " does not match operand 0 " + detail::describe(first) +
                       " outside axis " + std::to_string(axis));
    }
    out_dims[static_cast<std::size_t>(a)] += x.shape()[a];
  }
  NDArray out(Shape(out_dims), first.context(), first.dtype());
  const std::size_t out_pitch = row_bytes(out, a);
  const std::size_t height = static_cast<std::size_t>(outer_count(out.shape(), a));
  std::size_t column = 0;
  for (const NDArray& x : arrays) {
    const std::size_t width = row_bytes(x, a);
    if (width > 0 && height > 0) {
      backend(out.context()).copy_2d(out.context(), static_cast<char*>(out.data()) + column, out_pitch,
                                     detail::dense(x).data(), width, width, height);
    }
    column += width;
  }
  std::vector<const NDArray*> inputs;
  for (const NDArray& x : arrays) inputs.push_back(&x);
  if (autograd::needs_record(inputs)) {
    std::vector<std::int64_t> extents;
    for (const NDArray& x : arrays) extents.push_back(x.shape()[a]);
    autograd::record_op("concat", out, inputs, [a, extents](const NDArray& g) {
      std::vector<NDArray> grads;
      std::int64_t begin = 0;
      for (std::int64_t extent : extents) {
        grads.push_back(slice_axis(g, a, begin, begin + extent));
        begin += extent;
      }
      return grads;
    });
  }
  return out;
}

NDArray slice_axis(const NDArray& x, int axis, std::int64_t begin, std::int64_t end) {
  detail::check_not_none("slice_axis", x);
  const int a = normalize_axis("slice_axis", axis, x.shape());
  const std::int64_t n = x.shape()[a];
  if (begin < 0) begin += n;
  if (end < 0) end += n;
  if (begin < 0 || end > n || begin > end) {
    throw IndexError("slice_axis: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") is out of range for axis " + std::to_string(axis) + " of " + detail::describe(x));
  }
  std::vector<std::int64_t> out_dims(x.shape().begin(), x.shape().end());
  out_dims[static_cast<std::size_t>(a)] = end - begin;
  NDArray out(Shape(out_dims), x.context(), x.dtype());
  const std::size_t src_pitch = row_bytes(x, a);
  const std::size_t width = row_bytes(out, a);
  const std::size_t height = static_cast<std::size_t>(outer_count(x.shape(), a));
  const std::size_t start = static_cast<std::size_t>(begin) * (n ? src_pitch / static_cast<std::size_t>(n) : 0);
  if (width > 0 && height > 0) {
    backend(x.context()).copy_2d(x.context(), out.data(), width, static_cast<char*>(detail::dense(x).data()) + start,
                                 src_pitch, width, height);
  }
  if (autograd::needs_record({&x})) {
    // The gradient is g between zeros: concat(zeros before, g, zeros after) along the axis.
    autograd::record_op("slice_axis", out, {&x}, [a, begin, end, shape = x.shape()](const NDArray& g) {
      std::vector<NDArray> parts;
      for (auto [from, to] : {std::pair{std::int64_t{0}, begin}, std::pair{end, shape[a]}}) {
        if (to <= from) continue;
        std::vector<std::int64_t> dims(shape.begin(), shape.end());
        dims[static_cast<std::size_t>(a)] = to - from;
        parts.push_back(zeros(Shape(dims), g.context(), g.dtype()));
      }
      if (begin > 0) parts.insert(parts.begin() + 1, g);
      else parts.insert(parts.begin(), g);
      return std::vector<NDArray>{concat(parts, a)};
    });
  }
  return out;
}

}  // namespace mx::nd
