#include "ndarray/op_kinds.hpp"

namespace mx {

const char* op_name(BinaryOp op) {
  static const char* const names[] = {"add", "subtract", "multiply", "divide", "power", "maximum",
                                      "minimum", "equal", "not_equal", "greater", "greater_equal",
                                      "less", "less_equal"};
  return names[static_cast<int>(op)];
}

const char* op_name(UnaryOp op) {
  static const char* const names[] = {"negative", "abs",   "square", "sqrt",     "exp", "log",
                                      "relu",     "sigmoid", "tanh", "softrelu", "sign"};
  return names[static_cast<int>(op)];
}

const char* op_name(ReduceOp op) {
  static const char* const names[] = {"sum", "max", "min", "argmax", "argmin"};
  return names[static_cast<int>(op)];
}

bool needs_floating(UnaryOp op) {
  switch (op) {
    case UnaryOp::sqrt: case UnaryOp::exp: case UnaryOp::log: case UnaryOp::sigmoid:
    case UnaryOp::tanh: case UnaryOp::softrelu:
      return true;
    default:
      return false;
  }
}

}  // namespace mx
