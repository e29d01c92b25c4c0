#include "ndarray/reduce.hpp"

#include "ndarray/autograd.hpp"
#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"
#include "ndarray/contiguous.hpp"
#include "ndarray/elementwise.hpp"
#include "ndarray/manipulation.hpp"

namespace mx::nd {

namespace detail {

NDArray sum_to(const NDArray& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  if (shape.ndim() == 0) return sum(grad).reshape(shape);  // sum keeps one axis: MXNet has no 0-d result
  NDArray r = grad;
  while (r.ndim() > shape.ndim()) r = sum(r, 0);
  for (int d = 0; d < shape.ndim(); ++d) {
    if (shape[d] == 1 && r.shape()[d] != 1) r = sum(r, d, true);
  }
  return r.reshape(shape);
}

}  // namespace detail

namespace {

// The reduced result (or its gradient) reshaped so that it broadcasts against the input.
NDArray expand_reduced(const NDArray& r, const Shape& input, std::optional<int> axis) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(input.ndim()), 1);
  if (axis) {
    const int a = normalize_axis("reduce", *axis, input);
    for (int d = 0; d < input.ndim(); ++d) dims[static_cast<std::size_t>(d)] = d == a ? 1 : input[d];
  }
  return r.reshape(Shape(dims));
}

}  // namespace

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
  backend(x.context()).reduce(x.context(), op, x.dtype(), detail::dense(x).data(), out.data(), rs);
  if (!is_arg && autograd::needs_record({&x})) {
    autograd::record_op(name, out, {&x}, [op, axis, x = x.detach(), out = out.detach()](const NDArray& g) {
      const NDArray spread = broadcast_to(expand_reduced(g, x.shape(), axis), x.shape());
      if (op == ReduceOp::sum) return std::vector<NDArray>{spread};
      // max/min: the gradient goes to every element equal to the extreme.
      return std::vector<NDArray>{spread * (x == expand_reduced(out, x.shape(), axis))};
    });
  }
  return out;
}

NDArray mean(const NDArray& x, std::optional<int> axis, bool keepdims) {
  detail::check_floating("mean", x);
  const std::int64_t count = axis ? x.shape()[normalize_axis("mean", *axis, x.shape())] : x.size();
  return sum(x, axis, keepdims) / static_cast<double>(count);
}

NDArray norm(const NDArray& x) {
  detail::check_floating("norm", x);
  return sqrt(sum(square(x)));
}

}  // namespace mx::nd
