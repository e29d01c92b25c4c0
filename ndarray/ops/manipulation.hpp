#pragma once
// Shape manipulation. reshape, transpose, swapaxes and broadcast_to return views of the same
// storage (shape, strides, offset), as NumPy's; concat, slice_axis, cast and pick copy.
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd {

inline NDArray reshape(const NDArray& x, const Shape& shape) { return x.reshape(shape); }
// Permutes the axes (default: reversed): a view with permuted strides. (mx.nd.transpose copies;
// this one, as numpy.transpose, does not: x.transpose(...).copy() for a new array.)
NDArray transpose(const NDArray& x, const std::vector<int>& axes = {});
// Interchanges two axes (negative counts from the end): a view, as mx.nd.swapaxes' values.
NDArray swapaxes(const NDArray& x, int axis1, int axis2);
// Joins arrays along an existing axis; all on one context, same dtype, other extents equal.
NDArray concat(const std::vector<NDArray>& arrays, int axis = 0);
// Elements [begin, end) along axis, copied.
NDArray slice_axis(const NDArray& x, int axis, std::int64_t begin, std::int64_t end);
// x repeated along its extent-1 axes to `shape` (NumPy broadcasting rules): a read-only view with
// stride 0 on the repeated axes, as numpy.broadcast_to.
NDArray broadcast_to(const NDArray& x, const Shape& shape);
// x's values converted to dtype (C++ conversions: floats to integers truncate toward zero), as
// mx.nd.cast; x.astype(dtype) is the same. A copy even when dtype is x's.
NDArray cast(const NDArray& x, DType dtype);
// data's elements at index along axis, as mx.nd.pick: out[i, j] = data[i, index[i, j], j] around
// the axis. data (d_0, ..., d_axis, ..., d_n), index shaped as data without the axis or with extent
// 1 there, in any dtype (floats truncate toward zero) -> data's shape without the axis (keepdims:
// with extent 1 there), in data's dtype. mode "clip" clips indices to [0, d_axis - 1], "wrap" takes
// them modulo d_axis. The gradient flows to data only: zero where nothing was picked.
NDArray pick(const NDArray& data, const NDArray& index, int axis = -1, bool keepdims = false,
             const std::string& mode = "clip");

}  // namespace mx::nd
