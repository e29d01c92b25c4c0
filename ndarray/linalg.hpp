#pragma once
// Matrix products: cuBLAS on a GPU, OpenBLAS on cpu(0). float32 and float64.
#include "ndarray/array.hpp"

namespace mx::nd {

// dot(a, b): (m, k)·(k, n) -> (m, n); (m, k)·(k,) -> (m,); (k,)·(k,) -> (1,); (k,)·(k, n) -> (n,).
// transpose_a / transpose_b use aᵀ / bᵀ without copying (2-D operands).
NDArray dot(const NDArray& a, const NDArray& b, bool transpose_a = false, bool transpose_b = false);

}  // namespace mx::nd
