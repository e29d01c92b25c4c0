#pragma once
// The creation family: ops without inputs that write their output (fill, arange, random draws),
// and _copy. ndarray/ops/creation.cpp and ndarray/ops/random.cpp define them with their CPU loops;
// cuda/ops/creation.cu has the GPU launches. Internal.
#include <cstdint>

#include "ndarray/ops/op.hpp"

namespace mx::op {

// The output's shape and dtype ride along (ndim -1: not known, the output as given), as MXNet's
// _full and _zeros carry theirs, so that a traced graph can plan an array made inside a forward
// (a recurrent layer's zero states).
struct FillParams {
  double value = 0;
  std::int32_t ndim = -1;
  DType dtype = DType::float32;
  std::int64_t dims[8] = {};
};
FillParams fill_params(double value, const Shape& shape, DType dtype);
struct ArangeParams {
  double start = 0, step = 1;  // out[i] = start + i * step, computed in double
  // The output's length and dtype, for a graph that has no output to read them from (-1: the
  // output as given, as nd::arange passes one).
  std::int64_t length = -1;
  DType dtype = DType::float32;
};
// uniform: (a, b] = (low, high]; normal: a = loc, b = scale. The draw continues the context's
// generator, or starts `offset` values after the seed when offset >= 0 (so that several contexts
// draw the same values).
struct RandomParams {
  double a = 0, b = 1;
  std::int64_t offset = -1;
};

const OpDef& full_op();    // "_full": every element = value
const OpDef& arange_op();  // "_arange"
const OpDef& copy_op();    // "_copy": the input's values, strided or not, in a new array
// MXNet's "zeros_like": zeros of its input's shape and dtype, on its context. The zero gradients
// of a traced backward (Note [zero gradients]) are made by it, so that a replay knows their shape.
const OpDef& zeros_like_op();

namespace gpu {
void fill(const ExecContext& ec, const Invocation& inv);
void arange(const ExecContext& ec, const Invocation& inv);
void random_uniform(const ExecContext& ec, const Invocation& inv);
void random_normal(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
