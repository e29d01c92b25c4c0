#pragma once
// Elementwise ops with NumPy broadcasting. Both operands must be on one context (else
// mx::ContextMismatch) and of one dtype (else mx::DTypeError); comparisons give 0/1 masks of the
// operands' dtype, as in MXNet.
#include "ndarray/core/array.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::nd {

NDArray binary(BinaryOp op, const NDArray& a, const NDArray& b);
NDArray binary(BinaryOp op, const NDArray& a, double scalar);
NDArray binary(BinaryOp op, double scalar, const NDArray& a);
NDArray unary(UnaryOp op, const NDArray& x);

#define NDG_BINARY_OPERATOR(SYMBOL, OP)                                                            \
  inline NDArray operator SYMBOL(const NDArray& a, const NDArray& b) { return binary(OP, a, b); } \
  inline NDArray operator SYMBOL(const NDArray& a, double b) { return binary(OP, a, b); }         \
  inline NDArray operator SYMBOL(double a, const NDArray& b) { return binary(OP, a, b); }
NDG_BINARY_OPERATOR(+, BinaryOp::add)
NDG_BINARY_OPERATOR(-, BinaryOp::subtract)
NDG_BINARY_OPERATOR(*, BinaryOp::multiply)
NDG_BINARY_OPERATOR(/, BinaryOp::divide)
NDG_BINARY_OPERATOR(==, BinaryOp::equal)
NDG_BINARY_OPERATOR(!=, BinaryOp::not_equal)
NDG_BINARY_OPERATOR(>, BinaryOp::greater)
NDG_BINARY_OPERATOR(>=, BinaryOp::greater_equal)
NDG_BINARY_OPERATOR(<, BinaryOp::less)
NDG_BINARY_OPERATOR(<=, BinaryOp::less_equal)
#undef NDG_BINARY_OPERATOR

inline NDArray operator-(const NDArray& x) { return unary(UnaryOp::negative, x); }

#define NDG_BINARY_FUNCTION(NAME, OP)                                                       \
  inline NDArray NAME(const NDArray& a, const NDArray& b) { return binary(OP, a, b); }     \
  inline NDArray NAME(const NDArray& a, double b) { return binary(OP, a, b); }             \
  inline NDArray NAME(double a, const NDArray& b) { return binary(OP, a, b); }
NDG_BINARY_FUNCTION(add, BinaryOp::add)
NDG_BINARY_FUNCTION(subtract, BinaryOp::subtract)
NDG_BINARY_FUNCTION(multiply, BinaryOp::multiply)
NDG_BINARY_FUNCTION(divide, BinaryOp::divide)
NDG_BINARY_FUNCTION(power, BinaryOp::power)
NDG_BINARY_FUNCTION(maximum, BinaryOp::maximum)
NDG_BINARY_FUNCTION(minimum, BinaryOp::minimum)
NDG_BINARY_FUNCTION(equal, BinaryOp::equal)
NDG_BINARY_FUNCTION(not_equal, BinaryOp::not_equal)
NDG_BINARY_FUNCTION(greater, BinaryOp::greater)
NDG_BINARY_FUNCTION(greater_equal, BinaryOp::greater_equal)
NDG_BINARY_FUNCTION(lesser, BinaryOp::less)
NDG_BINARY_FUNCTION(lesser_equal, BinaryOp::less_equal)
#undef NDG_BINARY_FUNCTION

// pow(x, 2) is MXNet's power.
inline NDArray pow(const NDArray& a, const NDArray& b) { return binary(BinaryOp::power, a, b); }
inline NDArray pow(const NDArray& a, double b) { return binary(BinaryOp::power, a, b); }

// One function per line of ndarray/ops/elementwise_list.hpp: nd::exp, nd::relu, nd::gelu, ...
#define NDG_UNARY_FUNCTION(NAME, ...) \
  inline NDArray NAME(const NDArray& x) { return unary(UnaryOp::NAME, x); }
NDG_UNARY_OPS(NDG_UNARY_FUNCTION)
#undef NDG_UNARY_FUNCTION

}  // namespace mx::nd
