#pragma once
// The manipulation family's GPU launch (ndarray/ops/manipulation.cpp defines the ops and the CPU
// loop; cuda/ops/manipulation.cu the cast launch). Internal.
#include "ndarray/ops/op.hpp"

namespace mx::op {

struct CastParams {
  DType dtype = DType::float32;  // the result's
};

namespace gpu {
void cast(const ExecContext& ec, const Invocation& inv);
}

}  // namespace mx::op
