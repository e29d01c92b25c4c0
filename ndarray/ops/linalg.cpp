// The matrix-product family: dot (the op, its inference and gradient) and GEMM on each device
// (OpenBLAS here, its products run in ndgluon's OpenMP team: Note [one thread team]; cuBLAS in
// cuda/ops/linalg.cpp).
#include "ndarray/ops/linalg.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ndarray/core/checks.hpp"
#include "ndarray/core/contiguous.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/linalg_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::op {
namespace {

using nd::NDArray;

std::atomic<bool> cpu_gemm_split{true};
std::atomic<int> cpu_gemm_threads{0};  // 0: cpu_team()

// The threads a split product may use (set_cpu_gemm_threads, else the team's).
int gemm_team() {
  const int threads = cpu_gemm_threads.load(std::memory_order_relaxed);
  return threads > 0 ? threads : cpu_team();
}

// One product c = alpha * op(a) · op(b) + beta * c of m x n, leading dimensions as given.
void blas_gemm(DType dt, const GemmArgs& g, std::int64_t m, std::int64_t n, const void* a, std::int64_t lda,
               const void* b, std::int64_t ldb, void* c, std::int64_t ldc) {
  const auto ta = g.trans_a ? CblasTrans : CblasNoTrans;
  const auto tb = g.trans_b ? CblasTrans : CblasNoTrans;
  const auto bm = static_cast<blasint>(m), bn = static_cast<blasint>(n), bk = static_cast<blasint>(g.k);
  if (dt == DType::float32) {
    cblas_sgemm(CblasRowMajor, ta, tb, bm, bn, bk, static_cast<float>(g.alpha), static_cast<const float*>(a),
                static_cast<blasint>(lda), static_cast<const float*>(b), static_cast<blasint>(ldb),
                static_cast<float>(g.beta), static_cast<float*>(c), static_cast<blasint>(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, bm, bn, bk, g.alpha, static_cast<const double*>(a), static_cast<blasint>(lda),
                static_cast<const double*>(b), static_cast<blasint>(ldb), g.beta, static_cast<double*>(c),
                static_cast<blasint>(ldc));
  }
}

// Note [one thread team]
// OpenBLAS comes in builds that thread differently. The OpenMP build (Debian's
// libopenblas0-openmp, which meson.build prefers) runs its threads in libgomp's team, the one
// ndgluon's CPU loops use (ndarray/ops/parallel.hpp). The pthread build (libopenblas0-pthread,
// Debian's default) keeps a pool of its own, whose threads spin after each product while libgomp's
// spin after each loop: on a 32-core host, one MLP epoch with a team of 16 took 6.80 s where it
// takes 0.20 s without the second pool. So with any build but the OpenMP one, OpenBLAS is set to
// one thread once, and ndgluon cuts each large product into a grid of blocks of c for its own team
// (gemm_grid), each one single-threaded GEMM: one team does all the work, whichever OpenBLAS the
// loader found. NDG_CPU_GEMM_SPLIT=0 in the environment leaves the products to OpenBLAS's threads.
// The split costs where a product alone fills the machine: each block packs its panels of op(a)
// and op(b) again, where OpenBLAS's own threads share one packed panel (bench/RESULTS.md, "One
// thread team": 0.90 s against 0.64 s for that epoch with a team of all 32 cores).
// OpenBLAS's own thread count before the split set it to one; 0 where the split never applies
// (the OpenMP build, or NDG_CPU_GEMM_SPLIT=0).
int openblas_own_threads() {
  static const int own = [] {
    if (openblas_get_parallel() == 2) return 0;  // the OpenMP build: already one team
    const char* choice = std::getenv("NDG_CPU_GEMM_SPLIT");  // "0": leave products to OpenBLAS
    if (choice && std::string(choice) == "0") return 0;
    const int threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    return std::max(threads, 1);
  }();
  return own;
}

bool split_products() { return openblas_own_threads() > 0 && cpu_gemm_split.load(std::memory_order_relaxed); }

// How a product of c (m, n) is cut for the team: a grid of row blocks by column blocks, at most one
// block per thread, each at least 64 x 64 where c allows it and at least 2^20 multiply-adds. Each
// block packs its panel of op(a) and of op(b): 32 thin row blocks of a 256 x 256 product would
// each pack all of op(b), so the grid keeps blocks near square. {1, 1}: one call.
std::pair<std::int64_t, std::int64_t> gemm_grid(std::int64_t m, std::int64_t n, std::int64_t k, int threads) {
  constexpr std::int64_t kMinEdge = 64, kMinWork = std::int64_t{1} << 20;
  const std::int64_t max_blocks = std::min<std::int64_t>(threads, std::max<std::int64_t>(1, m * n * k / kMinWork));
  const std::int64_t max_rows = std::max<std::int64_t>(1, m / kMinEdge), max_cols = std::max<std::int64_t>(1, n / kMinEdge);
  std::pair<std::int64_t, std::int64_t> best{1, 1};
  double best_skew = 0;
  for (std::int64_t rows = 1; rows <= std::min(max_rows, max_blocks); ++rows) {
    const std::int64_t cols = std::min(max_cols, max_blocks / rows);
    // More blocks first; among as many, blocks closest to square.
    const double skew = std::abs(std::log(static_cast<double>(m) / rows) - std::log(static_cast<double>(n) / cols));
    if (rows * cols > best.first * best.second || (rows * cols == best.first * best.second && skew < best_skew)) {
      best = {rows, cols};
      best_skew = skew;
    }
  }
  return best;
}

void cpu_gemm_one(DType dt, const GemmArgs& g, const void* a, const void* b, void* c) {
  const std::int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n;
  const int threads = gemm_team();
  // Plain variables, not a structured binding: an OpenMP region may not capture one (clang).
  const std::pair<std::int64_t, std::int64_t> grid =
      split_products() ? gemm_grid(g.m, g.n, g.k, threads) : std::pair<std::int64_t, std::int64_t>{1, 1};
  const std::int64_t row_blocks = grid.first, col_blocks = grid.second;
  if (row_blocks * col_blocks == 1) return blas_gemm(dt, g, g.m, g.n, a, lda, b, ldb, c, g.n);
  const std::size_t size = dtype_size(dt);
  const std::int64_t rows_per = (g.m + row_blocks - 1) / row_blocks, cols_per = (g.n + col_blocks - 1) / col_blocks;
  const auto* ab = static_cast<const char*>(a);
  const auto* bb = static_cast<const char*>(b);
  auto* cb = static_cast<char*>(c);
  const std::int64_t blocks = row_blocks * col_blocks;
  // The whole team enters, threads past the grid idle: a region of fewer threads parks some of
  // the team and the next full one wakes them (parallel.hpp), which made each step of an LSTM on
  // 16 threads 4x slower than on 8, where the grid of its products (8 blocks) fills the team.
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t block = 0; block < blocks; ++block) {
    const std::int64_t r0 = block / col_blocks * rows_per, c0 = block % col_blocks * cols_per;
    const std::int64_t rows = std::min(rows_per, g.m - r0), cols = std::min(cols_per, g.n - c0);
    if (rows <= 0 || cols <= 0) continue;
    // Rows [r0, r0 + rows) of op(a) and of c, columns [c0, c0 + cols) of op(b) and of c.
    const std::int64_t a_offset = g.trans_a ? r0 : r0 * lda, b_offset = g.trans_b ? c0 * ldb : c0;
    blas_gemm(dt, g, rows, cols, ab + a_offset * size, lda, bb + b_offset * size, ldb, cb + (r0 * g.n + c0) * size, g.n);
  }
}

// Each product of a batch in turn, each cut for the team; products too small to cut (their grid
// one block) run side by side instead, one per thread, since OpenBLAS runs single-threaded.
void cpu_gemm(DType dt, const GemmArgs& g, const void* a, const void* b, void* c) {
  const std::size_t size = dtype_size(dt);
  const int threads = gemm_team();
  const std::int64_t lda = g.trans_a ? g.m : g.k, ldb = g.trans_b ? g.k : g.n;
  if (g.batch > 1 && threads > 1 && split_products() && g.batch * g.m * g.n * g.k >= (std::int64_t{1} << 20)) {
    const std::pair<std::int64_t, std::int64_t> grid = gemm_grid(g.m, g.n, g.k, threads);
    if (grid.first * grid.second == 1) {
#pragma omp parallel for schedule(static) num_threads(threads)
      for (std::int64_t i = 0; i < g.batch; ++i) {
        blas_gemm(dt, g, g.m, g.n, static_cast<const char*>(a) + i * g.m * g.k * size, lda,
                  static_cast<const char*>(b) + i * g.k * g.n * size, ldb, static_cast<char*>(c) + i * g.m * g.n * size,
                  g.n);
      }
      return;
    }
  }
  for (std::int64_t i = 0; i < g.batch; ++i) {
    cpu_gemm_one(dt, g, static_cast<const char*>(a) + i * g.m * g.k * size,
                 static_cast<const char*>(b) + i * g.k * g.n * size, static_cast<char*>(c) + i * g.m * g.n * size);
  }
}

// float16 and bfloat16 on cpu(0): the operands widened to float32, one sgemm, c rounded once.
void cpu_gemm_through_float(DType dt, const GemmArgs& g, const void* a, const void* b, void* c) {
  dispatch_floating(dt, "gemm", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_half_v<T>) {
      const auto widen = [](const void* in, std::int64_t n) {
        std::vector<float> out(static_cast<std::size_t>(n));
        const T* from = static_cast<const T*>(in);
        parallel_for_simd(n, [&](std::int64_t i) { out[static_cast<std::size_t>(i)] = static_cast<float>(from[i]); });
        return out;
      };
      const std::int64_t cs = g.batch * g.m * g.n;
      const std::vector<float> a32 = widen(a, g.batch * g.m * g.k), b32 = widen(b, g.batch * g.k * g.n);
      std::vector<float> c32 = g.beta != 0.0 ? widen(c, cs) : std::vector<float>(static_cast<std::size_t>(cs));
      cpu_gemm(DType::float32, g, a32.data(), b32.data(), c32.data());
      T* out = static_cast<T*>(c);
      parallel_for_simd(cs, [&](std::int64_t i) { out[i] = static_cast<T>(c32[static_cast<std::size_t>(i)]); });
    }
  });
}

// --- dot ------------------------------------------------------------------------------------------

// The product in 2-D terms: a vector lhs is (1, k), a vector rhs (k, 1).
GemmArgs dot_args(const Invocation& inv) {
  const auto& p = inv.params.as<DotParams>();
  const Shape &a = inv.inputs[0].shape(), &b = inv.inputs[1].shape();
  const std::int64_t a_rows = a.ndim() == 2 ? a[0] : 1, a_cols = a.ndim() == 2 ? a[1] : a[0];
  const std::int64_t b_rows = b[0], b_cols = b.ndim() == 2 ? b[1] : 1;
  GemmArgs args;
  args.trans_a = p.transpose_a;
  args.trans_b = p.transpose_b;
  args.m = p.transpose_a ? a_cols : a_rows;
  args.k = p.transpose_a ? a_rows : a_cols;
  args.n = p.transpose_b ? b_rows : b_cols;
  return args;
}

void dot_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<DotParams>();
  const NDArray &a = inv.inputs[0], &b = inv.inputs[1];
  nd::check_same_dtype("dot", a, b);
  nd::check_floating("dot", a);
  if (a.ndim() < 1 || a.ndim() > 2 || b.ndim() < 1 || b.ndim() > 2 || (p.transpose_a && a.ndim() != 2) ||
      (p.transpose_b && b.ndim() != 2)) {
    throw ShapeError("dot: supports 1-D and 2-D operands (transposes of 2-D only), got lhs " + nd::describe(a) +
                     ", rhs " + nd::describe(b));
  }
  const GemmArgs args = dot_args(inv);
  const std::int64_t k_b = p.transpose_b ? (b.ndim() == 2 ? b.shape()[1] : 1) : b.shape()[0];
  if (args.k != k_b) {
    throw ShapeError("dot: inner dimensions do not match: lhs " + nd::describe(a) +
                     (p.transpose_a ? " (transposed)" : "") + " has " + std::to_string(args.k) + ", rhs " +
                     nd::describe(b) + (p.transpose_b ? " (transposed)" : "") + " has " + std::to_string(k_b));
  }
  // (m, n) for two matrices, (m,) or (n,) with a vector, (1,) for two vectors.
  const Shape shape = a.ndim() == 2 && b.ndim() == 2 ? Shape{args.m, args.n}
                      : a.ndim() == 2               ? Shape{args.m}
                      : b.ndim() == 2               ? Shape{args.n}
                                                    : Shape{1};
  out = {{shape, a.dtype()}};
}

// A matrix operand as GEMM reads it: a contiguous one as is, a transposed view of a contiguous
// matrix (strides (1, rows)) as its storage with the transpose flag flipped, anything else copied.
NDArray gemm_operand(const NDArray& x, bool& trans) {
  if (x.ndim() == 2 && !x.is_contiguous() && x.strides() == std::vector<std::int64_t>{1, x.shape()[0]}) {
    trans = !trans;
    return x;
  }
  return nd::detail::dense(x);
}

// One kernel for every device: gemm() picks OpenBLAS or cuBLAS.
void dot_kernel(const ExecContext& ec, const Invocation& inv) {
  if (inv.outputs[0].size() == 0) return;  // and cuBLAS rejects the leading dimension 0 that n = 0 gives
  GemmArgs args = dot_args(inv);
  const NDArray a = gemm_operand(inv.inputs[0], args.trans_a), b = gemm_operand(inv.inputs[1], args.trans_b);
  gemm(ec, a.dtype(), args, a.data(), b.data(), inv.outputs[0].data());
}

// In 2-D terms, with C = op(A)·op(B) and G its gradient: A gets G·op(B)ᵀ (or its transpose when A
// is stored transposed), B gets op(A)ᵀ·G (likewise).
std::vector<NDArray> dot_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const auto& p = inv.params.as<DotParams>();
  const NDArray &a = inv.inputs[0], &b = inv.inputs[1];
  const GemmArgs args = dot_args(inv);
  const NDArray g2 = g[0].reshape({args.m, args.n});
  const NDArray a2 = a.ndim() == 2 ? a : a.reshape({1, a.size()});
  const NDArray b2 = b.ndim() == 2 ? b : b.reshape({b.size(), 1});
  const bool ta = p.transpose_a, tb = p.transpose_b;
  NDArray ga, gb;
  if (p.a_grad) ga = (ta ? nd::dot(b2, g2, tb, true) : nd::dot(g2, b2, false, !tb)).reshape(a.shape());
  if (p.b_grad) gb = (tb ? nd::dot(g2, a2, true, ta) : nd::dot(a2, g2, !ta, false)).reshape(b.shape());
  return {ga, gb};
}

std::vector<std::pair<std::string, std::string>> dot_attrs(const Params& params) {
  const auto& p = params.as<DotParams>();
  return {{"transpose_a", format_bool(p.transpose_a)}, {"transpose_b", format_bool(p.transpose_b)}};
}

// MXNet's attributes; forward_stype other than dense ("default") is refused.
constexpr char kDotName[] = "dot", kBatchDotName[] = "batch_dot";

// dot's and batch_dot's attributes (the same ones).
template <const char* name>
Params dot_parse(const AttrList& attrs) {
  AttrReader a(name, attrs);
  DotParams p;
  p.transpose_a = a.boolean("transpose_a", false);
  p.transpose_b = a.boolean("transpose_b", false);
  if (a.text("forward_stype", "default") != "default") a.fail("forward_stype", "is not supported: arrays are dense");
  a.finish();
  return p;
}

void dot_input_grads(Params& params, const std::vector<bool>& needed) {
  DotParams p = params.as<DotParams>();
  p.a_grad = needed.at(0);
  p.b_grad = needed.at(1);
  params = p;
}

const OpDef& dot_def() {
  static const OpDef def{"dot", &dot_infer, &dot_kernel, NDG_GPU_KERNEL(dot_kernel), &dot_gradient, &dot_attrs,
                         &dot_parse<kDotName>, /*strided_inputs=*/true, nullptr, 0, false, &dot_input_grads};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool linalg_family_registered = (dot_def(), true);

// --- batch_dot ----------------------------------------------------------------------------------

// (batch..., m, k) · (batch..., k, n) -> (batch..., m, n), either operand's last two axes transposed.
GemmArgs batch_dot_args(const Invocation& inv) {
  const auto& p = inv.params.as<DotParams>();
  const Shape &a = inv.inputs[0].shape(), &b = inv.inputs[1].shape();
  const int r = a.ndim();
  GemmArgs args;
  args.trans_a = p.transpose_a;
  args.trans_b = p.transpose_b;
  args.m = p.transpose_a ? a[r - 1] : a[r - 2];
  args.k = p.transpose_a ? a[r - 2] : a[r - 1];
  args.n = p.transpose_b ? b[r - 2] : b[r - 1];
  for (int d = 0; d < r - 2; ++d) args.batch *= a[d];
  return args;
}

void batch_dot_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const auto& p = inv.params.as<DotParams>();
  const NDArray &a = inv.inputs[0], &b = inv.inputs[1];
  nd::check_same_dtype("batch_dot", a, b);
  nd::check_floating("batch_dot", a);
  const int r = a.ndim();
  bool fits = r >= 3 && b.ndim() == r;
  for (int d = 0; fits && d < r - 2; ++d) fits = a.shape()[d] == b.shape()[d];
  const std::int64_t k_b = fits ? (p.transpose_b ? b.shape()[r - 1] : b.shape()[r - 2]) : -1;
  if (!fits || (p.transpose_a ? a.shape()[r - 2] : a.shape()[r - 1]) != k_b) {
    throw ShapeError("batch_dot: lhs " + nd::describe(a) + (p.transpose_a ? " (transposed)" : "") + " and rhs " +
                     nd::describe(b) + (p.transpose_b ? " (transposed)" : "") +
                     " must be (batch..., m, k) and (batch..., k, n) with the same batch axes (3-D or more)");
  }
  const GemmArgs args = batch_dot_args(inv);
  std::vector<std::int64_t> dims(a.shape().begin(), a.shape().end() - 2);
  dims.push_back(args.m);
  dims.push_back(args.n);
  out = {{Shape(dims), a.dtype()}};
}

void batch_dot_kernel(const ExecContext& ec, const Invocation& inv) {
  if (inv.outputs[0].size() == 0) return;
  gemm(ec, inv.inputs[0].dtype(), batch_dot_args(inv), inv.inputs[0].data(), inv.inputs[1].data(),
       inv.outputs[0].data());
}

// dot_gradient's formulas, matrix by matrix.
std::vector<NDArray> batch_dot_gradient(const Invocation& inv, const std::vector<NDArray>& g) {
  const auto& p = inv.params.as<DotParams>();
  const NDArray &a = inv.inputs[0], &b = inv.inputs[1];
  const bool ta = p.transpose_a, tb = p.transpose_b;
  NDArray ga, gb;
  if (p.a_grad) ga = ta ? nd::batch_dot(b, g[0], tb, true) : nd::batch_dot(g[0], b, false, !tb);
  if (p.b_grad) gb = tb ? nd::batch_dot(g[0], a, true, ta) : nd::batch_dot(a, g[0], !ta, false);
  return {ga, gb};
}

const OpDef& batch_dot_def() {
  static const OpDef def{"batch_dot", &batch_dot_infer, &batch_dot_kernel, NDG_GPU_KERNEL(batch_dot_kernel),
                         &batch_dot_gradient, &dot_attrs, &dot_parse<kBatchDotName>, false, nullptr, 0, false,
                         &dot_input_grads};
  [[maybe_unused]] static const OpDef& registered = register_op(def);
  return def;
}
[[maybe_unused]] const bool batch_dot_registered = (batch_dot_def(), true);

}  // namespace

namespace {
std::atomic<bool> tf32_allowed{false};
}  // namespace

bool set_cpu_gemm_split(bool split) {
  const bool was = split_products();
  cpu_gemm_split.store(split, std::memory_order_relaxed);
  if (const int own = openblas_own_threads()) openblas_set_num_threads(split ? 1 : own);
  return was;
}

int set_cpu_gemm_threads(int threads) { return cpu_gemm_threads.exchange(threads); }

std::string openblas_threading() {
  switch (openblas_get_parallel()) {
    case 0: return "sequential";
    case 1: return "pthread";
    default: return "openmp";
  }
}

int openblas_threads() { return openblas_get_num_threads(); }

bool cpu_gemm_runs_on_caller() {
  openblas_own_threads();  // sets the pthread build to one thread, unless NDG_CPU_GEMM_SPLIT=0
  return openblas_get_parallel() != 1 || openblas_get_num_threads() == 1;
}

void cpu_gemm_on_thread(DType dt, const GemmArgs& args, const void* a, std::int64_t lda, const void* b,
                        std::int64_t ldb, void* c, std::int64_t ldc) {
  blas_gemm(dt, args, args.m, args.n, a, lda, b, ldb, c, ldc);
}

bool allow_tf32() { return tf32_allowed.load(std::memory_order_relaxed); }

void gemm(const ExecContext& ec, DType dt, const GemmArgs& args, const void* a, const void* b, void* c) {
  if (!is_floating(dt)) {
    throw DTypeError(std::string("gemm: supports float32, float64, float16 and bfloat16, not ") + dtype_name(dt));
  }
  if (ec.ctx.is_gpu()) {
#ifdef NDG_HAVE_CUDA
    return gpu::gemm(ec, dt, args, a, b, c);
#endif
  }
  if (args.k == 0) {  // BLAS would not touch c
    if (args.beta == 0.0) std::memset(c, 0, static_cast<std::size_t>(args.batch * args.m * args.n) * dtype_size(dt));
    return;
  }
  if (is_half(dt)) return cpu_gemm_through_float(dt, args, a, b, c);
  cpu_gemm(dt, args, a, b, c);
}

}  // namespace mx::op

namespace mx {

void set_matmul_precision(const std::string& precision) {
  if (precision != "highest" && precision != "high") {
    throw ValueError("set_matmul_precision: \"" + precision + "\" is not a precision; use \"highest\" or \"high\"");
  }
  op::tf32_allowed.store(precision == "high", std::memory_order_relaxed);
}

std::string matmul_precision() { return op::allow_tf32() ? "high" : "highest"; }

}  // namespace mx

namespace mx::nd {

NDArray dot(const NDArray& a, const NDArray& b, bool transpose_a, bool transpose_b) {
  detail::check_not_none("dot", a);
  detail::check_not_none("dot", b);
  return op::invoke1(op::dot_def(), {a, b},
                     op::DotParams{transpose_a, transpose_b, a.autograd_node() != nullptr, b.autograd_node() != nullptr});
}

NDArray batch_dot(const NDArray& a, const NDArray& b, bool transpose_a, bool transpose_b) {
  detail::check_not_none("batch_dot", a);
  detail::check_not_none("batch_dot", b);
  return op::invoke1(op::batch_dot_def(), {a, b},
                     op::DotParams{transpose_a, transpose_b, a.autograd_node() != nullptr, b.autograd_node() != nullptr});
}

}  // namespace mx::nd
