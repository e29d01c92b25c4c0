// GEMM on the op's stream through cuBLASLt (ndarray/ops/linalg.cpp has dot and the OpenBLAS call).
//
// cublasSgemm chooses its algorithm on every call, which costs about 10 µs of host time: more than
// a small product takes on the GPU. Here the algorithm is chosen once per (dtype, transposes,
// extents, beta, operand alignment) by cuBLASLt's heuristic and kept with its descriptors, per
// thread and device, as PyTorch and cuDNN's plans do; a call then costs one cublasLtMatmul.
#include <cublasLt.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "ndarray/ops/linalg_kernels.hpp"

namespace mx::op::gpu {
namespace {

// The most workspace an algorithm may ask for (split-K partial sums), from the pool per call.
constexpr std::size_t kMaxWorkspace = 32u << 20;

// One product shape's descriptors and algorithm; `usable` is false where the heuristic found none
// (cublasGemmStridedBatchedEx then runs it).
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
  bool usable = false;
};

// dtype, trans_a, trans_b, m, n, k, beta != 0, the alignment of a, b and c, the epilogue, TF32
// and the batch count.
using LtKey = std::array<std::int64_t, 13>;

// Destroyed when its thread ends (the main thread's at exit, before the runtime's teardown);
// errors are ignored then.
struct LtState {
  cublasLtHandle_t handle = nullptr;
  std::map<LtKey, LtPlan> plans;
  LtState() = default;
  LtState(const LtState&) = delete;
  LtState& operator=(const LtState&) = delete;
  ~LtState() {
    for (auto& [key, plan] : plans) {
      if (plan.desc) cublasLtMatmulDescDestroy(plan.desc);
      for (cublasLtMatrixLayout_t layout : {plan.first, plan.second, plan.out}) {
        if (layout) cublasLtMatrixLayoutDestroy(layout);
      }
    }
    if (handle) cublasLtDestroy(handle);
  }
};

// The calling thread's cuBLASLt state for a device, created on first use.
LtState& lt_state(int device) {
  thread_local std::vector<std::unique_ptr<LtState>> states;
  const auto id = static_cast<std::size_t>(device);
  if (states.size() <= id) states.resize(id + 1);
  if (!states[id]) {
    auto state = std::make_unique<LtState>();
    NDG_CUDA_CHECK(cublasLtCreate(&state->handle));
    states[id] = std::move(state);
  }
  return *states[id];
}

// The largest power of two up to 256 that divides the address (cuBLASLt's alignment preference).
std::int64_t alignment_of(const void* p) {
  const std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(p) | 256u;
  return static_cast<std::int64_t>(bits & (~bits + 1));
}

// The element type of each dtype, and the compute type: float32 accumulation for float16 and
// bfloat16 (tensor cores), TF32 tensor cores for float32 under set_matmul_precision("high").
cudaDataType_t data_type(DType dt) {
  switch (dt) {
    case DType::float64: return CUDA_R_64F;
    case DType::float16: return CUDA_R_16F;
    case DType::bfloat16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}
cublasComputeType_t compute_type(DType dt, bool tf32) {
  if (dt == DType::float64) return CUBLAS_COMPUTE_64F;
  return dt == DType::float32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}
// alpha and beta are double for float64 products and float for the others.
cudaDataType_t scale_type(DType dt) { return dt == DType::float64 ? CUDA_R_64F : CUDA_R_32F; }

// cuBLASLt is column-major: a row-major c (m, n) is a column-major cᵀ (n, m) = op(b)ᵀ · op(a)ᵀ, so
// b is passed first and each operand's stored layout is read as its transpose.
LtPlan make_plan(cublasLtHandle_t handle, DType dt, const GemmArgs& g, const LtKey& key,
                 cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT) {
  LtPlan plan;
  const cudaDataType_t type = data_type(dt);
  const cublasComputeType_t compute = compute_type(dt, key[11] != 0);
  const cublasOperation_t op_first = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  NDG_CUDA_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, scale_type(dt)));
  NDG_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
  NDG_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    NDG_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  }
  // Stored extents (rows, columns) of each column-major operand, leading dimension = rows; a batch
  // of them one after the other.
  const auto layout = [&](cublasLtMatrixLayout_t* out, std::int64_t rows, std::int64_t cols) {
    NDG_CUDA_CHECK(cublasLtMatrixLayoutCreate(out, type, static_cast<std::uint64_t>(rows),
                                              static_cast<std::uint64_t>(cols), rows));
    if (g.batch > 1) {
      const std::int32_t count = static_cast<std::int32_t>(g.batch);
      const std::int64_t stride = rows * cols;
      NDG_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      NDG_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                      sizeof stride));
    }
  };
  if (g.trans_b) layout(&plan.first, g.k, g.n);
  else layout(&plan.first, g.n, g.k);
  if (g.trans_a) layout(&plan.second, g.m, g.k);
  else layout(&plan.second, g.k, g.m);
  layout(&plan.out, g.n, g.m);

  cublasLtMatmulPreference_t preference = nullptr;
  NDG_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const std::uint64_t max_workspace = kMaxWorkspace;
  NDG_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &max_workspace, sizeof max_workspace));
  const std::uint32_t align_first = static_cast<std::uint32_t>(key[8]), align_second = static_cast<std::uint32_t>(key[7]),
                      align_out = static_cast<std::uint32_t>(key[9]);
  NDG_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                      &align_first, sizeof align_first));
  NDG_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                      &align_second, sizeof align_second));
  NDG_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                      &align_out, sizeof align_out));
  NDG_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                      &align_out, sizeof align_out));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.first, plan.second, plan.out,
                                                               plan.out, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status == CUBLAS_STATUS_SUCCESS && found > 0) {
    plan.algo = result.algo;
    plan.workspace = result.workspaceSize;
    plan.usable = true;
  }
  return plan;
}

// The product (a batch of them) with cublasGemmStridedBatchedEx: where cuBLASLt's heuristic found no
// algorithm.
void legacy_gemm(const ExecContext& ec, DType dt, const GemmArgs& g, const void* a, const void* b, void* c) {
  cublasHandle_t handle = cuda::device(ec.ctx.device_id()).cublas();
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int lda = static_cast<int>(g.trans_a ? g.m : g.k);
  const int ldb = static_cast<int>(g.trans_b ? g.k : g.n);
  const float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(g.beta);
  const void* alpha = dt == DType::float64 ? static_cast<const void*>(&g.alpha) : &alpha32;
  const void* beta = dt == DType::float64 ? static_cast<const void*>(&g.beta) : &beta32;
  const cudaDataType_t type = data_type(dt);
  NDG_CUDA_CHECK(cublasGemmStridedBatchedEx(handle, op_b, op_a, n, m, k, alpha, b, type, ldb, g.k * g.n, a, type, lda,
                                            g.m * g.k, beta, c, type, n, g.m * g.n, static_cast<int>(g.batch),
                                            compute_type(dt, allow_tf32()), CUBLAS_GEMM_DEFAULT));
}

// The plan of this product on this thread and device, made the first time it is asked for.
LtPlan& lt_plan(const ExecContext& ec, DType dt, const GemmArgs& g, const void* a, const void* b, const void* c,
                cublasLtEpilogue_t epilogue) {
  LtState& state = lt_state(ec.ctx.device_id());
  const LtKey key{static_cast<std::int64_t>(dt), g.trans_a,       g.trans_b,       g.m,
                  g.n,                           g.k,             g.beta != 0.0,   alignment_of(a),
                  alignment_of(b),               alignment_of(c), static_cast<std::int64_t>(epilogue),
                  dt == DType::float32 && allow_tf32(), g.batch};
  auto it = state.plans.find(key);
  if (it == state.plans.end()) it = state.plans.emplace(key, make_plan(state.handle, dt, g, key, epilogue)).first;
  return it->second;
}

void lt_matmul(const ExecContext& ec, DType dt, const GemmArgs& g, const LtPlan& plan, const void* a, const void* b,
               void* c) {
  const Workspace workspace(ec, plan.workspace);
  const float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(g.beta);
  const void* alpha = dt == DType::float64 ? static_cast<const void*>(&g.alpha) : &alpha32;
  const void* beta = dt == DType::float64 ? static_cast<const void*>(&g.beta) : &beta32;
  NDG_CUDA_CHECK(cublasLtMatmul(lt_state(ec.ctx.device_id()).handle, plan.desc, alpha, b, plan.first, a, plan.second,
                                beta, c, plan.out, c, plan.out, &plan.algo, workspace.data(), plan.workspace,
                                static_cast<cudaStream_t>(ec.stream)));
}

}  // namespace

void gemm(const ExecContext& ec, DType dt, const GemmArgs& g, const void* a, const void* b, void* c) {
  const cudaStream_t stream = static_cast<cudaStream_t>(ec.stream);
  if (g.k == 0) {  // cuBLAS rejects k = 0
    if (g.beta == 0.0) {
      NDG_CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<std::size_t>(g.batch * g.m * g.n) * dtype_size(dt), stream));
    }
    return;
  }
  const LtPlan& plan = lt_plan(ec, dt, g, a, b, c, CUBLASLT_EPILOGUE_DEFAULT);
  if (!plan.usable) return legacy_gemm(ec, dt, g, a, b, c);
  lt_matmul(ec, dt, g, plan, a, b, c);
}

bool gemm_bias_relu(const ExecContext& ec, DType dt, const GemmArgs& g, const void* a, const void* b, void* c,
                    const void* bias, bool relu) {
  // cuBLASLt reads the bias vector with at least 16-byte alignment.
  if (g.k == 0 || g.batch != 1 || g.alpha != 1.0 || g.beta != 0.0 || (bias && alignment_of(bias) < 16)) return false;
  const cublasLtEpilogue_t epilogue = bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                           : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  LtPlan& plan = lt_plan(ec, dt, g, a, b, c, epilogue);
  if (!plan.usable) return false;
  if (bias) {
    NDG_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  lt_matmul(ec, dt, g, plan, a, b, c);
  return true;
}

bool gemm_bias_grad(const ExecContext& ec, DType dt, const GemmArgs& g, const void* a, const void* b, void* c,
                    void* bias_grad) {
  // In cuBLASLt's column-major terms the product is x · gᵀ with g the second operand, transposed:
  // BGRADB reduces that operand over k, the rows, into one value per column of the result.
  if (g.k == 0 || g.batch != 1 || g.alpha != 1.0 || g.beta != 0.0 || !g.trans_a || g.trans_b ||
      alignment_of(bias_grad) < 16) {
    return false;
  }
  LtPlan& plan = lt_plan(ec, dt, g, a, b, c, CUBLASLT_EPILOGUE_BGRADB);
  if (!plan.usable) return false;
  NDG_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_grad, sizeof bias_grad));
  lt_matmul(ec, dt, g, plan, a, b, c);
  return true;
}

}  // namespace mx::op::gpu
