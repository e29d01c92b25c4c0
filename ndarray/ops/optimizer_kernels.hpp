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
//
// The mp_ ops (multi_precision, MXNet's mp_sgd_update, mp_sgd_mom_update, mp_adam_update and
// multi_mp_sgd_update, multi_mp_sgd_mom_update) take a float32 master copy of the weight (w32)
// after the states, as inputs and outputs, and keep their states in float32: the step is computed
// from w32 and written to it, and the weight (float16 or bfloat16) gets it rounded.
#include "ndarray/ops/functors.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

const OpDef& sgd_update_op();
const OpDef& sgd_mom_update_op();
const OpDef& adam_update_op();
const OpDef& multi_sgd_update_op();
const OpDef& multi_sgd_mom_update_op();

const OpDef& mp_sgd_update_op();
const OpDef& mp_sgd_mom_update_op();
const OpDef& mp_adam_update_op();
const OpDef& multi_mp_sgd_update_op();
const OpDef& multi_mp_sgd_mom_update_op();

// The operands of an update op, per weight: w, g, [mom,] [w32] (sgd ops; Adam's are w, g, mean,
// var, [w32]).
struct UpdateLayout {
  bool momentum = false, master = false;
  std::size_t per_weight() const { return 2 + (momentum ? 1 : 0) + (master ? 1 : 0); }  // sgd ops
};
UpdateLayout update_layout(const OpDef* op);
// The dtype of an update's states for a weight dtype: float32 under multi_precision.
DType state_dtype(const OpDef* op, DType weight);

// multi_all_finite (MXNet's contrib op): whether every element of its inputs is finite.
const OpDef& multi_all_finite_op();
struct AllFiniteParams {
  std::int32_t num_arrays = 1;
};

// The update kernels' dispatch: calls fn(T{}, S{}) with T the weight's type and S the states' (float under multi_precision).
template <class Fn>
void dispatch_update(const Invocation& inv, DType weight, Fn&& fn) {
  dispatch_floating(weight, inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    if (update_layout(inv.op).master) fn(T{}, float{});
    else fn(T{}, T{});
  });
}

struct MultiStep {
  functors::OptimizerStep step;  // one lr and wd for every weight of the list
  std::int32_t num_weights = 0;
};

namespace gpu {
void sgd_update(const ExecContext& ec, const Invocation& inv);  // sgd_update and sgd_mom_update
void adam_update(const ExecContext& ec, const Invocation& inv);
void multi_sgd_update(const ExecContext& ec, const Invocation& inv);  // both multi-tensor ops
void all_finite(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
