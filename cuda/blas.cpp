#include "cuda/blas.hpp"

#include "cuda/check.hpp"
#include "cuda/device.hpp"

namespace mx::cuda {

// cuBLAS is column-major: a row-major C (m, n) is a column-major Cᵀ (n, m), so we compute
// Cᵀ = op(B)ᵀ · op(A)ᵀ by passing B first, with each operand's stored layout read as its transpose.
void gemm(int device_id, DType dt, const GemmArgs& g, const void* a, const void* b, void* c) {
  cublasHandle_t handle = device(device_id).cublas();
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int lda = static_cast<int>(g.trans_a ? g.m : g.k);
  const int ldb = static_cast<int>(g.trans_b ? g.k : g.n);
  if (dt == DType::float32) {
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    NDG_CUDA_CHECK(cublasSgemm(handle, op_b, op_a, n, m, k, &alpha, static_cast<const float*>(b), ldb,
                               static_cast<const float*>(a), lda, &beta, static_cast<float*>(c), n));
  } else if (dt == DType::float64) {
    NDG_CUDA_CHECK(cublasDgemm(handle, op_b, op_a, n, m, k, &g.alpha, static_cast<const double*>(b), ldb,
                               static_cast<const double*>(a), lda, &g.beta, static_cast<double*>(c), n));
  } else {
    throw DTypeError(std::string("gemm: supports float32 and float64, not ") + dtype_name(dt));
  }
}

}  // namespace mx::cuda
