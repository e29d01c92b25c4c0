// Fused scaled dot-product attention (flash attention) through cuDNN 9's backend API, forward and
// backward, with key padding, a causal mask and dropout. One operation graph per pass and
// geometry, its plan built once and cached per device; plans run under the device's lock.
//
// Note [fused attention graphs]
// cuDNN recognises flash attention as a fixed pattern of primitive operations (what
// cudnn-frontend's composite SDPA nodes emit for cuDNN 9 before its unified SDPA operations,
// which do not cover causal masks, dropout and the backward on the versions in use):
//   forward:  S = Q·Kᵀ · scale, masked (-inf), M = rowmax, E = exp(S - M), L = rowsum(E),
//             Stats = M + log L, P = E / L, [P · Bernoulli(1 - p) / (1 - p)], O = P·V
//   backward: D = rowsum(dO ∘ O) · (1 - p), P = exp(S - Stats) recomputed with the same masks,
//             dV = P̃ᵀ·dO, dS = P ∘ (dO·Vᵀ ∘ mask - D) / (1 - p) · scale, dK = dSᵀ·Q,
//             dQ = dS·K (accumulated in float32 scratch, then converted)
// Kᵀ (and Vᵀ in the backward) is K's descriptor with the last two dims and strides swapped; the
// operand of the second product (P) is declared in the I/O dtype; the LOG and ADD that give Stats
// are required by the engines. Key padding: a GEN_INDEX / CMP_LT mask against per-batch lengths
// that also override the products' extents; causal: row >= col (aligned at the first key).
// Dropout: cuDNN's Bernoulli generator from (seed, offset) device scalars; the backward's
// identical RNG node regenerates the forward's mask.
#include "cuda/cudnn_attention.hpp"

#include <cudnn.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "context/error.hpp"
#include "cuda/check.hpp"
#include "cuda/cudnn_descriptor.hpp"
#include "cuda/cudnn_rnn.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "ndarray/ops/random.hpp"

namespace mx::op::gpu {
namespace {

using Dims = std::vector<std::int64_t>;

bool verbose() {
  static const bool on = std::getenv("NDG_CUDNN_VERBOSE") != nullptr;
  return on;
}

using Descriptor = cuda::CudnnDescriptor;

// The uids of the tensors the variant packs name; virtual tensors get theirs from kFirstVirtual.
enum Uid : std::int64_t {
  kQ = 1, kK, kV, kO, kStats, kScale, kSeqQ, kSeqKV, kSeed, kOffset, kDO, kDQ, kDK, kDV, kDQAccum, kSoftmaxSum,
  kNegInf, kDropoutScale, kDropoutKeep, kOne,
  kFirstVirtual = 1000
};

constexpr cudnnDataType_t kFloat = CUDNN_DATA_FLOAT;

// What a plan is built for. padded: seq-len masks (the caller's key lengths, or all Tk where
// cuDNN needs them, see padding_needed); dropout: the probability (its bits), 0 for none.
struct Geometry {
  std::int64_t b, h, tq, tk, d;
  DType dtype;
  bool causal, padded;
  double dropout;

  bool masked() const { return causal || padded; }
};

enum class Pass { forward, backward };

// cuDNN up to 9.15 needs a padding mask on the backward when Tk is not a multiple of 128
// (cudnn-frontend turns one on with every length Tk); done for both passes, so that they match.
bool padding_needed(std::int64_t tk) { return cudnnGetVersion() < 91600 && tk % 128 != 0; }

// One operation graph being built: every descriptor it owns, its operations in order, and the
// first failure.
class GraphBuilder {
 public:
  explicit GraphBuilder(cudnnDataType_t io) : io_(io) {}

  cudnnDataType_t io() const { return io_; }
  bool ok() const { return status_ == CUDNN_STATUS_SUCCESS; }
  cudnnStatus_t status() const { return status_; }
  const std::vector<cudnnBackendDescriptor_t>& operations() const { return operations_; }
  std::vector<Descriptor> release() { return std::move(owned_); }

  // uid < 0: a virtual tensor with a fresh uid.
  cudnnBackendDescriptor_t tensor(std::int64_t uid, cudnnDataType_t type, const Dims& dims, const Dims& strides,
                                  bool by_value = false) {
    const bool is_virtual = uid < 0;
    if (is_virtual) uid = next_virtual_++;
    const std::int64_t alignment = 16;
    Descriptor& t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
        .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), static_cast<std::int64_t>(dims.size()))
        .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), static_cast<std::int64_t>(strides.size()))
        .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
        .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment)
        .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual);
    if (by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &by_value);
    return finish(t);
  }
  // A float scalar passed by value (a host float in the variant pack).
  cudnnBackendDescriptor_t scalar(std::int64_t uid) { return tensor(uid, kFloat, {1, 1, 1, 1}, {1, 1, 1, 1}, true); }

  // y = mode(x[, b][, t]) computed in `precision`; axis for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                 cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y, cudnnDataType_t precision = kFloat,
                 std::int64_t axis = -1) {
    Descriptor& p = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    p.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode)
        .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &precision);
    if (axis >= 0) p.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, &axis);
    finish(p);
    Descriptor& o = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    o.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, p.get()).set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b) o.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    if (t) o.set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    o.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    operation(o);
  }
  // y = mode(x, b) into a new virtual tensor of x's extents.
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                     const Dims& dims, const Dims& strides) {
    const cudnnBackendDescriptor_t y = tensor(-1, kFloat, dims, strides);
    pointwise(mode, x, b, nullptr, y);
    return y;
  }

  // y = reduce(x) over the axes where y's extent is 1.
  void reduction(cudnnReduceTensorOp_t op, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    const cudnnDataType_t compute = kFloat;
    Descriptor& r = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &op)
        .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute);
    finish(r);
    Descriptor& o = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    o.set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r.get())
        .set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    operation(o);
  }

  // c = a · b over the last two dims; m, n, k: per-batch extents that override the tensors' (or null).
  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c,
              cudnnBackendDescriptor_t m = nullptr, cudnnBackendDescriptor_t n = nullptr,
              cudnnBackendDescriptor_t k = nullptr) {
    const cudnnDataType_t compute = kFloat;
    Descriptor& mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    mm.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute);
    finish(mm);
    Descriptor& o = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    o.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .set(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm.get());
    if (m) o.set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, m);
    if (n) o.set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, n);
    if (k) o.set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, k);
    operation(o);
  }

  // y = x seen with y's dims and strides (a logical transpose).
  void reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    Descriptor& o = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    o.set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x).set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    operation(o);
  }

  // y = Bernoulli(keep) from the (seed, offset) device tensors.
  void bernoulli(cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t seed, cudnnBackendDescriptor_t offset,
                 double keep) {
    const cudnnRngDistribution_t distribution = CUDNN_RNG_DISTRIBUTION_BERNOULLI;
    Descriptor& r = make(CUDNN_BACKEND_RNG_DESCRIPTOR);
    r.set(CUDNN_ATTR_RNG_DISTRIBUTION, CUDNN_TYPE_RNG_DISTRIBUTION, &distribution)
        .set(CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, &keep);
    finish(r);
    Descriptor& o = make(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR);
    o.set(CUDNN_ATTR_OPERATION_RNG_DESC, r.get())
        .set(CUDNN_ATTR_OPERATION_RNG_YDESC, y)
        .set(CUDNN_ATTR_OPERATION_RNG_SEED, seed)
        .set(CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, offset);
    operation(o);
  }

  // The graph of the operations so far, on handle.
  Descriptor& graph(cudnnHandle_t handle) {
    Descriptor& g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    g.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle)
        .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, operations_.data(),
             static_cast<std::int64_t>(operations_.size()));
    finish(g);
    return g;
  }

 private:
  Descriptor& make(cudnnBackendDescriptorType_t type) { return owned_.emplace_back(type); }
  cudnnBackendDescriptor_t finish(Descriptor& d) {
    const cudnnStatus_t status = d.finalize();
    if (ok()) status_ = status;
    return d.get();
  }
  void operation(Descriptor& o) {
    finish(o);
    operations_.push_back(o.get());
  }

  cudnnDataType_t io_;
  std::int64_t next_virtual_ = kFirstVirtual;
  cudnnStatus_t status_ = CUDNN_STATUS_SUCCESS;
  std::vector<Descriptor> owned_;  // a vector of handles: moving a Descriptor keeps its handle
  std::vector<cudnnBackendDescriptor_t> operations_;
};

// The tensors' extents and packed (B, H, T, d) strides, and the views the graphs need.
struct Layout {
  Dims q, q_strides, k, k_strides, kt, kt_strides, s, s_strides, st, st_strides, row, row_strides, lengths;
  explicit Layout(const Geometry& g) {
    const std::int64_t b = g.b, h = g.h, sq = g.tq, skv = g.tk, d = g.d;
    q = {b, h, sq, d}, q_strides = {h * sq * d, sq * d, d, 1};
    k = {b, h, skv, d}, k_strides = {h * skv * d, skv * d, d, 1};
    kt = {b, h, d, skv}, kt_strides = {h * skv * d, skv * d, 1, d};  // Kᵀ: K's memory, last two swapped
    s = {b, h, sq, skv}, s_strides = {h * sq * skv, sq * skv, skv, 1};
    st = {b, h, skv, sq}, st_strides = {h * sq * skv, sq * skv, 1, skv};
    row = {b, h, sq, 1}, row_strides = {h * sq, sq, 1, 1};
    lengths = {b, 1, 1, 1};
  }
};

// The seq-len tensors, when padded (null otherwise).
struct SeqLengths {
  cudnnBackendDescriptor_t q = nullptr, kv = nullptr;
};
SeqLengths seq_lengths(GraphBuilder& gb, const Geometry& g, const Layout& l) {
  if (!g.padded) return {};
  const Dims one{1, 1, 1, 1};
  return {gb.tensor(kSeqQ, CUDNN_DATA_INT32, l.lengths, one), gb.tensor(kSeqKV, CUDNN_DATA_INT32, l.lengths, one)};
}

// The scores x (virtual float, S-shaped) with the padding and causal masks applied (-inf). The
// padding mask reads the lengths through descriptors of its own (same uids as the products'
// overrides): the engines do not match a graph whose override tensors also feed the mask.
cudnnBackendDescriptor_t apply_masks(GraphBuilder& gb, const Geometry& g, const Layout& l,
                                     cudnnBackendDescriptor_t x) {
  if (!g.masked()) return x;
  const SeqLengths seq = seq_lengths(gb, g, l);
  const cudnnBackendDescriptor_t neg_inf = gb.scalar(kNegInf);
  const auto index = [&](cudnnBackendDescriptor_t of, cudnnDataType_t precision, std::int64_t axis) {
    const cudnnBackendDescriptor_t y = gb.tensor(-1, CUDNN_DATA_INT32, l.s, l.s_strides);
    gb.pointwise(CUDNN_POINTWISE_GEN_INDEX, of, nullptr, nullptr, y, precision, axis);
    return y;
  };
  const auto compare = [&](cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b) {
    const cudnnBackendDescriptor_t y = gb.tensor(-1, CUDNN_DATA_BOOLEAN, l.s, l.s_strides);
    gb.pointwise(mode, a, b, nullptr, y, CUDNN_DATA_BOOLEAN);
    return y;
  };
  const auto select = [&](cudnnBackendDescriptor_t scores, cudnnBackendDescriptor_t keep) {
    const cudnnBackendDescriptor_t y = gb.tensor(-1, kFloat, l.s, l.s_strides);
    gb.pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores, neg_inf, keep, y);
    return y;
  };
  if (g.padded) {  // row < seq_q and col < seq_kv
    const cudnnBackendDescriptor_t rows = index(x, CUDNN_DATA_INT32, 2), cols = index(x, CUDNN_DATA_INT32, 3);
    const cudnnBackendDescriptor_t row_kept = compare(CUDNN_POINTWISE_CMP_LT, rows, seq.q);
    const cudnnBackendDescriptor_t col_kept = compare(CUDNN_POINTWISE_CMP_LT, cols, seq.kv);
    x = select(x, compare(CUDNN_POINTWISE_LOGICAL_AND, row_kept, col_kept));
  }
  if (g.causal) {  // row >= col
    const cudnnBackendDescriptor_t rows = index(x, kFloat, 2), cols = index(x, kFloat, 3);
    x = select(x, compare(CUDNN_POINTWISE_CMP_GE, rows, cols));
  }
  return x;
}

void build_forward(GraphBuilder& gb, const Geometry& g) {
  const Layout l(g);
  const cudnnDataType_t io = gb.io();
  const cudnnBackendDescriptor_t q = gb.tensor(kQ, io, l.q, l.q_strides), kt = gb.tensor(kK, io, l.kt, l.kt_strides),
                                 v = gb.tensor(kV, io, l.k, l.k_strides), o = gb.tensor(kO, io, l.q, l.q_strides);
  const cudnnBackendDescriptor_t scale = gb.scalar(kScale), stats = gb.tensor(kStats, kFloat, l.row, l.row_strides);
  const SeqLengths seq = seq_lengths(gb, g, l);

  const cudnnBackendDescriptor_t s = gb.tensor(-1, kFloat, l.s, l.s_strides);
  gb.matmul(q, kt, s, seq.q, seq.kv);
  const cudnnBackendDescriptor_t x =
      apply_masks(gb, g, l, gb.pointwise(CUDNN_POINTWISE_MUL, s, scale, l.s, l.s_strides));
  const cudnnBackendDescriptor_t max = gb.tensor(-1, kFloat, l.row, l.row_strides);
  gb.reduction(CUDNN_REDUCE_TENSOR_MAX, x, max);
  const cudnnBackendDescriptor_t e = gb.tensor(-1, kFloat, l.s, l.s_strides);
  gb.pointwise(CUDNN_POINTWISE_EXP, gb.pointwise(CUDNN_POINTWISE_SUB, x, max, l.s, l.s_strides), nullptr, nullptr, e);
  const cudnnBackendDescriptor_t sum = gb.tensor(-1, kFloat, l.row, l.row_strides),
                                 log = gb.tensor(-1, kFloat, l.row, l.row_strides);
  gb.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  gb.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, nullptr, log);
  gb.pointwise(CUDNN_POINTWISE_ADD, max, log, nullptr, stats);
  // The second product's operand in the I/O dtype: P itself, or P after dropout.
  const bool dropout = g.dropout > 0;
  cudnnBackendDescriptor_t p = gb.tensor(-1, dropout ? kFloat : io, l.s, l.s_strides);
  gb.pointwise(CUDNN_POINTWISE_DIV, e, sum, nullptr, p);
  if (dropout) {
    const Dims one{1, 1, 1, 1};
    const cudnnBackendDescriptor_t mask = gb.tensor(-1, kFloat, l.s, l.s_strides);
    gb.bernoulli(mask, gb.tensor(kSeed, CUDNN_DATA_INT64, one, one), gb.tensor(kOffset, CUDNN_DATA_INT64, one, one),
                 1 - g.dropout);
    const cudnnBackendDescriptor_t kept = gb.pointwise(CUDNN_POINTWISE_MUL, p, mask, l.s, l.s_strides);
    p = gb.tensor(-1, io, l.s, l.s_strides);
    gb.pointwise(CUDNN_POINTWISE_MUL, kept, gb.scalar(kDropoutScale), nullptr, p);
  }
  gb.matmul(p, v, o, seq.q, nullptr, seq.kv);
}

void build_backward(GraphBuilder& gb, const Geometry& g) {
  const Layout l(g);
  const cudnnDataType_t io = gb.io();
  const cudnnBackendDescriptor_t q = gb.tensor(kQ, io, l.q, l.q_strides), kt = gb.tensor(kK, io, l.kt, l.kt_strides),
                                 vt = gb.tensor(kV, io, l.kt, l.kt_strides), o = gb.tensor(kO, io, l.q, l.q_strides),
                                 d_o = gb.tensor(kDO, io, l.q, l.q_strides);
  const cudnnBackendDescriptor_t stats = gb.tensor(kStats, kFloat, l.row, l.row_strides), scale = gb.scalar(kScale);
  const cudnnBackendDescriptor_t dq = gb.tensor(kDQ, io, l.q, l.q_strides), dk = gb.tensor(kDK, io, l.k, l.k_strides),
                                 dv = gb.tensor(kDV, io, l.k, l.k_strides);
  const SeqLengths seq = seq_lengths(gb, g, l);
  const bool dropout = g.dropout > 0;

  // softmax_sum = rowsum(dO ∘ O) · (1 - p), kept in scratch
  const cudnnBackendDescriptor_t row_dot = gb.tensor(-1, kFloat, l.row, l.row_strides);
  gb.reduction(CUDNN_REDUCE_TENSOR_ADD, gb.pointwise(CUDNN_POINTWISE_MUL, d_o, o, l.q, l.q_strides), row_dot);
  const cudnnBackendDescriptor_t softmax_sum = gb.tensor(kSoftmaxSum, kFloat, l.row, l.row_strides);
  gb.pointwise(CUDNN_POINTWISE_MUL, row_dot, gb.scalar(dropout ? kDropoutKeep : kOne), nullptr, softmax_sum);

  // P = exp(S · scale - Stats), masked as in the forward
  const cudnnBackendDescriptor_t s = gb.tensor(-1, kFloat, l.s, l.s_strides);
  gb.matmul(q, kt, s, seq.q, seq.kv);
  const cudnnBackendDescriptor_t shifted = gb.pointwise(
      CUDNN_POINTWISE_SUB, gb.pointwise(CUDNN_POINTWISE_MUL, s, scale, l.s, l.s_strides), stats, l.s, l.s_strides);
  const cudnnBackendDescriptor_t p = gb.tensor(-1, kFloat, l.s, l.s_strides);
  gb.pointwise(CUDNN_POINTWISE_EXP, apply_masks(gb, g, l, shifted), nullptr, nullptr, p);

  cudnnBackendDescriptor_t dropped = p, mask = nullptr, dropout_scale = nullptr;
  if (dropout) {
    const Dims one{1, 1, 1, 1};
    mask = gb.tensor(-1, kFloat, l.s, l.s_strides);
    gb.bernoulli(mask, gb.tensor(kSeed, CUDNN_DATA_INT64, one, one), gb.tensor(kOffset, CUDNN_DATA_INT64, one, one),
                 1 - g.dropout);
    dropout_scale = gb.scalar(kDropoutScale);
    dropped = gb.pointwise(CUDNN_POINTWISE_MUL, gb.pointwise(CUDNN_POINTWISE_MUL, p, mask, l.s, l.s_strides),
                           dropout_scale, l.s, l.s_strides);
  }
  // dV = P̃ᵀ · dO
  const cudnnBackendDescriptor_t pt = gb.tensor(-1, io, l.st, l.st_strides);
  gb.reshape(dropped, pt);
  gb.matmul(pt, d_o, dv, seq.kv, nullptr, seq.q);
  // dS = P ∘ (dO · Vᵀ [∘ mask] - softmax_sum) [/ (1 - p)] · scale
  cudnnBackendDescriptor_t dp = gb.tensor(-1, kFloat, l.s, l.s_strides);
  gb.matmul(d_o, vt, dp, seq.q, seq.kv);
  if (dropout) dp = gb.pointwise(CUDNN_POINTWISE_MUL, dp, mask, l.s, l.s_strides);
  cudnnBackendDescriptor_t ds = gb.pointwise(
      CUDNN_POINTWISE_MUL, gb.pointwise(CUDNN_POINTWISE_SUB, dp, softmax_sum, l.s, l.s_strides), p, l.s, l.s_strides);
  if (dropout) ds = gb.pointwise(CUDNN_POINTWISE_MUL, ds, dropout_scale, l.s, l.s_strides);
  ds = gb.pointwise(CUDNN_POINTWISE_MUL, ds, scale, l.s, l.s_strides);
  // dK = dSᵀ · Q
  const cudnnBackendDescriptor_t dst = gb.tensor(-1, io, l.st, l.st_strides);
  gb.reshape(ds, dst);
  gb.matmul(dst, q, dk, seq.kv, nullptr, seq.q);
  // dQ = dS · K, summed in float32 scratch
  const cudnnBackendDescriptor_t k = gb.tensor(-1, kFloat, l.k, l.k_strides);
  gb.reshape(kt, k);
  const cudnnBackendDescriptor_t accumulated = gb.tensor(kDQAccum, kFloat, l.q, l.q_strides);
  gb.matmul(ds, k, accumulated, seq.q, nullptr, seq.kv);
  gb.pointwise(CUDNN_POINTWISE_IDENTITY, accumulated, nullptr, nullptr, dq);
}

// An execution plan with the descriptors of its graph (kept as long as it is) and its workspace.
struct Plan {
  std::vector<Descriptor> graph;
  Descriptor config, plan;
  std::int64_t workspace = 0;
};

std::string describe(Pass pass, const Geometry& g) {
  char text[256];
  std::snprintf(text, sizeof text, "%s %s B=%lld H=%lld Tq=%lld Tk=%lld d=%lld%s%s dropout=%g",
                pass == Pass::forward ? "forward" : "backward", dtype_name(g.dtype), static_cast<long long>(g.b),
                static_cast<long long>(g.h), static_cast<long long>(g.tq), static_cast<long long>(g.tk),
                static_cast<long long>(g.d), g.causal ? " causal" : "", g.padded ? " padded" : "", g.dropout);
  return text;
}

// The heuristics' first candidate (mode A, then FALLBACK) that finalizes; null when none does.
std::unique_ptr<Plan> build_plan(cudnnHandle_t handle, Pass pass, const Geometry& g) {
  GraphBuilder gb(g.dtype == DType::float16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16);
  if (pass == Pass::forward) {
    build_forward(gb, g);
  } else {
    build_backward(gb, g);
  }
  const cudnnBackendDescriptor_t graph = gb.graph(handle).get();
  const auto report = [&](const char* what) {
    if (!verbose()) return;
    char why[1024] = {0};
    cudnnGetLastErrorString(why, sizeof why);
    std::fprintf(stderr, "ndgluon cudnn attention: %s: %s (%s; %s)\n", describe(pass, g).c_str(), what,
                 cudnnGetErrorString(gb.status()), why);
  };
  if (!gb.ok()) {
    report("no operation graph");
    return nullptr;
  }
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
    if (heuristics.finalize() != CUDNN_STATUS_SUCCESS) continue;
    std::int64_t count = 0;
    if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                 &count, nullptr) != CUDNN_STATUS_SUCCESS ||
        count <= 0) {
      continue;
    }
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < count; ++i) raw.push_back(configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).get());
    if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                 &count, raw.data()) != CUDNN_STATUS_SUCCESS) {
      continue;
    }
    for (std::int64_t i = 0; i < count; ++i) {
      Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle)
          .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, raw[static_cast<std::size_t>(i)]);
      std::int64_t workspace = 0, n = 0;
      if (plan.finalize() != CUDNN_STATUS_SUCCESS ||
          cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                   &workspace) != CUDNN_STATUS_SUCCESS) {
        continue;
      }
      if (verbose()) {
        std::fprintf(stderr, "ndgluon cudnn attention: %s: %zu operations, config %lld of %lld, workspace %lld B\n",
                     describe(pass, g).c_str(), gb.operations().size(), static_cast<long long>(i),
                     static_cast<long long>(count), static_cast<long long>(workspace));
      }
      auto result = std::make_unique<Plan>();
      result->graph = gb.release();
      result->config = std::move(configs[static_cast<std::size_t>(i)]);
      result->plan = std::move(plan);
      result->workspace = workspace;
      return result;
    }
  }
  report("no engine");
  return nullptr;
}

// What a plan is cached under: pass, dtype, extents, masks and the dropout probability's bits.
using Key = std::array<std::int64_t, 10>;
Key key_of(Pass pass, const Geometry& g) {
  std::int64_t dropout_bits = 0;
  std::memcpy(&dropout_bits, &g.dropout, sizeof dropout_bits);
  return {static_cast<std::int64_t>(pass), static_cast<std::int64_t>(g.dtype), g.b, g.h, g.tq, g.tk, g.d,
          g.causal, g.padded, dropout_bits};
}

// One device's cuDNN handle and plans (null: cuDNN has none), created on first use and kept for
// the life of the process (no CUDA object is destroyed during static destruction). The lock
// covers the cache and every execution: a handle and its plans serve one call at a time.
struct DeviceCache {
  std::mutex mutex;
  cudnnHandle_t handle = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans;
};

DeviceCache& device_cache(int device) {
  static std::mutex mutex;
  static std::vector<DeviceCache*> caches;
  const std::lock_guard lock(mutex);
  const auto id = static_cast<std::size_t>(device);
  if (caches.size() <= id) caches.resize(id + 1, nullptr);
  if (!caches[id]) caches[id] = new DeviceCache;  // never freed, see above
  return *caches[id];
}

// The cached plan for (pass, g) on the cache's device, made current by the caller; built first if
// it never was. Call with cache.mutex held.
const Plan* find_plan(DeviceCache& cache, Pass pass, const Geometry& g) {
  if (!cache.handle) NDG_CUDA_CHECK(cudnnCreate(&cache.handle));
  const Key key = key_of(pass, g);
  auto it = cache.plans.find(key);
  if (it == cache.plans.end()) it = cache.plans.emplace(key, build_plan(cache.handle, pass, g)).first;
  return it->second.get();
}

bool compute_capability_8(int device) {
  int major = 0;
  NDG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 8;
}

// The masks' fill: -inf, or the lowest float before cuDNN 9.10 (which prefers it).
float negative_infinity() {
  return cudnnGetVersion() < 91000 ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
}

// Workspace slices, each 256-byte aligned: cuDNN's own, then the graph's scratch tensors.
std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// The uids and pointers of one execution.
struct VariantPack {
  std::vector<std::int64_t> uids;
  std::vector<void*> pointers;
  void add(std::int64_t uid, const void* p) {
    uids.push_back(uid);
    pointers.push_back(const_cast<void*>(p));
  }
};

// Runs plan on ec's stream with the pack and workspace, under the cache's lock.
void execute(const ExecContext& ec, DeviceCache& cache, const Plan& plan, const VariantPack& pack, void* workspace,
             const char* op, Pass pass, const Geometry& g) {
  const std::string what = std::string(op) + " " + describe(pass, g) + " (cuDNN)";
  Descriptor vp(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  vp.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, pack.uids.data(),
         static_cast<std::int64_t>(pack.uids.size()))
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pack.pointers.data(),
           static_cast<std::int64_t>(pack.pointers.size()))
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace);
  cuda::check(vp.finalize(), (what + ": the variant pack").c_str());
  cuda::check(cudnnSetStream(cache.handle, static_cast<cudaStream_t>(ec.stream)), (what + ": cudnnSetStream").c_str());
  cuda::check(cudnnBackendExecute(cache.handle, plan.plan.get(), vp.get()), (what + ": cudnnBackendExecute").c_str());
}

// The geometry of a call from q (B, H, Tq, d) and k (B, H, Tk, d).
Geometry geometry_of(const nd::NDArray& q, const nd::NDArray& k, bool causal, bool has_lengths, double dropout) {
  const std::int64_t tk = k.shape()[2];
  return {q.shape()[0], q.shape()[1], q.shape()[2], tk, q.shape()[3], q.dtype(),
          causal, has_lengths || padding_needed(tk), dropout};
}

// The seq-len arrays of a padded call: every query (Tq), and the keys' lengths given (or Tk), in
// the workspace at `scratch` (2 slices of B int32).
std::pair<const void*, const void*> fill_lengths(const ExecContext& ec, const Geometry& g, const nd::NDArray& lengths,
                                                 char* scratch) {
  auto* seq_q = reinterpret_cast<std::int32_t*>(scratch);
  cuda::fill_int32(ec, seq_q, g.b, static_cast<std::int32_t>(g.tq));
  if (!lengths.is_none()) return {seq_q, lengths.data()};
  auto* seq_kv = reinterpret_cast<std::int32_t*>(scratch + aligned(static_cast<std::size_t>(g.b) * 4));
  cuda::fill_int32(ec, seq_kv, g.b, static_cast<std::int32_t>(g.tk));
  return {seq_q, seq_kv};
}
std::size_t lengths_bytes(const Geometry& g) { return g.padded ? 2 * aligned(static_cast<std::size_t>(g.b) * 4) : 0; }

// Writes the int64 value into dst on ec's stream, as two int32 words (little-endian), with kernels
// rather than a copy from the host, so that it can be captured into a CUDA graph.
void write_int64(const ExecContext& ec, std::int64_t* dst, std::uint64_t value) {
  auto* words = reinterpret_cast<std::int32_t*>(dst);
  cuda::fill_int32(ec, words, 1, static_cast<std::int32_t>(value & 0xffffffffu));
  cuda::fill_int32(ec, words + 1, 1, static_cast<std::int32_t>(value >> 32));
}

}  // namespace

bool cudnn_sdpa_supported(int device, DType dtype, std::int64_t batch, std::int64_t heads, std::int64_t tq,
                          std::int64_t tk, std::int64_t d, bool causal, bool padded, double dropout) {
  if (!is_half(dtype) || d % 8 != 0 || d > 128 || batch < 1 || heads < 1 || tq < 1 || tk < 1) return false;
  // Only what was checked against the reference on an H200 with cuDNN 9.14: extents that are
  // multiples of 128 and no key padding. Padded graphs (the caller's lengths, or padding_needed)
  // build and their forward is right, but their backward gave wrong dQ and dK (and with a causal
  // mask wrong dV) for Tq = 96 / 32 and Tk = 160 / 64; those calls keep the reference path.
  if (padded || tq % 128 != 0 || tk % 128 != 0) return false;
  const std::size_t version = cudnnGetVersion();
  if (version >= 91000 && version < 91002) return false;  // 9.10.0 and 9.10.1: known SDPA bugs
  if (tq * tk > std::numeric_limits<std::int32_t>::max()) return false;
  const cuda::DeviceGuard guard(device);
  if (!compute_capability_8(device)) return false;
  const Geometry g{batch, heads, tq, tk, d, dtype, causal, padded || padding_needed(tk), dropout};
  DeviceCache& cache = device_cache(device);
  const std::lock_guard lock(cache.mutex);
  return find_plan(cache, Pass::forward, g) && find_plan(cache, Pass::backward, g);
}

void cudnn_sdpa_forward(const ExecContext& ec, const Invocation& inv, double scale, double dropout, bool causal) {
  const nd::NDArray &q = inv.inputs[0], &k = inv.inputs[1], &v = inv.inputs[2], &lengths = inv.inputs[3];
  const nd::NDArray &o = inv.outputs[0], &stats = inv.outputs[1], &rng = inv.outputs[2];
  const Geometry g = geometry_of(q, k, causal, !lengths.is_none(), dropout);
  const int device = ec.ctx.device_id();
  auto* seed_offset = static_cast<std::int64_t*>(rng.data());
  if (dropout > 0) {
    // The mask's (seed, offset): the generator's position, then moved past the B·H·Tq·Tk values
    // the mask stands for, so that later draws do not repeat it.
    cuda::Device& dev = cuda::device(device);
    const std::uint64_t position = dev.curand_position();
    const auto drawn = static_cast<std::uint64_t>(g.b * g.h * g.tq * g.tk);
    dev.set_curand_position(position + (drawn + 3) / 4 * 4);
    write_int64(ec, seed_offset, mx::random::current_seed());
    write_int64(ec, seed_offset + 1, position);
  } else {
    NDG_CUDA_CHECK(cudaMemsetAsync(seed_offset, 0, 2 * sizeof(std::int64_t), static_cast<cudaStream_t>(ec.stream)));
  }

  DeviceCache& cache = device_cache(device);
  const std::lock_guard lock(cache.mutex);
  const Plan* plan = find_plan(cache, Pass::forward, g);
  if (!plan) throw DeviceError("_sdpa_fused: cuDNN has no engine for " + describe(Pass::forward, g));
  const std::size_t own = aligned(static_cast<std::size_t>(plan->workspace));
  const Workspace workspace(ec, own + lengths_bytes(g));
  char* scratch = workspace.as<char>();

  const float scale_value = static_cast<float>(scale), neg_inf = negative_infinity(),
              dropout_scale = static_cast<float>(1 / (1 - dropout));
  VariantPack pack;
  pack.add(kQ, q.data());
  pack.add(kK, k.data());
  pack.add(kV, v.data());
  pack.add(kO, o.data());
  pack.add(kStats, stats.data());
  pack.add(kScale, &scale_value);
  if (g.masked()) pack.add(kNegInf, &neg_inf);
  if (g.padded) {
    const auto [seq_q, seq_kv] = fill_lengths(ec, g, lengths, scratch + own);
    pack.add(kSeqQ, seq_q);
    pack.add(kSeqKV, seq_kv);
  }
  if (dropout > 0) {
    pack.add(kSeed, seed_offset);
    pack.add(kOffset, seed_offset + 1);
    pack.add(kDropoutScale, &dropout_scale);
  }
  execute(ec, cache, *plan, pack, scratch, "_sdpa_fused", Pass::forward, g);
}

void cudnn_sdpa_backward(const ExecContext& ec, const Invocation& inv, double scale, double dropout, bool causal) {
  const nd::NDArray &d_o = inv.inputs[0], &q = inv.inputs[1], &k = inv.inputs[2], &v = inv.inputs[3],
                    &o = inv.inputs[4], &stats = inv.inputs[5], &rng = inv.inputs[6], &lengths = inv.inputs[7];
  const Geometry g = geometry_of(q, k, causal, !lengths.is_none(), dropout);
  DeviceCache& cache = device_cache(ec.ctx.device_id());
  const std::lock_guard lock(cache.mutex);
  const Plan* plan = find_plan(cache, Pass::backward, g);
  if (!plan) throw DeviceError("_backward_sdpa_fused: cuDNN has no engine for " + describe(Pass::backward, g));

  // The workspace: cuDNN's, softmax_sum (B, H, Tq) and dQ's float32 sums (B, H, Tq, d), the lengths.
  const std::size_t own = aligned(static_cast<std::size_t>(plan->workspace));
  const std::size_t sums = aligned(static_cast<std::size_t>(g.b * g.h * g.tq) * 4);
  const std::size_t accumulated = aligned(static_cast<std::size_t>(g.b * g.h * g.tq * g.d) * 4);
  const Workspace workspace(ec, own + sums + accumulated + lengths_bytes(g));
  char* scratch = workspace.as<char>();
  if (cudnnGetVersion() < 90600) {  // older engines add into dQ's sums
    NDG_CUDA_CHECK(cudaMemsetAsync(scratch + own + sums, 0, accumulated, static_cast<cudaStream_t>(ec.stream)));
  }

  const float scale_value = static_cast<float>(scale), neg_inf = negative_infinity(), one = 1,
              dropout_scale = static_cast<float>(1 / (1 - dropout)), keep = static_cast<float>(1 - dropout);
  VariantPack pack;
  pack.add(kQ, q.data());
  pack.add(kK, k.data());
  pack.add(kV, v.data());
  pack.add(kO, o.data());
  pack.add(kDO, d_o.data());
  pack.add(kStats, stats.data());
  pack.add(kScale, &scale_value);
  pack.add(kDQ, inv.outputs[0].data());
  pack.add(kDK, inv.outputs[1].data());
  pack.add(kDV, inv.outputs[2].data());
  pack.add(kSoftmaxSum, scratch + own);
  pack.add(kDQAccum, scratch + own + sums);
  if (g.masked()) pack.add(kNegInf, &neg_inf);
  if (g.padded) {
    const auto [seq_q, seq_kv] = fill_lengths(ec, g, lengths, scratch + own + sums + accumulated);
    pack.add(kSeqQ, seq_q);
    pack.add(kSeqKV, seq_kv);
  }
  if (dropout > 0) {
    const auto* seed_offset = static_cast<const std::int64_t*>(rng.data());
    pack.add(kSeed, seed_offset);
    pack.add(kOffset, seed_offset + 1);
    pack.add(kDropoutScale, &dropout_scale);
    pack.add(kDropoutKeep, &keep);
  } else {
    pack.add(kOne, &one);
  }
  execute(ec, cache, *plan, pack, scratch, "_backward_sdpa_fused", Pass::backward, g);
}

}  // namespace mx::op::gpu
