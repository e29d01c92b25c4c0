// GPU launches of BatchNorm and its backward (ndarray/ops/batch_norm.cpp has the ops and the CPU
// reference). The data is (outer, channels, inner) around the channel axis. Each pass:
//   1. per-channel sums: a (channel, chunk) grid of blocks, each summing its chunk of rows into
//      one partial pair, so that even a few channels fill the GPU;
//   2. one thread per channel adds the partials in double and derives the channel's coefficients
//      (and, forward in training, updates the running statistics);
//   3. one elementwise pass applies them.
// Forward sums x - shift and its square with shift = the channel's first element, which keeps the
// variance exact for data far from zero; backward sums dy and dy · (x - mean). channel_sum (a
// convolution's bias gradient) is passes 1 and 2 alone. SyncBatchNorm's pass 2 is one block that
// also exchanges the sums with the other GPUs of its group (cuda/device_exchange.hpp).
#include <algorithm>
#include <cmath>

#include "cuda/device_exchange.hpp"
#include "cuda/launch.hpp"
#include "ndarray/ops/conv_kernels.hpp"
#include "ndarray/ops/reduce_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

// The sums are pairs of the compute type (float for float32, float16 and bfloat16, double for
// float64), which is also the type of the parameters and statistics (P below).
template <class A>
struct Pair {
  A a, b;
};

// Blocks per channel: about four blocks per SM in all, each with at least a row.
std::int64_t chunks_for(const ExecContext& ec, const ReduceShape& s) {
  const std::int64_t blocks = 4 * std::max(ec.multiprocessors, 1);
  return std::clamp<std::int64_t>(blocks / std::max<std::int64_t>(s.length, 1), 1, std::min<std::int64_t>(s.outer, 65535));
}

template <class A>
__device__ Pair<A> block_sum(Pair<A> v) {
  __shared__ A shared[2][cuda::kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    v.a += __shfl_xor_sync(0xffffffffu, v.a, offset);
    v.b += __shfl_xor_sync(0xffffffffu, v.b, offset);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    shared[0][warp] = v.a;
    shared[1][warp] = v.b;
  }
  __syncthreads();
  Pair<A> total{0, 0};
  if (threadIdx.x == 0) {
    for (int w = 0; w < cuda::kThreads / 32; ++w) {
      total.a += shared[0][w];
      total.b += shared[1][w];
    }
  }
  return total;
}

// partial[channel * chunks + chunk] = Σ f(element, channel) over the chunk's rows of the channel.
template <class A, class F>
__global__ void channel_sums(F f, ReduceShape s, std::int64_t rows_per_chunk, Pair<A>* partial) {
  const std::int64_t c = blockIdx.x, chunk = blockIdx.y;
  const std::int64_t first = chunk * rows_per_chunk;
  const std::int64_t rows = std::min(s.outer, first + rows_per_chunk) - first;
  Pair<A> sum{0, 0};
  const auto add = [&](std::int64_t element) {
    const Pair<A> v = f(element, c);
    sum.a += v.a;
    sum.b += v.b;
  };
  if (s.inner >= 32) {  // row by row, the threads along the row: no division
    for (std::int64_t o = first; o < first + rows; ++o) {
      for (std::int64_t i = threadIdx.x; i < s.inner; i += blockDim.x) add((o * s.length + c) * s.inner + i);
    }
  } else {  // short rows: the threads along the chunk's elements
    for (std::int64_t j = threadIdx.x; j < rows * s.inner; j += blockDim.x) {
      add((first + j / s.inner) * s.length * s.inner + c * s.inner + j % s.inner);
    }
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partial[c * gridDim.y + chunk] = sum;
}

// channel_sums of the values themselves (a bias gradient) in 16-byte packs: rows whose length is a
// multiple of the pack, x aligned.
template <class T, class A = ComputeType<T>>
__global__ void channel_value_sums(const T* x, ReduceShape s, std::int64_t rows_per_chunk, Pair<A>* partial) {
  using P = cuda::Pack<T>;
  const std::int64_t c = blockIdx.x, chunk = blockIdx.y;
  const std::int64_t first = chunk * rows_per_chunk, last = std::min(s.outer, first + rows_per_chunk);
  const std::int64_t packs = s.inner / P::size;
  A sum = 0;
  for (std::int64_t o = first; o < last; ++o) {
    const P* row = reinterpret_cast<const P*>(x + (o * s.length + c) * s.inner);
    for (std::int64_t i = threadIdx.x; i < packs; i += blockDim.x) {
      const P v = row[i];
#pragma unroll
      for (int j = 0; j < P::size; ++j) sum += A(v.v[j]);
    }
  }
  const Pair<A> total = block_sum(Pair<A>{sum, A(0)});
  if (threadIdx.x == 0) partial[c * gridDim.y + chunk] = total;
}

// Channel c's partials added in double.
template <class T>
__device__ Pair<double> channel_total(const Pair<T>* partial, std::int64_t chunks, std::int64_t c) {
  Pair<double> total{0, 0};
  for (std::int64_t k = 0; k < chunks; ++k) {
    total.a += partial[c * chunks + k].a;
    total.b += partial[c * chunks + k].b;
  }
  return total;
}

template <class T, class A = ComputeType<T>>
struct ShiftedMoments {
  const T* x;
  std::int64_t inner, length;
  __device__ Pair<A> operator()(std::int64_t i, std::int64_t c) const {
    const A d = A(x[i]) - A(x[c * inner]);
    return {d, d * d};
  }
};

template <class T, class A = ComputeType<T>>
struct GradSums {
  const T *dy, *x;
  const A* mean;
  __device__ Pair<A> operator()(std::int64_t i, std::int64_t c) const {
    return {A(dy[i]), A(dy[i]) * (A(x[i]) - mean[c])};
  }
};

template <class T, class A = ComputeType<T>>
struct Values {
  const T* x;
  __device__ Pair<A> operator()(std::int64_t i, std::int64_t) const { return {A(x[i]), A(0)}; }
};

// out[c] = the channel's partials added in double.
template <class T, class A = ComputeType<T>>
__global__ void finish_sums(const Pair<A>* partial, std::int64_t chunks, std::int64_t channels, T* out) {
  for (std::int64_t c = global_thread(); c < channels; c += grid_stride()) {
    out[c] = static_cast<T>(channel_total(partial, chunks, c).a);
  }
}

// Training: the batch's statistics from the partials; the running ones updated (variance with
// Bessel's correction).
template <class T, class P = ComputeType<T>>
__global__ void finish_statistics(const Pair<P>* partial, std::int64_t chunks, const T* x, ReduceShape s,
                                  BatchNormParams p, P* mean, P* invstd, P* moving_mean, P* moving_var) {
  const double count = static_cast<double>(s.outer * s.inner);
  for (std::int64_t c = global_thread(); c < s.length; c += grid_stride()) {
    const Pair<double> moments = channel_total(partial, chunks, c);  // Σ(x - shift), Σ(x - shift)²
    const double shifted_mean = moments.a / count;
    const double var = fmax(moments.b / count - shifted_mean * shifted_mean, 0.0);
    const double m = static_cast<double>(x[c * s.inner]) + shifted_mean;
    mean[c] = static_cast<P>(m);
    invstd[c] = static_cast<P>(rsqrt(var + p.eps));
    moving_mean[c] = static_cast<P>(p.momentum * moving_mean[c] + (1 - p.momentum) * m);
    moving_var[c] = static_cast<P>(p.momentum * moving_var[c] + (1 - p.momentum) * (count > 1 ? var * count / (count - 1) : var));
  }
}

// Prediction: the running statistics.
template <class T>
__global__ void running_statistics(std::int64_t channels, double eps, const T* moving_mean, const T* moving_var,
                                   T* mean, T* invstd) {
  for (std::int64_t c = global_thread(); c < channels; c += grid_stride()) {
    mean[c] = moving_mean[c];
    invstd[c] = static_cast<T>(rsqrt(static_cast<double>(moving_var[c]) + eps));
  }
}

// f(element, channel) for every element of (outer, channels, inner): long rows along the grid's
// y with the threads along the row (no division per element), short ones one thread per element.
template <class F>
__global__ void per_channel_rows(F f, ReduceShape s) {
  for (std::int64_t r = blockIdx.y; r < s.outer * s.length; r += gridDim.y) {
    const std::int64_t c = r % s.length;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < s.inner;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      f(r * s.inner + i, c);
    }
  }
}

template <class F>
__global__ void per_channel_elements(F f, ReduceShape s, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) f(i, (i / s.inner) % s.length);
}

template <class F>
void launch_per_channel(const ExecContext& ec, const char* op, const ReduceShape& s, F f) {
  const std::int64_t rows = s.outer * s.length, n = rows * s.inner;
  if (n == 0) return;
  if (s.inner < 32) return cuda::launch(ec, op, n, &per_channel_elements<F>, f, s, n);
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>((s.inner + cuda::kThreads - 1) / cuda::kThreads, 64)),
                  static_cast<unsigned>(std::min<std::int64_t>(rows, 65535)));
  cuda::launch(cuda::stream_of(ec), op, grid, &per_channel_rows<F>, f, s);
}

// y = x · scale + shift with scale = gamma · invstd, shift = beta - mean · scale.
template <class T, class P = ComputeType<T>>
struct Normalize {
  const T* x;
  const P *gamma, *beta, *mean, *invstd;
  T* y;
  bool fix_gamma;
  __device__ void operator()(std::int64_t i, std::int64_t c) const {
    const P scale = (fix_gamma ? P(1) : gamma[c]) * invstd[c];
    y[i] = static_cast<T>((P(x[i]) - mean[c]) * scale + beta[c]);
  }
};

// Backward, per channel: dbeta, dgamma, and into coef the three numbers dx needs.
template <class T>
__global__ void finish_gradients(const Pair<T>* partial, std::int64_t chunks, ReduceShape s, BatchNormParams p,
                                 const T* gamma, const T* invstd, T* dgamma, T* dbeta, T* coef) {
  const double count = static_cast<double>(s.outer * s.inner);
  for (std::int64_t c = global_thread(); c < s.length; c += grid_stride()) {
    const Pair<double> sums = channel_total(partial, chunks, c);  // Σdy, Σdy · (x - mean)
    const double sum_dy = sums.a, sum_dy_xhat = sums.b * invstd[c];
    dbeta[c] = static_cast<T>(sum_dy);
    dgamma[c] = p.fix_gamma ? T(0) : static_cast<T>(sum_dy_xhat);
    const bool batch = p.training && count > 0;
    coef[3 * c] = static_cast<T>((p.fix_gamma ? 1.0 : static_cast<double>(gamma[c])) * invstd[c]);  // scale
    coef[3 * c + 1] = static_cast<T>(batch ? sum_dy / count : 0.0);                                 // mean dy
    coef[3 * c + 2] = static_cast<T>(batch ? sum_dy_xhat / count * invstd[c] : 0.0);  // per unit of x - mean
  }
}

// dx = scale · (dy - mean_dy - (x - mean) · k).
template <class T, class P = ComputeType<T>>
struct InputGradient {
  const T *dy, *x;
  const P *mean, *coef;
  T* dx;
  __device__ void operator()(std::int64_t i, std::int64_t c) const {
    dx[i] = static_cast<T>(coef[3 * c] * (P(dy[i]) - coef[3 * c + 1] - (P(x[i]) - mean[c]) * coef[3 * c + 2]));
  }
};

// --- SyncBatchNorm's pass 2: one block exchanging (count, per-channel sums) with the group ------
// A vector of 2 · channels + 1 doubles per GPU: [count, a[channels], b[channels]]. `own` (device
// memory) stands for the slot without a group (ndev = 1, or no batch statistics).
struct ChannelExchange {
  cuda::ExchangeView view;
  double* own;
  bool shared;
  unsigned long long round;

  __device__ ChannelExchange(const cuda::ExchangeView& v, double* own_slot, bool exchange)
      : view(v), own(own_slot), shared(exchange && v.ranks > 1), round(shared ? cuda::exchange_round(v) : 0) {}
  __device__ double* mine() const { return shared ? cuda::exchange_slot(view, round, view.rank) : own; }
  __device__ void publish_and_wait() const {
    if (shared) {
      cuda::exchange_publish_and_wait(view, round);
    } else {
      __syncthreads();
    }
  }
  // Element i summed over the group in rank order: the same on every GPU.
  __device__ double total(std::int64_t i) const {
    if (!shared) return own[i];
    double t = 0;
    for (int r = 0; r < view.ranks; ++r) t += cuda::exchange_load(view, round, r, i);
    return t;
  }
};

// Training: each GPU's count, Σx and Σx² (from its shifted sums, in double), exchanged; the whole
// batch's statistics; the running ones updated as BatchNorm does.
template <class T, class P = ComputeType<T>>
__global__ void sync_statistics(const Pair<P>* partial, std::int64_t chunks, const T* x, ReduceShape s,
                                BatchNormParams p, cuda::ExchangeView v, double* own, P* mean, P* invstd,
                                P* moving_mean, P* moving_var) {
  const ChannelExchange ex(v, own, true);
  double* mine = ex.mine();
  const std::int64_t channels = s.length;
  const double local = static_cast<double>(s.outer * s.inner);
  for (std::int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    double sum = 0, squares = 0;
    if (local > 0) {
      const Pair<double> m = channel_total(partial, chunks, c);  // Σ(x - shift), Σ(x - shift)²
      const double shift = static_cast<double>(x[c * s.inner]);
      sum = m.a + local * shift;
      squares = m.b + 2 * shift * m.a + local * shift * shift;
    }
    mine[1 + c] = sum;
    mine[1 + channels + c] = squares;
  }
  if (threadIdx.x == 0) mine[0] = local;
  ex.publish_and_wait();
  const double count = ex.total(0);
  for (std::int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    if (count == 0) {  // no batch anywhere: the running statistics, unchanged
      mean[c] = moving_mean[c];
      invstd[c] = static_cast<P>(rsqrt(static_cast<double>(moving_var[c]) + p.eps));
      continue;
    }
    const double m = ex.total(1 + c) / count;
    const double var = fmax(ex.total(1 + channels + c) / count - m * m, 0.0);
    mean[c] = static_cast<P>(m);
    invstd[c] = static_cast<P>(rsqrt(var + p.eps));
    moving_mean[c] = static_cast<P>(p.momentum * moving_mean[c] + (1 - p.momentum) * m);
    moving_var[c] = static_cast<P>(p.momentum * moving_var[c] + (1 - p.momentum) * (count > 1 ? var * count / (count - 1) : var));
  }
}

// Backward: dgamma and dbeta from this GPU's sums (the trainer adds the GPUs'), dx's coefficients
// from the group's (as finish_gradients, over the whole batch).
template <class P>
__global__ void sync_gradients(const Pair<P>* partial, std::int64_t chunks, ReduceShape s, BatchNormParams p,
                               cuda::ExchangeView v, double* own, const P* gamma, const P* invstd, P* dgamma, P* dbeta,
                               P* coef) {
  const ChannelExchange ex(v, own, p.training);
  double* mine = ex.mine();
  const std::int64_t channels = s.length;
  const double local = static_cast<double>(s.outer * s.inner);
  for (std::int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const Pair<double> sums = local > 0 ? channel_total(partial, chunks, c) : Pair<double>{0, 0};  // Σdy, Σdy · (x - mean)
    dbeta[c] = static_cast<P>(sums.a);
    dgamma[c] = p.fix_gamma ? P(0) : static_cast<P>(sums.b * invstd[c]);
    mine[1 + c] = sums.a;
    mine[1 + channels + c] = sums.b;
  }
  if (threadIdx.x == 0) mine[0] = local;
  ex.publish_and_wait();
  const double count = ex.total(0);
  for (std::int64_t c = threadIdx.x; c < channels; c += blockDim.x) {
    const bool batch = p.training && count > 0;
    const double k = static_cast<double>(invstd[c]);
    coef[3 * c] = static_cast<P>((p.fix_gamma ? 1.0 : static_cast<double>(gamma[c])) * k);
    coef[3 * c + 1] = static_cast<P>(batch ? ex.total(1 + c) / count : 0.0);
    coef[3 * c + 2] = static_cast<P>(batch ? ex.total(1 + channels + c) / count * k * k : 0.0);
  }
}

ReduceShape channel_shape(const BatchNormParams& p, const nd::NDArray& x) {
  return around_axis(x.shape(), p.axis < 0 ? p.axis + x.ndim() : p.axis);
}

// The channel sums of f into a workspace-held partial array, chunked as chunks_for says.
template <class A, class F>
void launch_sums(const ExecContext& ec, const char* op, const ReduceShape& s, std::int64_t chunks, F f, Pair<A>* partial) {
  const std::int64_t rows_per_chunk = (s.outer + chunks - 1) / chunks;
  cuda::launch(cuda::stream_of(ec), op, dim3(static_cast<unsigned>(s.length), static_cast<unsigned>(chunks)),
               &channel_sums<A, F>, f, s, rows_per_chunk, partial);
}

}  // namespace

void channel_sum(const ExecContext& ec, const ReduceShape& s, DType dtype, const void* x, void* out) {
  dispatch_floating(dtype, "channel_sum", [&](auto tag) {
    using T = decltype(tag);
    using A = ComputeType<T>;
    if (s.outer * s.inner == 0) {
      NDG_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(s.length) * sizeof(T), cuda::stream_of(ec)));
      return;
    }
    const std::int64_t chunks = chunks_for(ec, s);
    const Workspace partial(ec, static_cast<std::size_t>(s.length * chunks) * sizeof(Pair<A>));
    constexpr std::int64_t pack = cuda::Pack<T>::size;
    if (s.inner % pack == 0 && s.inner >= 4 * pack && cuda::aligned16(x)) {
      const std::int64_t rows_per_chunk = (s.outer + chunks - 1) / chunks;
      cuda::launch(cuda::stream_of(ec), "channel_sum", dim3(static_cast<unsigned>(s.length), static_cast<unsigned>(chunks)),
                   &channel_value_sums<T>, static_cast<const T*>(x), s, rows_per_chunk, partial.as<Pair<A>>());
    } else {
      launch_sums(ec, "channel_sum", s, chunks, Values<T>{static_cast<const T*>(x)}, partial.as<Pair<A>>());
    }
    cuda::launch(ec, "channel_sum", s.length, &finish_sums<T>, partial.as<Pair<A>>(), chunks, s.length,
                 static_cast<T*>(out));
  });
}

void batch_norm(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<BatchNormParams>();
  const nd::NDArray& x = inv.inputs[0];
  const ReduceShape s = channel_shape(p, x);
  dispatch_floating(x.dtype(), "BatchNorm", [&](auto tag) {
    using T = decltype(tag);
    using P = ComputeType<T>;  // parameters and statistics: float32 for 16-bit data
    const T* in = static_cast<const T*>(x.data());
    const auto param = [&](std::size_t i) { return static_cast<P*>(inv.inputs[i].data()); };
    P *mean = static_cast<P*>(inv.outputs[1].data()), *invstd = static_cast<P*>(inv.outputs[2].data());
    if (p.training && x.size() > 0) {
      const std::int64_t chunks = chunks_for(ec, s);
      const Workspace partial(ec, static_cast<std::size_t>(s.length * chunks) * sizeof(Pair<P>));
      launch_sums(ec, "BatchNorm", s, chunks, ShiftedMoments<T>{in, s.inner, s.length}, partial.as<Pair<P>>());
      cuda::launch(ec, "BatchNorm", s.length, &finish_statistics<T>, partial.as<Pair<P>>(), chunks, in, s, p, mean,
                   invstd, param(3), param(4));
    } else {
      cuda::launch(ec, "BatchNorm", s.length, &running_statistics<P>, s.length, p.eps, param(3), param(4), mean, invstd);
    }
    launch_per_channel(ec, "BatchNorm", s,
                       Normalize<T>{in, param(1), param(2), mean, invstd, static_cast<T*>(inv.outputs[0].data()),
                                    p.fix_gamma});
  });
}

void batch_norm_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<BatchNormParams>();
  const nd::NDArray& x = inv.inputs[1];
  const ReduceShape s = channel_shape(p, x);
  dispatch_floating(x.dtype(), "BatchNorm", [&](auto tag) {
    using T = decltype(tag);
    using P = ComputeType<T>;
    const auto data = [&](std::size_t i) { return static_cast<const T*>(inv.inputs[i].data()); };
    const auto param = [&](std::size_t i) { return static_cast<const P*>(inv.inputs[i].data()); };
    const auto output = [&](std::size_t i) { return static_cast<P*>(inv.outputs[i].data()); };
    const std::int64_t chunks = x.size() > 0 ? chunks_for(ec, s) : 1;
    const Workspace partial(ec, static_cast<std::size_t>(s.length * chunks) * sizeof(Pair<P>));
    const Workspace coef(ec, static_cast<std::size_t>(3 * s.length) * sizeof(P));
    if (x.size() > 0) {
      launch_sums(ec, "BatchNorm", s, chunks, GradSums<T>{data(0), data(1), param(3)}, partial.as<Pair<P>>());
    } else {
      NDG_CUDA_CHECK(cudaMemsetAsync(partial.data(), 0, static_cast<std::size_t>(s.length) * sizeof(Pair<P>),
                                     cuda::stream_of(ec)));
    }
    cuda::launch(ec, "BatchNorm", s.length, &finish_gradients<P>, partial.as<Pair<P>>(), chunks, s, p, param(2),
                 param(4), output(1), output(2), coef.as<P>());
    launch_per_channel(ec, "BatchNorm", s,
                       InputGradient<T>{data(0), data(1), param(3), coef.as<const P>(), static_cast<T*>(inv.outputs[0].data())});
  });
}

namespace {

// The group of the op's key for the (2 · channels + 1)-double vectors, or none (ndev = 1).
cuda::ExchangeView channel_exchange(const ExecContext& ec, const SyncBatchNormParams& sp, std::int64_t channels) {
  if (sp.ndev == 1) return {};
  return cuda::exchange_view(sp.key, sp.ndev, 2 * channels + 1, ec.ctx.device_id(), "SyncBatchNorm");
}

}  // namespace

void sync_batch_norm(const ExecContext& ec, const Invocation& inv) {
  const auto& sp = inv.params.as<SyncBatchNormParams>();
  const BatchNormParams& p = sp.bn;
  const nd::NDArray& x = inv.inputs[0];
  const ReduceShape s = channel_shape(p, x);
  dispatch_floating(x.dtype(), "SyncBatchNorm", [&](auto tag) {
    using T = decltype(tag);
    using P = ComputeType<T>;
    const T* in = static_cast<const T*>(x.data());
    const auto param = [&](std::size_t i) { return static_cast<P*>(inv.inputs[i].data()); };
    P *mean = static_cast<P*>(inv.outputs[1].data()), *invstd = static_cast<P*>(inv.outputs[2].data());
    if (p.training) {
      const cuda::ExchangeView v = channel_exchange(ec, sp, s.length);
      const std::int64_t chunks = x.size() > 0 ? chunks_for(ec, s) : 1;
      const Workspace partial(ec, static_cast<std::size_t>(s.length * chunks) * sizeof(Pair<P>));
      const Workspace own(ec, static_cast<std::size_t>(2 * s.length + 1) * sizeof(double));
      if (x.size() > 0) {
        launch_sums(ec, "SyncBatchNorm", s, chunks, ShiftedMoments<T>{in, s.inner, s.length}, partial.as<Pair<P>>());
      }
      cuda::launch(cuda::stream_of(ec), "SyncBatchNorm", dim3(1), &sync_statistics<T>, partial.as<Pair<P>>(), chunks,
                   in, s, p, v, own.as<double>(), mean, invstd, param(3), param(4));
    } else {
      cuda::launch(ec, "SyncBatchNorm", s.length, &running_statistics<P>, s.length, p.eps, param(3), param(4), mean,
                   invstd);
    }
    launch_per_channel(ec, "SyncBatchNorm", s,
                       Normalize<T>{in, param(1), param(2), mean, invstd, static_cast<T*>(inv.outputs[0].data()),
                                    p.fix_gamma});
  });
}

void sync_batch_norm_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& sp = inv.params.as<SyncBatchNormParams>();
  const BatchNormParams& p = sp.bn;
  const nd::NDArray& x = inv.inputs[1];
  const ReduceShape s = channel_shape(p, x);
  dispatch_floating(x.dtype(), "SyncBatchNorm", [&](auto tag) {
    using T = decltype(tag);
    using P = ComputeType<T>;
    const auto data = [&](std::size_t i) { return static_cast<const T*>(inv.inputs[i].data()); };
    const auto param = [&](std::size_t i) { return static_cast<const P*>(inv.inputs[i].data()); };
    const auto output = [&](std::size_t i) { return static_cast<P*>(inv.outputs[i].data()); };
    const cuda::ExchangeView v = p.training ? channel_exchange(ec, sp, s.length) : cuda::ExchangeView{};
    const std::int64_t chunks = x.size() > 0 ? chunks_for(ec, s) : 1;
    const Workspace partial(ec, static_cast<std::size_t>(s.length * chunks) * sizeof(Pair<P>));
    const Workspace own(ec, static_cast<std::size_t>(2 * s.length + 1) * sizeof(double));
    const Workspace coef(ec, static_cast<std::size_t>(3 * s.length) * sizeof(P));
    if (x.size() > 0) {
      launch_sums(ec, "SyncBatchNorm", s, chunks, GradSums<T>{data(0), data(1), param(3)}, partial.as<Pair<P>>());
    }
    cuda::launch(cuda::stream_of(ec), "SyncBatchNorm", dim3(1), &sync_gradients<P>, partial.as<Pair<P>>(), chunks, s, p,
                 v, own.as<double>(), param(2), param(4), output(1), output(2), coef.as<P>());
    launch_per_channel(ec, "SyncBatchNorm", s,
                       InputGradient<T>{data(0), data(1), param(3), coef.as<const P>(), static_cast<T*>(inv.outputs[0].data())});
  });
}

}  // namespace mx::op::gpu
