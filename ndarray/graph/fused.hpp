#pragma once
// Elementwise fusion of replayed graphs (graph::Executor). A run of consecutive elementwise steps
// of one dtype (float32, float16 or bfloat16) over one element count (unary ops, binary ops of one
// shape, scalar ops and their gradients) becomes one step, _FusedElementwise, that computes them
// all per element in registers and writes only the values that are read after the run: one
// kernel launch instead of one per op, which is what a replayed graph of small ops pays for. Each
// instruction calls the functor the op's own kernels call (elementwise_functors.hpp) on the run's
// element type, which rounds each result to it as the op's kernel does when it stores it, so the
// values are bit-identical to the steps it replaces. Internal.
#include <cstdint>
#include <memory>
#include <vector>

#include "ndarray/core/dtype.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

struct FusedInstr {
  enum Kind : std::uint8_t { unary, binary, scalar, unary_backward, scalar_backward };
  Kind kind = unary;
  std::uint8_t op = 0;        // the UnaryOp or BinaryOp
  bool reverse = false;       // scalar ops: scalar op a
  std::uint8_t a = 0, b = 0, c = 0;  // operand slots (gradients: g, x, y)
  // Scalar ops: the scalar as float, which each of the three element types converts exactly as its
  // kernel converts the op's double (HalfType(double) goes through float).
  float constant = 0;
};

inline constexpr int kFusedMaxInputs = 8, kFusedMaxOutputs = 8, kFusedMaxInstrs = 24;

// Slots 0 .. inputs-1 hold the inputs' elements, inputs + j instruction j's result.
struct FusedProgram {
  DType dtype = DType::float32;  // of every input, value and output
  std::uint8_t inputs = 0, outputs = 0, instrs = 0;
  std::uint8_t out_slot[kFusedMaxOutputs] = {};
  FusedInstr code[kFusedMaxInstrs] = {};
};

// The Params of _FusedElementwise: the program, owned by whoever planned the steps.
struct FusedParams {
  const FusedProgram* program = nullptr;
};

const OpDef& fused_elementwise_op();

// What the executor knows of a step: its graph node, the last node that reads its output (INT_MAX:
// read after the run), and whether a node without a step (a view) lies between it and the step
// before, which ends a run.
struct StepUse {
  int node = 0;
  int last_use = 0;
  bool after_view = false;
};

// Replaces each run of two or more fusable steps by one _FusedElementwise step; `programs` keeps
// the programs the new steps point to. steps[i] and uses[i] describe the same step.
void fuse_elementwise(std::vector<Invocation>& steps, const std::vector<StepUse>& uses,
                      std::vector<std::unique_ptr<FusedProgram>>& programs);

namespace gpu {
void fused_elementwise(const ExecContext& ec, const Invocation& inv);
}

}  // namespace mx::op
