// CPU matrix products through OpenBLAS (row-major cblas), which threads over all cores itself.
#include <cblas.h>

#include "ndarray/cpu/kernels.hpp"

namespace mx::cpu_kernels {

void gemm(DType dt, const GemmArgs& g, const void* a, const void* b, void* c) {
  const auto ta = g.trans_a ? CblasTrans : CblasNoTrans;
  const auto tb = g.trans_b ? CblasTrans : CblasNoTrans;
  const auto lda = static_cast<blasint>(g.trans_a ? g.m : g.k);
  const auto ldb = static_cast<blasint>(g.trans_b ? g.k : g.n);
  const auto m = static_cast<blasint>(g.m), n = static_cast<blasint>(g.n), k = static_cast<blasint>(g.k);
  if (dt == DType::float32) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(g.alpha), static_cast<const float*>(a), lda,
                static_cast<const float*>(b), ldb, static_cast<float>(g.beta), static_cast<float*>(c), n);
  } else if (dt == DType::float64) {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, g.alpha, static_cast<const double*>(a), lda,
                static_cast<const double*>(b), ldb, g.beta, static_cast<double*>(c), n);
  } else {
    throw DTypeError(std::string("gemm: supports float32 and float64, not ") + dtype_name(dt));
  }
}

}  // namespace mx::cpu_kernels
