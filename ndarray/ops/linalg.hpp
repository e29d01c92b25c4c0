#pragma once
// Matrix products: cuBLAS on a GPU, OpenBLAS on cpu(0). float32, float64, float16 and bfloat16;
// the 16-bit types accumulate in float32 (tensor cores on a GPU, float32 OpenBLAS on cpu(0)).
#include <string>

#include "ndarray/core/array.hpp"

namespace mx {

// The internal precision of float32 matrix products (dot, FullyConnected) and convolutions, as
// torch's set_float32_matmul_precision and cudnn.allow_tf32 together: "highest" (the default)
// computes in float32; "high" lets a GPU use TF32 tensor cores (10-bit mantissa inputs, float32
// accumulation), several times faster. cpu(0) always computes in float32. Another word is an
// mx::ValueError. A graph captured by hybridize keeps the precision it was captured with.
void set_matmul_precision(const std::string& precision);
std::string matmul_precision();  // "highest" or "high"

}  // namespace mx

namespace mx::nd {

// dot(a, b): (m, k)·(k, n) -> (m, n); (m, k)·(k,) -> (m,); (k,)·(k,) -> (1,); (k,)·(k, n) -> (n,).
// transpose_a / transpose_b use aᵀ / bᵀ without copying (2-D operands).
NDArray dot(const NDArray& a, const NDArray& b, bool transpose_a = false, bool transpose_b = false);

// batch_dot(a, b), as mx.nd.batch_dot: (batch..., m, k)·(batch..., k, n) -> (batch..., m, n), one
// product per matrix of the batch (3-D operands or more, with the same batch axes); transpose_a /
// transpose_b transpose each matrix of a / b. One strided-batched cuBLASLt call on a GPU.
// mx::ShapeError naming both operands when they do not fit.
NDArray batch_dot(const NDArray& a, const NDArray& b, bool transpose_a = false, bool transpose_b = false);

}  // namespace mx::nd
