#pragma once
// The elementwise family's registered ops and kernel entry points (ndarray/ops/elementwise.cpp
// defines the ops and the CPU loops, cuda/ops/elementwise.cu the GPU launches). Internal.
#include "ndarray/core/strided_index.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

// The attributes of `a op scalar` (reverse: `scalar op a`).
struct ScalarParams {
  double scalar = 0;
  bool reverse = false;
};

const OpDef& unary_op(UnaryOp op);
const OpDef& binary_op(BinaryOp op);
const OpDef& scalar_op(BinaryOp op);
// inputs g, x, y -> g * dy/dx (activations take x = y: their derivatives are written from y).
const OpDef& unary_backward_op(UnaryOp op);
// inputs g, a, y -> g * dy/da of `a op scalar` (or `scalar op a`).
const OpDef& scalar_backward_op(BinaryOp op);

// How a binary invocation reads its operands: a, b broadcast to the output (forward), or to the
// gradient's shape (inputs g, a, b, y of the backward).
BroadcastIndex binary_index(const Invocation& inv);
BroadcastIndex binary_backward_index(const Invocation& inv);

namespace gpu {
template <UnaryOp op> void unary(const ExecContext& ec, const Invocation& inv);
template <UnaryOp op> void unary_backward(const ExecContext& ec, const Invocation& inv);
template <BinaryOp op> void binary(const ExecContext& ec, const Invocation& inv);
template <BinaryOp op> void binary_backward(const ExecContext& ec, const Invocation& inv);
template <BinaryOp op> void scalar(const ExecContext& ec, const Invocation& inv);
template <BinaryOp op> void scalar_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
