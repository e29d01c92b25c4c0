#pragma once
// softmax, log_softmax and one_hot, as mx.nd. softmax and log_softmax are registered ops with
// fused kernels (ndarray/ops/softmax.cpp); one_hot is composed of other ops.
#include "ndarray/array.hpp"

namespace mx::nd {

// exp(x) / sum(exp(x)) along axis, computed from x - max(x) so that it cannot overflow.
NDArray softmax(const NDArray& x, int axis = -1);
// x - max - log(sum(exp(x - max))) along axis: the numerically stable log of softmax.
NDArray log_softmax(const NDArray& x, int axis = -1);
// indices (any shape, integer values in any dtype) -> indices.shape + (depth,), 1 at each index.
NDArray one_hot(const NDArray& indices, std::int64_t depth, DType dtype = DType::float32);

}  // namespace mx::nd
