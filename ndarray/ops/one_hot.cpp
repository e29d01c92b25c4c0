#include "ndarray/ops/softmax.hpp"

#include "ndarray/core/checks.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"

namespace mx::nd {

NDArray one_hot(const NDArray& indices, std::int64_t depth, DType dtype) {
  detail::check_not_none("one_hot", indices);
  if (depth <= 0) throw ValueError("one_hot: depth must be positive, got " + std::to_string(depth));
  std::vector<std::int64_t> dims(indices.shape().begin(), indices.shape().end());
  dims.push_back(1);
  // Compared in the indices' dtype, so that no index wraps into range; in float64 when that dtype
  // cannot count to depth exactly (uint8 past 256 classes, float32 past 2^24).
  const DType idx = indices.dtype();
  const double exact_up_to = idx == DType::uint8 ? 256.0 : idx == DType::float32 ? 16777216.0 : 9007199254740992.0;
  const DType compare = static_cast<double>(depth) <= exact_up_to ? idx : DType::float64;
  const NDArray classes = arange(0.0, static_cast<double>(depth), 1.0, indices.context(), compare);
  // Recorded as MXNet records one_hot: its input gets a zero gradient (Note [zero gradients]).
  const NDArray mask = equal(indices.astype(compare).reshape(Shape(dims)), classes);
  return mask.dtype() == dtype ? mask : mask.astype(dtype);
}

}  // namespace mx::nd
