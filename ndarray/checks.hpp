#pragma once
// Argument checks shared by the op front ends. Each throws the typed mx::Error whose message
// names the op and the operands' shapes, dtypes and contexts.
#include <string>
#include <vector>

#include "ndarray/array.hpp"

namespace mx::nd::detail {

// "(2, 3) float32 @gpu(0)"
std::string describe(const NDArray& x);

void check_not_none(const char* op, const NDArray& x);
void check_same_context(const char* op, const NDArray& a, const NDArray& b);
void check_same_context(const char* op, const std::vector<NDArray>& arrays);
void check_same_dtype(const char* op, const NDArray& a, const NDArray& b);
void check_floating(const char* op, const NDArray& x);
// Every extent >= 0, and the array's bytes countable in 63 bits: a shape an array can have.
void check_shape(const char* op, const Shape& shape, DType dtype);

// The gradient of a broadcast operand: grad summed over the axes along which an operand of
// `shape` was broadcast (NumPy rules), reshaped to `shape`.
NDArray sum_to(const NDArray& grad, const Shape& shape);

}  // namespace mx::nd::detail
