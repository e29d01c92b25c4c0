#pragma once
// Reshape and Flatten, the graph ops of an NDArray's reshape view (ndarray/ops/reshape.cpp). Internal.
#include <cstdint>

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

const OpDef& reshape_op();
const OpDef& flatten_op();

}  // namespace mx::op
