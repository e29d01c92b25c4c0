#include "ndarray/elementwise.hpp"

#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"

namespace mx::nd {

NDArray binary(BinaryOp op, const NDArray& a, const NDArray& b) {
  const char* name = op_name(op);
  detail::check_same_context(name, a, b);
  detail::check_same_dtype(name, a, b);
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  NDArray out(shape, a.context(), a.dtype());
  backend(a.context()).binary(a.context(), op, a.dtype(), make_broadcast_index(shape, a.shape(), b.shape()),
                              a.data(), b.data(), out.data());
  return out;
}

namespace {

NDArray binary_scalar(BinaryOp op, const NDArray& a, double scalar, bool scalar_first) {
  detail::check_not_none(op_name(op), a);
  NDArray out(a.shape(), a.context(), a.dtype());
  backend(a.context()).binary_scalar(a.context(), op, a.dtype(), a.data(), scalar, scalar_first,
                                     out.data(), a.size());
  return out;
}

}  // namespace

NDArray binary(BinaryOp op, const NDArray& a, double scalar) { return binary_scalar(op, a, scalar, false); }
NDArray binary(BinaryOp op, double scalar, const NDArray& a) { return binary_scalar(op, a, scalar, true); }

NDArray unary(UnaryOp op, const NDArray& x) {
  detail::check_not_none(op_name(op), x);
  if (needs_floating(op)) detail::check_floating(op_name(op), x);
  NDArray out(x.shape(), x.context(), x.dtype());
  backend(x.context()).unary(x.context(), op, x.dtype(), x.data(), out.data(), x.size());
  return out;
}

}  // namespace mx::nd
