#pragma once
// The optimizer family's registered ops and GPU entry points (ndarray/ops/optimizer.cpp defines
// the ops and the CPU loops, cuda/ops/optimizer.cu the GPU launches). Internal.
//
// Each op updates in place, run with invoke_into: inputs weight, grad, then the states (mom, or
// mean and var); outputs the same weight and states. Params: a functors::OptimizerStep.
#include "ndarray/functors.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

const OpDef& sgd_update_op();
const OpDef& sgd_mom_update_op();
const OpDef& adam_update_op();

namespace gpu {
void sgd_update(const ExecContext& ec, const Invocation& inv);  // sgd_update and sgd_mom_update
void adam_update(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
