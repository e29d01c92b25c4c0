#pragma once
// Reshape, Flatten and broadcast_to, the graph ops of an NDArray's views (ndarray/ops/reshape.cpp):
// an eager view runs no op, a traced or imported graph names one. Internal.
#include <cstdint>
#include <vector>

#include "ndarray/ops/op.hpp"

namespace mx::op {

struct ReshapeParams {
  static constexpr int kMaxDims = 12;
  std::int32_t ndim = 0;
  std::int64_t shape[kMaxDims] = {};  // MXNet's codes: 0 keeps the input's extent, -1 is inferred
  static ReshapeParams of(const Shape& shape);  // mx::ValueError beyond kMaxDims axes
};

// The output shape of Reshape with p on input `in`; mx::ShapeError / ValueError naming op.
Shape reshaped(const char* op, const ReshapeParams& p, const Shape& in);

// The kernel of every device of the ops that only copy input 0 into output 0 in a new shape
// (Reshape, Flatten, squeeze, expand_dims): a copy within the context.
void reshape_copy_kernel(const ExecContext& ec, const Invocation& inv);

const OpDef& reshape_op();
const OpDef& flatten_op();
// MXNet's broadcast_to: attribute shape (ReshapeParams; 0 keeps the input's extent) of the input's
// rank, each axis of extent 1 repeated. Its output is dense.
const OpDef& broadcast_to_op();
// The registered transpose (shape_ops.cpp), for the permuted views a trace meets, and its params
// for output axis d reading input axis axes[d].
const OpDef& transpose_op();
Params transpose_params(const std::vector<int>& axes);

}  // namespace mx::op
