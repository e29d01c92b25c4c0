#pragma once
// The matrix-product family's attributes, and GEMM on an op's device: OpenBLAS on cpu(0), cuBLAS
// on a GPU (ndarray/ops/linalg.cpp defines dot and the CPU call; cuda/ops/linalg.cpp the cuBLAS
// call). Internal.
#include <cstdint>
#include <string>

#include "ndarray/ops/op.hpp"

namespace mx::op {

// A matrix product in row-major terms: c (m, n) = alpha * op(a) · op(b) + beta * c, where op(a) is
// (m, k) and op(b) is (k, n); trans_a means a is stored (k, m), trans_b that b is stored (n, k).
// batch > 1: that many products of dense matrices stored one after the other (batch_dot).
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;
  std::int64_t batch = 1;
};

// c = alpha * op(a) · op(b) + beta * c, queued on ec's device; float32, float64, float16 and
// bfloat16 (accumulating in float32). With k = 0 the product sums nothing: c becomes beta * c for
// beta 0 or 1, the values callers use.
void gemm(const ExecContext& ec, DType dt, const GemmArgs& args, const void* a, const void* b, void* c);

// cpu(0)'s products (Note [one thread team] in ndarray/ops/linalg.cpp): with an OpenBLAS that is
// not the OpenMP build, each large product is cut into a grid of blocks for ndgluon's OpenMP team,
// OpenBLAS running single-threaded. set_cpu_gemm_split(false) hands them to OpenBLAS's own threads instead (what
// bench/ compares); returns whether they were split. openblas_threading() names the build the
// loader found: "openmp", "pthread" or "sequential"; openblas_threads() is its thread count.
bool set_cpu_gemm_split(bool split);
// The threads a split product uses (0, the default: the CPU loops' team, cpu_team()); returns the previous.
int set_cpu_gemm_threads(int threads);
std::string openblas_threading();
int openblas_threads();

// For loops that share out products inside their own OpenMP region (the CPU's RNN recurrence):
// whether a product called from a thread of the team runs on that thread alone (the OpenMP build,
// which goes single-threaded in a parallel region, or OpenBLAS set to one thread by the split),
// and that product, float32 or float64, with leading dimensions given (GemmArgs::batch ignored).
bool cpu_gemm_runs_on_caller();
void cpu_gemm_on_thread(DType dt, const GemmArgs& args, const void* a, std::int64_t lda, const void* b,
                        std::int64_t ldb, void* c, std::int64_t ldc);

// Whether float32 products may use TF32 tensor cores (mx::set_matmul_precision("high")).
bool allow_tf32();

// dot(a, b) with either operand transposed (2-D ones); batch_dot's the same for each matrix of a
// batch.
struct DotParams {
  bool transpose_a = false, transpose_b = false;
  // Whether a and b lead to a variable (the recorded inputs are detached): backward skips the
  // product of an operand that needs no gradient.
  bool a_grad = true, b_grad = true;
};

namespace gpu {
void gemm(const ExecContext& ec, DType dt, const GemmArgs& args, const void* a, const void* b, void* c);
// c = op(a) · op(b) + bias (one value per column of c; none when bias is null), then relu when
// asked, in one cuBLASLt call with its epilogue (alpha 1, beta 0). False, with nothing queued,
// where cuBLASLt has no such algorithm for the case: the caller then adds them itself.
bool gemm_bias_relu(const ExecContext& ec, DType dt, const GemmArgs& args, const void* a, const void* b, void* c,
                    const void* bias, bool relu);
// c = op(a) · op(b) with a transposed (a weight's gradient gᵀ · x), and bias_grad = the sums of a's
// stored rows' elements per column (the bias's gradient: g summed over its rows), in one cuBLASLt
// call with its BGRADB epilogue. False, with nothing queued, where cuBLASLt has no such algorithm.
bool gemm_bias_grad(const ExecContext& ec, DType dt, const GemmArgs& args, const void* a, const void* b, void* c,
                    void* bias_grad);
}

}  // namespace mx::op
