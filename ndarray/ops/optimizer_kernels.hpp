#pragma once
// The optimizer family's registered ops and GPU entry points (ndarray/ops/optimizer.cpp defines
// the ops and the CPU loops, cuda/ops/optimizer.cu the GPU launches). Internal.
//
// Each op updates in place, run with invoke_into: inputs weight, grad, then the states (mom, or
// mean and var); outputs the same weight and states. Params: a functors::OptimizerStep.
//
// The multi-tensor ops (MXNet's multi_sgd_update, multi_sgd_mom_update) update a list of weights
// in one launch: inputs w0, g0, [m0,] w1, g1, [m1,] ...; outputs w0, [m0,] w1, [m1,] ...; params a
// MultiStep. Every array has one dtype; each weight's grad and state have its shape.
#include "ndarray/functors.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

const OpDef& sgd_update_op();
const OpDef& sgd_mom_update_op();
const OpDef& adam_update_op();
const OpDef& multi_sgd_update_op();
const OpDef& multi_sgd_mom_update_op();

struct MultiStep {
  functors::OptimizerStep step;  // one lr and wd for every weight of the list
  std::int32_t num_weights = 0;
};

namespace gpu {
void sgd_update(const ExecContext& ec, const Invocation& inv);  // sgd_update and sgd_mom_update
void adam_update(const ExecContext& ec, const Invocation& inv);
void multi_sgd_update(const ExecContext& ec, const Invocation& inv);  // both multi-tensor ops
}  // namespace gpu

}  // namespace mx::op
