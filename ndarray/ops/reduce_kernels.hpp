#pragma once
// The reduction family's attributes and GPU launch (ndarray/ops/reduce.cpp defines the ops, their
// gradients and CPU loops; cuda/ops/reduce.cu the launch). Internal.
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

// sum, max, min, argmax, argmin: over every element (result (1,), as MXNet 1.x) or one axis.
struct ReduceParams {
  ReduceOp op = ReduceOp::sum;
  int axis = 0;
  bool has_axis = false;  // false: every element
  bool keepdims = false;
};

// shape as (outer, length, inner) around `axis` (normalised): the lines a reduction or softmax runs
// along.
ReduceShape around_axis(const Shape& shape, int axis);

// The registered reduction (sum, max, ...), for ops that run one as part of their own kernel.
const OpDef& reduce_op(ReduceOp op);

// The input as (outer, length, inner) around the reduced axis; length is every element when the
// reduction has no axis.
ReduceShape reduce_shape(const Invocation& inv);

namespace gpu {
void reduce(const ExecContext& ec, const Invocation& inv);
}

}  // namespace mx::op
