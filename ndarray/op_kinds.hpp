#pragma once
// The op families a backend implements. Each enum value indexes the backends' dispatch tables;
// `count` is the table size.
#include <cstdint>

namespace mx {

enum class BinaryOp : std::uint8_t {
  add, subtract, multiply, divide, power, maximum, minimum,
  equal, not_equal, greater, greater_equal, less, less_equal,
  count
};

enum class UnaryOp : std::uint8_t {
  negative, abs, square, sqrt, exp, log, relu, sigmoid, tanh, softrelu, sign,
  count
};

enum class ReduceOp : std::uint8_t { sum, max, min, argmax, argmin, count };

const char* op_name(BinaryOp op);  // "add"
const char* op_name(UnaryOp op);   // "exp"
const char* op_name(ReduceOp op);  // "sum"

// Ops whose result is meaningful only for floating types (exp of an int32 is refused).
bool needs_floating(UnaryOp op);

// A reduction viewed as (outer, length, inner): out[o, i] = reduce_k in[o, k, i].
struct ReduceShape {
  std::int64_t outer = 1, length = 1, inner = 1;
};

}  // namespace mx
