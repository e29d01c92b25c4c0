#pragma once
// Argument checks shared by the op front ends. Each throws the typed mx::Error whose message
// names the op and the operands' shapes, dtypes and contexts.
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"
#include "ndarray/core/describe.hpp"

namespace mx::nd::detail {

// The public checks (ndarray/core/describe.hpp), under the names the op front ends use.
using nd::check_floating;
using nd::check_not_none;
using nd::check_same_context;
using nd::check_same_dtype;
using nd::describe;

// Every extent >= 0, and the array's bytes countable in 63 bits: a shape an array can have.
void check_shape(const char* op, const Shape& shape, DType dtype);

// The gradient of a broadcast operand: grad summed over the axes along which an operand of
// `shape` was broadcast (NumPy rules), reshaped to `shape`.
NDArray sum_to(const NDArray& grad, const Shape& shape);

}  // namespace mx::nd::detail
