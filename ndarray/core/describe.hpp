#pragma once
// Operand descriptions and argument checks for code built on the public ops (Gluon, user ops).
// Each check throws the typed mx::Error whose message names the op and the operands' shapes,
// dtypes and contexts.
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd {

// The shortest text that reads back as value: "-1", "0.1", "1e-12", "nan", "inf" (for messages and
// attributes).
std::string shortest_text(double value);

// "(2, 3) float32 @gpu(0)"; "(none)" for a default-constructed array.
std::string describe(const NDArray& x);

// mx::ValueError when x is a default-constructed NDArray.
void check_not_none(const char* op, const NDArray& x);
// mx::ContextMismatch naming both operands and the fix (copyto / as_in_context).
void check_same_context(const char* op, const NDArray& a, const NDArray& b);
void check_same_context(const char* op, const std::vector<NDArray>& arrays);
// mx::DTypeError naming both operands.
void check_same_dtype(const char* op, const NDArray& a, const NDArray& b);
// mx::DTypeError unless x is float32 or float64.
void check_floating(const char* op, const NDArray& x);

}  // namespace mx::nd
