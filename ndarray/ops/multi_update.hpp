#pragma once
// _multi_update (ndarray/ops/multi_update.cpp): the element-wise optimizer rules of
// ndarray/ops/update_rules.hpp over a list of weights in one pass; its front end is
// nd::multi_rule_update (ndarray/ops/optimizer.hpp). Internal.
#include <cstdint>
#include <vector>

#include "ndarray/ops/op.hpp"
#include "ndarray/ops/update_rules.hpp"

namespace mx::op {

const OpDef& multi_update_op();
// multi_sum_sq, as MXNet's (LAMB's and LARS's norms): (n,) float32 sums of squares of n arrays of
// one dtype, each accumulated in float64 over chunks of kSumChunk elements whose partial sums are
// added in order, so that no thread count or scheduling changes a result.
const OpDef& multi_sum_sq_op();
inline constexpr std::int64_t kSumChunk = 8192;

namespace gpu {
void multi_update(const ExecContext& ec, const Invocation& inv);
void multi_sum_sq(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
