#pragma once
// Shape manipulation: reshape and first-axis slices are views (NDArray methods); these functions
// copy.
#include <vector>

#include "ndarray/array.hpp"

namespace mx::nd {

inline NDArray reshape(const NDArray& x, const Shape& shape) { return x.reshape(shape); }
// Permutes the axes (default: reversed).
NDArray transpose(const NDArray& x, const std::vector<int>& axes = {});
// Joins arrays along an existing axis; all on one context, same dtype, other extents equal.
NDArray concat(const std::vector<NDArray>& arrays, int axis = 0);
// Elements [begin, end) along axis, copied.
NDArray slice_axis(const NDArray& x, int axis, std::int64_t begin, std::int64_t end);
// x repeated along its extent-1 axes to `shape` (NumPy broadcasting rules).
NDArray broadcast_to(const NDArray& x, const Shape& shape);

}  // namespace mx::nd
