// GPU launches of LayerNorm, GroupNorm, InstanceNorm and their backward ops (ndarray/ops/norm.cpp
// has the ops and the CPU loops; norm_kernels.hpp the element functions both call). A line of
// contiguous elements (inner == 1: LayerNorm on the last axis, every GroupNorm and InstanceNorm)
// takes one warp, which reads it from L1/L2 again for each pass; a strided line (LayerNorm on
// another axis) takes one thread, whose reads are coalesced across neighbouring lines. Sums are
// in ComputeType (float for 16-bit data). The parameter gradients take one thread per channel,
// reads coalesced across neighbouring channels.
//
// LayerNorm on the last axis (every Transformer's) has its own kernels when a row is whole 16-byte
// packs (Note [LayerNorm rows in registers]).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/launch.hpp"
#include "cuda/module_preload.hpp"
#include "ndarray/ops/norm_kernels.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;
using cuda::warp_sum;

template <class T, class P>
__global__ void norm_forward_rows(const T* x, const P* gamma, const P* beta, T* y, ComputeType<T>* mean,
                                  ComputeType<T>* stdev, NormShape s, double eps) {
  using A = ComputeType<T>;
  const int lane = threadIdx.x % 32;
  const std::int64_t M = s.lines.length;
  for (std::int64_t row = global_thread() / 32; row < s.lines.outer; row += grid_stride() / 32) {
    const T* in = x + row * M;
    T* out = y + row * M;
    A sum = 0;
    for (std::int64_t k = lane; k < M; k += 32) sum += A(in[k]);
    const A m = warp_sum(sum) / A(M);
    A squares = 0;
    for (std::int64_t k = lane; k < M; k += 32) {
      const A d = A(in[k]) - m;
      squares += d * d;
    }
    const A sd = std::sqrt(warp_sum(squares) / A(M) + A(eps)), rstd = A(1) / sd;
    if (lane == 0) {
      mean[row] = m;
      stdev[row] = sd;
    }
    for (std::int64_t k = lane; k < M; k += 32) {
      const std::int64_t c = norm_channel(s, row, k);
      out[k] = static_cast<T>((A(in[k]) - m) * rstd * A(gamma[c]) + A(beta[c]));
    }
  }
}

template <class T, class P>
__global__ void norm_forward_lines(const T* x, const P* gamma, const P* beta, T* y, ComputeType<T>* mean,
                                   ComputeType<T>* stdev, NormShape s, double eps) {
  const std::int64_t lines = s.lines.outer * s.lines.inner;
  for (std::int64_t line = global_thread(); line < lines; line += grid_stride()) {
    norm_forward_line<ComputeType<T>>(x, gamma, beta, y, mean, stdev, s, line, eps);
  }
}

template <class T, class P>
__global__ void norm_backward_rows(const T* dy, const T* x, const P* gamma, const ComputeType<T>* mean,
                                   const ComputeType<T>* stdev, T* dx, NormShape s) {
  using A = ComputeType<T>;
  const int lane = threadIdx.x % 32;
  const std::int64_t M = s.lines.length;
  for (std::int64_t row = global_thread() / 32; row < s.lines.outer; row += grid_stride() / 32) {
    const std::int64_t start = row * M;
    const A m = A(mean[row]), rstd = A(1) / A(stdev[row]);
    A sum_a = 0, sum_a_xhat = 0;
    for (std::int64_t k = lane; k < M; k += 32) {
      const A a = A(dy[start + k]) * A(gamma[norm_channel(s, row, k)]);
      sum_a += a;
      sum_a_xhat += a * (A(x[start + k]) - m) * rstd;
    }
    const A mean_a = warp_sum(sum_a) / A(M), mean_a_xhat = warp_sum(sum_a_xhat) / A(M);
    for (std::int64_t k = lane; k < M; k += 32) {
      const A a = A(dy[start + k]) * A(gamma[norm_channel(s, row, k)]);
      dx[start + k] = static_cast<T>((a - mean_a - (A(x[start + k]) - m) * rstd * mean_a_xhat) * rstd);
    }
  }
}

template <class T, class P>
__global__ void norm_backward_lines(const T* dy, const T* x, const P* gamma, const ComputeType<T>* mean,
                                    const ComputeType<T>* stdev, T* dx, NormShape s) {
  const std::int64_t lines = s.lines.outer * s.lines.inner;
  for (std::int64_t line = global_thread(); line < lines; line += grid_stride()) {
    norm_backward_line<ComputeType<T>>(dy, x, gamma, mean, stdev, dx, s, line);
  }
}

template <class T, class P>
__global__ void norm_param_grads(const T* dy, const T* x, const ComputeType<T>* mean, const ComputeType<T>* stdev,
                                 P* dgamma, P* dbeta, NormShape s) {
  for (std::int64_t c = global_thread(); c < s.channels; c += grid_stride()) {
    norm_param_grad_channel<ComputeType<T>>(dy, x, mean, stdev, dgamma, dbeta, s, c);
  }
}

// Note [LayerNorm rows in registers]
// A row of M elements, M a multiple of a 16-byte pack's E elements, is read once: `tpr` threads
// (32 to 256, a power of two) share it, each holding V packs (packs t, t + tpr, ...) in registers,
// and a block of kThreads holds kThreads / tpr rows. Mean, variance and the backward's two sums
// are row sums over warp shuffles, then over the row's warps through shared memory. The
// parameters' gradients (dy·x̂ and dy summed per column) read dy and x once more in a kernel of
// their own, each block a tile of 32 packs of columns over a chunk of rows, into one partial row
// per chunk; a last kernel sums the chunks' partial rows per column. Two fixed-order stages, so
// the parameter gradients are the same bits every run; and the dx kernel keeps no column sums in
// registers beside its row (with them, one block of 256 threads per SM: 1.3 TB/s).
struct RowLayout {
  int M = 0, packs = 0, tpr = 32, packs_per_thread = 0;  // packs_per_thread: V, 1, 2, 4 or 8
};

// The layout for rows of M elements of T, or packs_per_thread 0 where the rows do not fit.
template <class T>
RowLayout row_layout(std::int64_t M, const void* x, const void* other) {
  constexpr int E = cuda::Pack<T>::size;
  RowLayout r;
  if (M <= 0 || M % E != 0 || !cuda::aligned16(x) || !cuda::aligned16(other)) return r;
  const std::int64_t packs = M / E;
  int tpr = 32;
  while (tpr < cuda::kThreads && (packs + tpr - 1) / tpr > 4) tpr *= 2;
  const std::int64_t per = (packs + tpr - 1) / tpr;
  if (per > 8) return r;
  r.M = static_cast<int>(M);
  r.packs = static_cast<int>(packs);
  r.tpr = tpr;
  r.packs_per_thread = per <= 1 ? 1 : per <= 2 ? 2 : per <= 4 ? 4 : 8;
  return r;
}

// The sum of v over the tpr threads of this thread's row (in each of them). Every thread of the
// block calls it (it may synchronise the block); `slots` holds a value per warp.
template <class A>
__device__ __forceinline__ A row_sum(A v, int tpr, A* slots) {
  v = warp_sum(v);
  if (tpr == 32) return v;
  const int warp = static_cast<int>(threadIdx.x) / 32, warps = tpr / 32, first = warp / warps * warps;
  __syncthreads();  // the slots' previous values have been read
  if (threadIdx.x % 32 == 0) slots[warp] = v;
  __syncthreads();
  A sum = 0;
  for (int w = first; w < first + warps; ++w) sum += slots[w];
  return sum;
}

// Packs t, t + tpr, ... of a row as A; zeros past the row's end (t = packs: a thread past the last
// row reads nothing).
template <class A, class T, int V>
__device__ __forceinline__ void load_row(const T* row, RowLayout r, int t, A (&v)[V][cuda::Pack<T>::size]) {
  using Pk = cuda::Pack<T>;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int p = t + j * r.tpr;
    if (p < r.packs) {
      const Pk pk = reinterpret_cast<const Pk*>(row)[p];
#pragma unroll
      for (int e = 0; e < Pk::size; ++e) v[j][e] = A(pk.v[e]);
    } else {
#pragma unroll
      for (int e = 0; e < Pk::size; ++e) v[j][e] = A(0);
    }
  }
}

// Elements p·E .. p·E + E - 1 of a parameter row (gamma, beta) as A, E = Pack<T>::size: in 16-byte
// loads where P is at least as wide as T and the row is aligned (a parameter's own storage is),
// else one element at a time (which, in bfloat16, made 16 of every 17 loads of the forward).
template <class A, class T, class P>
__device__ __forceinline__ void load_params(const P* param, int p, A (&out)[cuda::Pack<T>::size]) {
  constexpr int E = cuda::Pack<T>::size, PE = cuda::Pack<P>::size;
  if constexpr (E % PE == 0) {
    if (reinterpret_cast<std::uintptr_t>(param) % 16 == 0) {
      const auto* packs = reinterpret_cast<const cuda::Pack<P>*>(param + std::int64_t{p} * E);
#pragma unroll
      for (int k = 0; k < E / PE; ++k) {
        const cuda::Pack<P> pk = packs[k];
#pragma unroll
        for (int e = 0; e < PE; ++e) out[k * PE + e] = A(pk.v[e]);
      }
      return;
    }
  }
#pragma unroll
  for (int e = 0; e < E; ++e) out[e] = A(param[std::int64_t{p} * E + e]);
}

template <class T, class P, int V>
__global__ void layer_norm_forward_packed(const T* x, const P* gamma, const P* beta, T* y, ComputeType<T>* mean,
                                          ComputeType<T>* stdev, std::int64_t rows, RowLayout r, double eps) {
  using A = ComputeType<T>;
  using Pk = cuda::Pack<T>;
  constexpr int E = Pk::size;
  __shared__ A slots[cuda::kThreads / 32];
  const int per_block = cuda::kThreads / r.tpr, t = static_cast<int>(threadIdx.x) % r.tpr;
  for (std::int64_t first = std::int64_t{blockIdx.x} * per_block; first < rows; first += std::int64_t{gridDim.x} * per_block) {
    const std::int64_t row = first + static_cast<int>(threadIdx.x) / r.tpr;
    const bool live = row < rows;
    A v[V][E];
    load_row<A>(x + (live ? row : 0) * r.M, r, live ? t : r.packs, v);
    A sum = 0;
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int e = 0; e < E; ++e) sum += v[j][e];
    const A m = row_sum(sum, r.tpr, slots) / A(r.M);
    A squares = 0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if (t + j * r.tpr >= r.packs) continue;
#pragma unroll
      for (int e = 0; e < E; ++e) squares += (v[j][e] - m) * (v[j][e] - m);
    }
    const A sd = std::sqrt(row_sum(squares, r.tpr, slots) / A(r.M) + A(eps)), rstd = A(1) / sd;
    if (!live) continue;
    if (t == 0) {
      mean[row] = m;
      stdev[row] = sd;
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int p = t + j * r.tpr;
      if (p >= r.packs) continue;
      A scale[E], shift[E];
      load_params<A, T>(gamma, p, scale);
      load_params<A, T>(beta, p, shift);
      Pk out;
#pragma unroll
      for (int e = 0; e < E; ++e) out.v[e] = static_cast<T>((v[j][e] - m) * rstd * scale[e] + shift[e]);
      reinterpret_cast<Pk*>(y + row * r.M)[p] = out;
    }
  }
}

// Packs t, t + tpr, ... of a row as stored (16 bytes each, converted where used: half the
// registers of load_row's values); zero packs past the row's end.
template <class T, int V>
__device__ __forceinline__ void load_packs(const T* row, RowLayout r, int t, cuda::Pack<T> (&v)[V]) {
  using Pk = cuda::Pack<T>;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int p = t + j * r.tpr;
    if (p < r.packs) {
      v[j] = reinterpret_cast<const Pk*>(row)[p];
    } else {
#pragma unroll
      for (int e = 0; e < Pk::size; ++e) v[j].v[e] = T(0);
    }
  }
}

// dx per row (the parameters' gradients are layer_norm_param_columns'). dy and x stay packed in
// registers; a = dy·gamma and x̂ are formed again for the output. Three blocks per SM for up to
// 4 packs per thread (80 registers; unbounded, the compiler keeps both rows as floats: 126).
template <class T, class P, int V>
__global__ void __launch_bounds__(cuda::kThreads, V <= 4 ? 3 : 1)
    layer_norm_backward_packed(const T* dy, const T* x, const P* gamma, const ComputeType<T>* mean,
                               const ComputeType<T>* stdev, T* dx, std::int64_t rows, RowLayout r) {
  using A = ComputeType<T>;
  using Pk = cuda::Pack<T>;
  constexpr int E = Pk::size;
  __shared__ A slots[cuda::kThreads / 32];
  const int per_block = cuda::kThreads / r.tpr, t = static_cast<int>(threadIdx.x) % r.tpr;
  for (std::int64_t first = std::int64_t{blockIdx.x} * per_block; first < rows; first += std::int64_t{gridDim.x} * per_block) {
    const std::int64_t row = first + static_cast<int>(threadIdx.x) / r.tpr;
    const bool live = row < rows;
    const int lane = live ? t : r.packs;  // a thread past the last row reads nothing
    Pk g[V], v[V];
    load_packs(dy + (live ? row : 0) * r.M, r, lane, g);
    load_packs(x + (live ? row : 0) * r.M, r, lane, v);
    const A m = live ? A(mean[row]) : A(0), rstd = live ? A(1) / A(stdev[row]) : A(0);
    A sum_a = 0, sum_a_xhat = 0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int p = lane + j * r.tpr;
      if (p >= r.packs) continue;
      A scale[E];
      load_params<A, T>(gamma, p, scale);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const A a = A(g[j].v[e]) * scale[e];
        sum_a += a;
        sum_a_xhat += a * ((A(v[j].v[e]) - m) * rstd);
      }
    }
    const A mean_a = row_sum(sum_a, r.tpr, slots) / A(r.M), mean_a_xhat = row_sum(sum_a_xhat, r.tpr, slots) / A(r.M);
    if (!live) continue;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int p = t + j * r.tpr;
      if (p >= r.packs) continue;
      A scale[E];
      load_params<A, T>(gamma, p, scale);
      Pk out;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const A a = A(g[j].v[e]) * scale[e], xhat = (A(v[j].v[e]) - m) * rstd;
        out.v[e] = static_cast<T>((a - mean_a - xhat * mean_a_xhat) * rstd);
      }
      reinterpret_cast<Pk*>(dx + row * r.M)[p] = out;
    }
  }
}

// The first stage of the parameters' gradients: block (tile, chunk) sums dy·x̂ and dy over rows
// [chunk·span, (chunk + 1)·span) for the 32 packs of columns of its tile, each warp every 8th row
// of the chunk, then the 8 warps' sums in order, into partial[chunk] and partial[chunks + chunk]
// (rows of M). Apart from dx's kernel, which then holds only its row (no column sums in
// registers beside it: 2 to 3 times the blocks per SM).
template <class T>
__global__ void layer_norm_param_columns(const T* dy, const T* x, const ComputeType<T>* mean,
                                         const ComputeType<T>* stdev, ComputeType<T>* partial, std::int64_t rows,
                                         std::int64_t span, RowLayout r) {
  using A = ComputeType<T>;
  using Pk = cuda::Pack<T>;
  constexpr int E = Pk::size;
  __shared__ A sums[2][8][32 * E];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int p = static_cast<int>(blockIdx.x) * 32 + lane;
  const std::int64_t begin = std::int64_t{blockIdx.y} * span, end = std::min(rows, begin + span);
  A dgamma[E] = {}, dbeta[E] = {};
  if (p < r.packs) {
    for (std::int64_t row = begin + warp; row < end; row += 8) {
      const Pk g = reinterpret_cast<const Pk*>(dy + row * r.M)[p];
      const Pk v = reinterpret_cast<const Pk*>(x + row * r.M)[p];
      const A m = A(mean[row]), rstd = A(1) / A(stdev[row]);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        dgamma[e] += A(g.v[e]) * ((A(v.v[e]) - m) * rstd);
        dbeta[e] += A(g.v[e]);
      }
    }
  }
#pragma unroll
  for (int e = 0; e < E; ++e) {
    sums[0][warp][lane * E + e] = dgamma[e];
    sums[1][warp][lane * E + e] = dbeta[e];
  }
  __syncthreads();
  // The 2 x 32·E columns' sums over the warps: thread k adds entries k, k + 256, ...
  for (int k = static_cast<int>(threadIdx.x); k < 2 * 32 * E; k += cuda::kThreads) {
    const int which = k / (32 * E), c = k % (32 * E);
    const std::int64_t column = std::int64_t{blockIdx.x} * 32 * E + c;
    if (column >= r.M) continue;
    A total = 0;
    for (int w = 0; w < 8; ++w) total += sums[which][w][c];
    partial[(std::int64_t{which} * gridDim.y + blockIdx.y) * r.M + column] = total;
  }
}

// dgamma[c] = Σ_b partial[b][c], dbeta[c] = Σ_b partial[blocks + b][c]: a block per 32 columns,
// its 8 warps' lanes each summing every 8th block's row, then the 8 sums in order.
template <class A, class P>
__global__ void layer_norm_param_sums(const A* partial, int blocks, int M, P* dgamma, P* dbeta) {
  __shared__ A sums[8][33];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int c = static_cast<int>(blockIdx.x) * 32 + lane;
  for (int which = 0; which < 2; ++which) {
    const A* in = partial + std::int64_t{which} * blocks * M;
    A sum = 0;
    if (c < M) {
      for (int b = warp; b < blocks; b += 8) sum += in[std::int64_t{b} * M + c];
    }
    __syncthreads();
    sums[warp][lane] = sum;
    __syncthreads();
    if (warp == 0 && c < M) {
      A total = 0;
      for (int w = 0; w < 8; ++w) total += sums[w][lane];
      (which == 0 ? dgamma : dbeta)[c] = static_cast<P>(total);
    }
  }
}

// Calls f(std::integral_constant<int, V>) for r's packs per thread.
template <class F>
void with_packs_per_thread(const RowLayout& r, F&& f) {
  switch (r.packs_per_thread) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    default: return f(std::integral_constant<int, 8>{});
  }
}

// Whether a LayerNorm runs on the packed row kernels: the last axis, whole packs per row.
bool last_axis_rows(const NormShape& s) { return s.lines.inner == 1 && s.groups == 1 && s.spatial == 1; }

unsigned row_blocks(std::int64_t rows, const RowLayout& r, std::int64_t cap) {
  const std::int64_t per_block = cuda::kThreads / r.tpr;
  return static_cast<unsigned>(std::clamp<std::int64_t>((rows + per_block - 1) / per_block, 1, cap));
}

const NormParams& params_of(const Invocation& inv) { return inv.params.as<NormParams>(); }

}  // namespace

void norm(const ExecContext& ec, const Invocation& inv) {
  const NormParams& p = params_of(inv);
  const nd::NDArray& x = inv.inputs[0];
  const NormShape s = norm_shape(p, x);
  dispatch_norm(x.dtype(), inv.inputs[1].dtype(), inv.op->name, [&](auto data_tag, auto param_tag) {
    using T = decltype(data_tag);
    using P = decltype(param_tag);
    const NormForwardArrays<T, P> a(inv);
    const RowLayout r = last_axis_rows(s) ? row_layout<T>(s.lines.length, a.x, a.y) : RowLayout{};
    if (r.packs_per_thread > 0) {
      const unsigned blocks = row_blocks(s.lines.outer, r, std::int64_t{1} << 20);
      with_packs_per_thread(r, [&](auto v) {
        cuda::launch(cuda::stream_of(ec), inv.op->name, dim3(blocks), &layer_norm_forward_packed<T, P, decltype(v)::value>, a.x,
                     a.gamma, a.beta, a.y, a.mean, a.stdev, s.lines.outer, r, p.eps);
      });
    } else if (s.lines.inner == 1) {
      cuda::launch(ec, inv.op->name, s.lines.outer * 32, &norm_forward_rows<T, P>, a.x, a.gamma, a.beta, a.y, a.mean,
                   a.stdev, s, p.eps);
    } else {
      cuda::launch(ec, inv.op->name, s.lines.outer * s.lines.inner, &norm_forward_lines<T, P>, a.x, a.gamma, a.beta,
                   a.y, a.mean, a.stdev, s, p.eps);
    }
  });
}

// _backward_*: inputs (dy, data, gamma, mean, std), outputs (dx, dgamma, dbeta).
void norm_backward(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& x = inv.inputs[1];
  const NormShape s = norm_shape(params_of(inv), x);
  dispatch_norm(x.dtype(), inv.inputs[2].dtype(), inv.op->name, [&](auto data_tag, auto param_tag) {
    using T = decltype(data_tag);
    using P = decltype(param_tag);
    const NormBackwardArrays<T, P> a(inv);
    const bool aligned = cuda::aligned16(a.dy) && cuda::aligned16(a.dx);
    const RowLayout r = last_axis_rows(s) && aligned ? row_layout<T>(s.lines.length, a.x, a.dx) : RowLayout{};
    if (r.packs_per_thread > 0) {
      using A = ComputeType<T>;
      const std::int64_t rows = s.lines.outer;
      with_packs_per_thread(r, [&](auto v) {
        cuda::launch(cuda::stream_of(ec), inv.op->name, dim3(row_blocks(rows, r, std::int64_t{1} << 20)),
                     &layer_norm_backward_packed<T, P, decltype(v)::value>, a.dy, a.x, a.gamma, a.mean, a.stdev, a.dx,
                     rows, r);
      });
      // The parameters' gradients in two fixed-order stages: about four blocks per SM of
      // (32-pack tile, chunk of rows), then the chunks' partial rows summed per column.
      const std::int64_t tiles = (r.packs + 31) / 32;
      const std::int64_t chunks =
          std::clamp<std::int64_t>(4 * std::max(ec.multiprocessors, 1) / tiles, 1, std::max<std::int64_t>(1, rows / 8));
      const std::int64_t span = (rows + chunks - 1) / chunks;
      const Workspace partial(ec, std::size_t{2} * static_cast<std::size_t>(chunks) * static_cast<std::size_t>(r.M) * sizeof(A));
      cuda::launch(cuda::stream_of(ec), inv.op->name, dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)),
                   &layer_norm_param_columns<T>, a.dy, a.x, a.mean, a.stdev, partial.as<A>(), rows, span, r);
      cuda::launch(cuda::stream_of(ec), inv.op->name, dim3((r.M + 31) / 32), &layer_norm_param_sums<A, P>,
                   partial.as<A>(), static_cast<int>(chunks), r.M, a.dgamma, a.dbeta);
      return;
    }
    if (s.lines.inner == 1) {
      cuda::launch(ec, inv.op->name, s.lines.outer * 32, &norm_backward_rows<T, P>, a.dy, a.x, a.gamma, a.mean, a.stdev,
                   a.dx, s);
    } else {
      cuda::launch(ec, inv.op->name, s.lines.outer * s.lines.inner, &norm_backward_lines<T, P>, a.dy, a.x, a.gamma,
                   a.mean, a.stdev, a.dx, s);
    }
    cuda::launch(ec, inv.op->name, s.channels, &norm_param_grads<T, P>, a.dy, a.x, a.mean, a.stdev, a.dgamma, a.dbeta, s);
  });
}

}  // namespace mx::op::gpu
