#include "ndarray/elementwise.hpp"

#include "ndarray/autograd.hpp"
#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"
#include "ndarray/creation.hpp"

namespace mx::nd {

namespace {

using Grads = std::vector<NDArray>;

// Gradients of out = a op b with respect to a and b, before undoing broadcasting.
Grads binary_grads(BinaryOp op, const NDArray& g, const NDArray& a, const NDArray& b, const NDArray& out) {
  switch (op) {
    case BinaryOp::add: return {g, g};
    case BinaryOp::subtract: return {g, -g};
    case BinaryOp::multiply: return {g * b, g * a};
    case BinaryOp::divide: return {g / b, -g * out / b};
    case BinaryOp::power: return {g * b * power(a, b - 1.0), g * out * log(a)};
    case BinaryOp::maximum: return {g * (a >= b), g * (a < b)};
    case BinaryOp::minimum: return {g * (a <= b), g * (a > b)};
    default: return {NDArray(), NDArray()};  // comparisons: piecewise constant
  }
}

// Gradient of out = a op s (or s op a when scalar_first) with respect to a.
NDArray scalar_grad(BinaryOp op, const NDArray& g, const NDArray& a, double s, bool scalar_first, const NDArray& out) {
  switch (op) {
    case BinaryOp::add: return g;
    case BinaryOp::subtract: return scalar_first ? -g : g;
    case BinaryOp::multiply: return g * s;
    case BinaryOp::divide: return scalar_first ? -g * out / a : g / s;
    case BinaryOp::power: return scalar_first ? g * out * std::log(s) : g * s * power(a, s - 1.0);
    case BinaryOp::maximum: return scalar_first ? g * (a > s) : g * (a >= s);
    case BinaryOp::minimum: return scalar_first ? g * (a < s) : g * (a <= s);
    default: return NDArray();
  }
}

NDArray unary_grad(UnaryOp op, const NDArray& g, const NDArray& x, const NDArray& out) {
  switch (op) {
    case UnaryOp::negative: return -g;
    case UnaryOp::abs: return g * sign(x);
    case UnaryOp::square: return g * x * 2.0;
    case UnaryOp::sqrt: return g / (out * 2.0);
    case UnaryOp::exp: return g * out;
    case UnaryOp::log: return g / x;
    case UnaryOp::relu: return g * (x > 0.0);
    case UnaryOp::sigmoid: return g * out * (1.0 - out);
    case UnaryOp::tanh: return g * (1.0 - square(out));
    case UnaryOp::softrelu: return g * sigmoid(x);
    default: return NDArray();  // sign: piecewise constant
  }
}

}  // namespace

NDArray binary(BinaryOp op, const NDArray& a, const NDArray& b) {
  const char* name = op_name(op);
  detail::check_same_context(name, a, b);
  detail::check_same_dtype(name, a, b);
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  NDArray out(shape, a.context(), a.dtype());
  backend(a.context()).binary(a.context(), op, a.dtype(), make_broadcast_index(name, shape, a.shape(), b.shape()),
                              a.data(), b.data(), out.data());
  if (autograd::needs_record({&a, &b})) {
    autograd::record_op(name, out, {&a, &b},
                        [op, a = a.detach(), b = b.detach(), out = out.detach()](const NDArray& g) -> Grads {
                          Grads grads = binary_grads(op, g, a, b, out);
                          if (!grads[0].is_none()) grads[0] = detail::sum_to(grads[0], a.shape());
                          if (!grads[1].is_none()) grads[1] = detail::sum_to(grads[1], b.shape());
                          return grads;
                        });
  }
  return out;
}

namespace {

NDArray binary_scalar(BinaryOp op, const NDArray& a, double scalar, bool scalar_first) {
  detail::check_not_none(op_name(op), a);
  NDArray out(a.shape(), a.context(), a.dtype());
  backend(a.context()).binary_scalar(a.context(), op, a.dtype(), a.data(), scalar, scalar_first, out.data(), a.size());
  if (autograd::needs_record({&a})) {
    autograd::record_op(op_name(op), out, {&a},
                        [op, scalar, scalar_first, a = a.detach(), out = out.detach()](const NDArray& g) -> Grads {
                          return {scalar_grad(op, g, a, scalar, scalar_first, out)};
                        });
  }
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
  if (autograd::needs_record({&x})) {
    autograd::record_op(op_name(op), out, {&x}, [op, x = x.detach(), out = out.detach()](const NDArray& g) -> Grads {
      return {unary_grad(op, g, x, out)};
    });
  }
  return out;
}

}  // namespace mx::nd
