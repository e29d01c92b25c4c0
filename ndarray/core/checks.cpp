#include "ndarray/core/checks.hpp"

#include <charconv>

#include "ndarray/core/describe.hpp"

namespace mx::nd {

std::string shortest_text(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, result.ptr);
}

std::string describe(const NDArray& x) {
  if (x.is_none()) return "(none)";
  return x.shape().tuple_str() + " " + dtype_name(x.dtype()) + " @" + x.context().str();
}

void check_not_none(const char* op, const NDArray& x) {
  if (x.is_none()) throw ValueError(std::string(op) + ": the array is empty (a default-constructed NDArray)");
}

void check_same_context(const char* op, const NDArray& a, const NDArray& b) {
  check_not_none(op, a);
  check_not_none(op, b);
  if (a.context() != b.context()) {
    throw ContextMismatch(std::string(op) + ": operands are on different contexts: lhs " +
                          describe(a) + ", rhs " + describe(b) +
                          ". Move one first, e.g. rhs.copyto(" + a.context().str() +
                          ") or rhs.as_in_context(" + a.context().str() + ")");
  }
}

void check_same_context(const char* op, const std::vector<NDArray>& arrays) {
  for (const NDArray& x : arrays) check_not_none(op, x);
  for (std::size_t i = 1; i < arrays.size(); ++i) {
    if (arrays[i].context() != arrays[0].context()) {
      throw ContextMismatch(std::string(op) + ": operands are on different contexts: operand 0 " +
                            describe(arrays[0]) + ", operand " + std::to_string(i) + " " +
                            describe(arrays[i]) + ". Move them first with copyto(" +
                            arrays[0].context().str() + ") or as_in_context(...)");
    }
  }
}

void check_same_dtype(const char* op, const NDArray& a, const NDArray& b) {
  if (a.dtype() != b.dtype()) {
    throw DTypeError(std::string(op) + ": operands have different dtypes: lhs " + describe(a) +
                     ", rhs " + describe(b) + ". Convert one with astype(...)");
  }
}

void check_floating(const char* op, const NDArray& x) {
  if (!is_floating(x.dtype())) {
    throw DTypeError(std::string(op) + " supports float32 and float64, not " + dtype_name(x.dtype()) +
                     " (operand " + describe(x) + "); convert with astype(mx::DType::float32)");
  }
}

}  // namespace mx::nd

namespace mx::nd::detail {

void check_shape(const char* op, const Shape& shape, DType dtype) {
  std::int64_t bytes = static_cast<std::int64_t>(dtype_size(dtype));
  for (std::int64_t d : shape) {
    if (d < 0) throw ShapeError(std::string(op) + ": negative extent in shape " + shape.tuple_str());
  }
  for (std::int64_t d : shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      throw ShapeError(std::string(op) + ": shape " + shape.tuple_str() + " of " + dtype_name(dtype) +
                       " holds more bytes than fit in 63 bits");
    }
  }
}

}  // namespace mx::nd::detail
