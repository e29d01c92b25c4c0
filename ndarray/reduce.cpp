#include "ndarray/reduce.hpp"

#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"
#include "ndarray/elementwise.hpp"

namespace mx::nd {

NDArray reduce(ReduceOp op, const NDArray& x, std::optional<int> axis, bool keepdims) {
  const char* name = op_name(op);
  detail::check_not_none(name, x);
  const bool is_arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  const DType out_dtype = is_arg ? DType::float32 : x.dtype();
  ReduceShape rs;
  std::vector<std::int64_t> out_dims;
  if (!axis) {
    rs.length = x.size();
    out_dims.assign(keepdims ? static_cast<std::size_t>(std::max(x.ndim(), 1)) : 1, 1);
  } else {
    const int a = normalize_axis(name, *axis, x.shape());
    for (int d = 0; d < x.ndim(); ++d) {
      if (d < a) rs.outer *= x.shape()[d];
      if (d > a) rs.inner *= x.shape()[d];
      if (d != a) out_dims.push_back(x.shape()[d]);
      else if (keepdims) out_dims.push_back(1);
    }
    rs.length = x.shape()[a];
    if (out_dims.empty()) out_dims.push_back(1);  // MXNet 1.x has no 0-d arrays
  }
  if (rs.length == 0 && op != ReduceOp::sum) {
    throw ShapeError(std::string(name) + ": zero-size reduction on " + detail::describe(x) +
                     (axis ? " along axis " + std::to_string(*axis) : std::string()) +
                     " has no identity");
  }
  NDArray out(Shape(out_dims), x.context(), out_dtype);
  backend(x.context()).reduce(x.context(), op, x.dtype(), x.data(), out.data(), rs);
  return out;
}

NDArray mean(const NDArray& x, std::optional<int> axis, bool keepdims) {
  detail::check_floating("mean", x);
  NDArray total = sum(x, axis, keepdims);
  const std::int64_t count = axis ? x.shape()[normalize_axis("mean", *axis, x.shape())] : x.size();
  total /= static_cast<double>(count);
  return total;
}

NDArray norm(const NDArray& x) {
  detail::check_floating("norm", x);
  return sqrt(sum(square(x)));
}

}  // namespace mx::nd
