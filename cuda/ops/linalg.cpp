// GEMM through cuBLAS on the op's stream (ndarray/ops/linalg.cpp has dot and the OpenBLAS call).
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "ndarray/ops/linalg_kernels.hpp"

namespace mx::op::gpu {

// cuBLAS is column-major: a row-major C (m, n) is a column-major Cᵀ (n, m), so we compute
// Cᵀ = op(B)ᵀ · op(A)ᵀ by passing B first, with each operand's stored layout read as its transpose.
void gemm(const ExecContext& ec, DType dt, const GemmArgs& g, const void* a, const void* b, void* c) {
  const cudaStream_t stream = static_cast<cudaStream_t>(ec.stream);
  if (g.k == 0) {  // cuBLAS rejects k = 0
    if (g.beta == 0.0) NDG_CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<std::size_t>(g.m * g.n) * dtype_size(dt), stream));
    return;
  }
  cublasHandle_t handle = cuda::device(ec.ctx.device_id()).cublas();
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int lda = static_cast<int>(g.trans_a ? g.m : g.k);
  const int ldb = static_cast<int>(g.trans_b ? g.k : g.n);
  if (dt == DType::float32) {
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    NDG_CUDA_CHECK(cublasSgemm(handle, op_b, op_a, n, m, k, &alpha, static_cast<const float*>(b), ldb,
                               static_cast<const float*>(a), lda, &beta, static_cast<float*>(c), n));
  } else {
    NDG_CUDA_CHECK(cublasDgemm(handle, op_b, op_a, n, m, k, &g.alpha, static_cast<const double*>(b), ldb,
                               static_cast<const double*>(a), lda, &g.beta, static_cast<double*>(c), n));
  }
}

}  // namespace mx::op::gpu
