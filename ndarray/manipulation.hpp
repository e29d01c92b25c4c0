#pragma once
// Shape manipulation: reshape and first-axis slices are views (NDArray methods); these functions
// copy.
#include <vector>

#include "ndarray/array.hpp"

namespace mx::nd {

inline NDArray reshape(const NDArray& x, const Shape& shape) { return x.reshape(shape); }
// Permutes the axes (default: reversed), into a new array as mx.nd.transpose. (x.T() is a view
// where the data layout allows.)
NDArray transpose(const NDArray& x, const std::vector<int>& axes = {});
namespace detail {
// The reversed axes: a view when no two axes of extent > 1 swap, else a copy. NDArray::T().
NDArray transpose_view(const NDArray& x);
}  // namespace detail
// Joins arrays along an existing axis; all on one context, same dtype, other extents equal.
NDArray concat(const std::vector<NDArray>& arrays, int axis = 0);
// Elements [begin, end) along axis, copied.
NDArray slice_axis(const NDArray& x, int axis, std::int64_t begin, std::int64_t end);
// x repeated along its extent-1 axes to `shape` (NumPy broadcasting rules).
NDArray broadcast_to(const NDArray& x, const Shape& shape);

}  // namespace mx::nd
