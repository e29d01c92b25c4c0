#pragma once
// The softmax family's attributes and GPU launch (ndarray/ops/softmax.cpp defines the ops and the
// CPU loop, cuda/ops/softmax.cu the launch). Internal.
#include "ndarray/op_kinds.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

struct SoftmaxParams {
  int axis = -1;
  bool log = false;  // log_softmax
};

// The input as (outer, length, inner) lines along the op's axis.
ReduceShape softmax_shape(const Invocation& inv);

namespace gpu {
void softmax(const ExecContext& ec, const Invocation& inv);
}

}  // namespace mx::op
