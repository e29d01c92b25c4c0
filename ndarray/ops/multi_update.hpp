#pragma once
// _multi_update (ndarray/ops/multi_update.cpp): the element-wise optimizer rules of
// ndarray/ops/update_rules.hpp over a list of weights in one pass; its front end is
// nd::multi_rule_update (ndarray/ops/optimizer.hpp). Internal.
#include <vector>

#include "ndarray/ops/op.hpp"
#include "ndarray/ops/update_rules.hpp"

namespace mx::op {

const OpDef& multi_update_op();

namespace gpu {
void multi_update(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
