#pragma once
// The op kinds within the elementwise and reduction families (the elementwise ones generated from
// ndarray/ops/elementwise_list.hpp); `count` is the number of kinds.
#include <cstdint>

#include "ndarray/ops/elementwise_list.hpp"

namespace mx {

#define NDG_OP_ENUM(NAME, ...) NAME,
enum class BinaryOp : std::uint8_t { NDG_BINARY_OPS(NDG_OP_ENUM) count };
enum class UnaryOp : std::uint8_t { NDG_UNARY_OPS(NDG_OP_ENUM) count };
#undef NDG_OP_ENUM

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
