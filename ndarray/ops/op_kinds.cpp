#include "ndarray/ops/op_kinds.hpp"

namespace mx {

#define NDG_OP_NAME(NAME, ...) #NAME,
const char* op_name(BinaryOp op) {
  static const char* const names[] = {NDG_BINARY_OPS(NDG_OP_NAME)};
  return names[static_cast<int>(op)];
}

const char* op_name(UnaryOp op) {
  static const char* const names[] = {NDG_UNARY_OPS(NDG_OP_NAME)};
  return names[static_cast<int>(op)];
}
#undef NDG_OP_NAME

const char* op_name(ReduceOp op) {
  static const char* const names[] = {"sum", "max", "min", "argmax", "argmin"};
  return names[static_cast<int>(op)];
}

bool needs_floating(UnaryOp op) {
#define NDG_OP_FLOATING(NAME, FLOATING, ...) FLOATING,
  static constexpr bool floating[] = {NDG_UNARY_OPS(NDG_OP_FLOATING)};
#undef NDG_OP_FLOATING
  return floating[static_cast<int>(op)];
}

}  // namespace mx
