#pragma once
// Reductions over every element (result shape (1,), as in MXNet 1.x) or along one axis.
// argmax/argmin return float32 positions, as MXNet does.
#include <optional>

#include "ndarray/core/array.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::nd {

NDArray reduce(ReduceOp op, const NDArray& x, std::optional<int> axis = {}, bool keepdims = false);

inline NDArray sum(const NDArray& x, std::optional<int> axis = {}, bool keepdims = false) {
  return reduce(ReduceOp::sum, x, axis, keepdims);
}
NDArray mean(const NDArray& x, std::optional<int> axis = {}, bool keepdims = false);
inline NDArray max(const NDArray& x, std::optional<int> axis = {}, bool keepdims = false) {
  return reduce(ReduceOp::max, x, axis, keepdims);
}
inline NDArray min(const NDArray& x, std::optional<int> axis = {}, bool keepdims = false) {
  return reduce(ReduceOp::min, x, axis, keepdims);
}
inline NDArray argmax(const NDArray& x, std::optional<int> axis = {}, bool keepdims = false) {
  return reduce(ReduceOp::argmax, x, axis, keepdims);
}
inline NDArray argmin(const NDArray& x, std::optional<int> axis = {}, bool keepdims = false) {
  return reduce(ReduceOp::argmin, x, axis, keepdims);
}
// L2 norm of every element: sqrt(sum(x * x)), shape (1,).
NDArray norm(const NDArray& x);

}  // namespace mx::nd
