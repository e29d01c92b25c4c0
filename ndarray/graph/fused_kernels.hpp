#pragma once
// One element of a fused elementwise program (ndarray/graph/fused.hpp), for the CUDA kernel: each
// instruction calls the functor of the op it stands for (the CPU loop in ndarray/graph/fused.cpp
// runs the same functors a block of elements at a time). Internal.
#include "ndarray/graph/fused.hpp"
#include "ndarray/ops/elementwise_functors.hpp"

namespace mx::op {

template <class T>
NDG_HD T fused_unary(UnaryOp op, T x) {
  switch (op) {
#define NDG_FUSED_CASE(NAME, ...) \
  case UnaryOp::NAME: return UnaryForward<UnaryOp::NAME>{}(x);
    NDG_UNARY_OPS(NDG_FUSED_CASE)
#undef NDG_FUSED_CASE
    default: return T(0);
  }
}

template <class T>
NDG_HD T fused_unary_backward(UnaryOp op, T g, T x, T y) {
  switch (op) {
#define NDG_FUSED_CASE(NAME, ...) \
  case UnaryOp::NAME: return UnaryBackward<UnaryOp::NAME>{}(g, x, y);
    NDG_UNARY_OPS(NDG_FUSED_CASE)
#undef NDG_FUSED_CASE
    default: return T(0);
  }
}

template <class T>
NDG_HD T fused_binary(BinaryOp op, T a, T b) {
  switch (op) {
#define NDG_FUSED_CASE(NAME, ...) \
  case BinaryOp::NAME: return BinaryForward<BinaryOp::NAME>{}(a, b);
    NDG_BINARY_OPS(NDG_FUSED_CASE)
#undef NDG_FUSED_CASE
    default: return T(0);
  }
}

template <class T>
NDG_HD T fused_scalar(BinaryOp op, T a, T scalar, bool reverse) {
  switch (op) {
#define NDG_FUSED_CASE(NAME, ...) \
  case BinaryOp::NAME: return ScalarForward<BinaryOp::NAME, T>{scalar, reverse}(a);
    NDG_BINARY_OPS(NDG_FUSED_CASE)
#undef NDG_FUSED_CASE
    default: return T(0);
  }
}

template <class T>
NDG_HD T fused_scalar_backward(BinaryOp op, T g, T a, T y, T scalar, bool reverse) {
  switch (op) {
#define NDG_FUSED_CASE(NAME, ...) \
  case BinaryOp::NAME: return ScalarBackward<BinaryOp::NAME, T>{scalar, reverse}(g, a, y);
    NDG_BINARY_OPS(NDG_FUSED_CASE)
#undef NDG_FUSED_CASE
    default: return T(0);
  }
}

// v: the slots, the inputs' elements filled in; the instructions' results are written after them.
template <class T>
NDG_HD void fused_run(const FusedProgram& p, T* v) {
  for (int j = 0; j < p.instrs; ++j) {
    const FusedInstr& in = p.code[j];
    T r{};
    switch (in.kind) {
      case FusedInstr::unary: r = fused_unary(static_cast<UnaryOp>(in.op), v[in.a]); break;
      case FusedInstr::binary: r = fused_binary(static_cast<BinaryOp>(in.op), v[in.a], v[in.b]); break;
      case FusedInstr::scalar: r = fused_scalar(static_cast<BinaryOp>(in.op), v[in.a], T(in.constant), in.reverse); break;
      case FusedInstr::unary_backward:
        r = fused_unary_backward(static_cast<UnaryOp>(in.op), v[in.a], v[in.b], v[in.c]);
        break;
      case FusedInstr::scalar_backward:
        r = fused_scalar_backward(static_cast<BinaryOp>(in.op), v[in.a], v[in.b], v[in.c], T(in.constant), in.reverse);
        break;
    }
    v[p.inputs + j] = r;
  }
}

}  // namespace mx::op
