#include "ndarray/softmax.hpp"

#include "ndarray/checks.hpp"
#include "ndarray/creation.hpp"
#include "ndarray/elementwise.hpp"
#include "ndarray/reduce.hpp"

namespace mx::nd {

NDArray log_softmax(const NDArray& x, int axis) {
  detail::check_floating("log_softmax", x);
  // The shift is a constant for the gradient: it cancels out of log_softmax.
  const NDArray shifted = x - max(x, axis, true).detach();
  return shifted - log(sum(exp(shifted), axis, true));
}

NDArray softmax(const NDArray& x, int axis) {
  detail::check_floating("softmax", x);
  const NDArray e = exp(x - max(x, axis, true).detach());
  return e / sum(e, axis, true);
}

NDArray one_hot(const NDArray& indices, std::int64_t depth, DType dtype) {
  detail::check_not_none("one_hot", indices);
  if (depth <= 0) throw ValueError("one_hot: depth must be positive, got " + std::to_string(depth));
  std::vector<std::int64_t> dims(indices.shape().begin(), indices.shape().end());
  dims.push_back(1);
  const NDArray classes = arange(0.0, static_cast<double>(depth), 1.0, indices.context(), dtype);
  return equal(indices.detach().astype(dtype).reshape(Shape(dims)), classes);
}

}  // namespace mx::nd
