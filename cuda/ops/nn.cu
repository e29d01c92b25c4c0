// GPU launches of the nn family (ndarray/ops/nn.cpp has the ops and their CPU reference loops).
#include "cuda/curand_stream.hpp"
#include "cuda/device.hpp"
#include "cuda/launch.hpp"
#include "ndarray/ops/linalg_kernels.hpp"
#include "ndarray/ops/nn_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

// out[r, c] = act(out[r, c] + bias[c]); bias may be null.
template <class T, class Act>
__global__ void bias_activation_elements(T* out, const T* bias, std::int64_t rows, std::int64_t cols, Act act) {
  const std::int64_t n = rows * cols;
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const T x = bias ? static_cast<T>(out[i] + bias[i % cols]) : out[i];
    out[i] = act(x);
  }
}

// mask[i] = draw[i] > p ? scale : 0; out[i] = in[i] * mask[i]. Draws are float for float16 and
// bfloat16.
template <class T>
__global__ void dropout_elements(T* out, T* mask, const T* in, const ComputeType<T>* draws, std::int64_t n,
                                 ComputeType<T> threshold, T scale) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    mask[i] = draws[i] > threshold ? scale : T(0);
    out[i] = static_cast<T>(in[i] * mask[i]);
  }
}

// FullyConnected of a few rows (kFewRows or fewer, float32): y[m, n] = act(x[m, :] · w[n, :] + b[n]),
// one kernel where cuBLASLt runs a GEMV kernel per product (about 2.5 µs each on an H100 at batch
// 1). `split` warps (1, 2, 4 or 8) share an output n, each summing a contiguous chunk of the k range
// (at most kFewPerLane values per lane); their sums meet in shared memory in a fixed order, so
// results repeat bit for bit. A block of 8 warps holds 8 / split outputs.
// Launched as a programmatic dependent launch on Hopper (few_rows_launch): the kernel lets the next
// one be launched at once and only then waits for the previous kernel's writes. Before waiting it
// reads its weight chunk and bias where they are `settled` (ExecContext::settled_inputs: no kernel
// that may still run writes them, as in a captured forward), so that only x's load follows the
// wait; otherwise (an optimizer step may be the kernel ahead) it only warms L2 with them. L2 is
// where the GPU's memory is coherent, so what is read after the wait is fresh.
constexpr int kFewRows = 4;
constexpr int kFewPerLane = 16;
constexpr int kFewWarps = cuda::kThreads / 32;

template <int kPerLane>
__device__ __forceinline__ void load_weight_chunk(const float* row, int k0, int k1, int lane, float (&wv)[kPerLane]) {
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int k = k0 + i * 32 + lane;
    wv[i] = k < k1 ? row[k] : 0.0f;
  }
}

// kRows: 1 (a batch of one: a quarter of the registers and shuffles), else kFewRows; `rows` of them
// are used. kPerLane: the most values a lane sums (4 where the chunks allow, else kFewPerLane).
template <int kRows, int kPerLane, class Act>
__global__ void __launch_bounds__(cuda::kThreads)
    few_rows_dense(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                   float* __restrict__ y, int rows, int in, int out, int split, bool settled, Act act) {
  __shared__ float partial[kFewWarps][kRows];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int n = static_cast<int>(blockIdx.x) * (kFewWarps / split) + warp / split;
  const int chunk = (in + split - 1) / split;
  const int k0 = (warp % split) * chunk, k1 = n < out ? min(in, k0 + chunk) : k0;  // no chunk past the outputs
  const float* row = w + static_cast<std::int64_t>(min(n, out - 1)) * in;
  float wv[kPerLane];
  float b = 0.0f;
  const auto load_weights = [&] {
    load_weight_chunk(row, k0, k1, lane, wv);
    if (bias && n < out) b = bias[n];
  };
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (settled) load_weights();
  else for (int k = k0 + lane * 32; k < k1; k += 32 * 32) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + k));
  asm volatile("griddepcontrol.wait;" ::: "memory");
#else
  settled = false;
#endif
  if (!settled) load_weights();
  float acc[kRows] = {};
#pragma unroll
  for (int m = 0; m < kRows; ++m) {
    if (m >= rows) break;
    const float* xm = x + static_cast<std::int64_t>(m) * in;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int k = k0 + i * 32 + lane;
      if (k < k1) acc[m] = fmaf(wv[i], xm[k], acc[m]);
    }
  }
#pragma unroll
  for (int m = 0; m < kRows; ++m) {
    for (int offset = 16; offset > 0; offset /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], offset);
  }
  if (lane == 0) {
#pragma unroll
    for (int m = 0; m < kRows; ++m) partial[warp][m] = acc[m];
  }
  __syncthreads();
  // The first warp of each output adds its `split` sums, one per lane, in a butterfly: they are
  // read at once, where a loop would read them one after the other.
  if (warp % split == 0 && n < out) {
#pragma unroll
    for (int m = 0; m < kRows; ++m) {
      if (m >= rows) break;
      float sum = lane < split ? partial[warp + lane][m] : 0.0f;
      for (int offset = split / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      if (lane == 0) y[static_cast<std::int64_t>(m) * out + n] = act(bias ? sum + b : sum);
    }
  }
}

// The few-rows path of FullyConnected, when the invocation fits it: float32, contiguous, at most
// kFewRows rows and 8 · 32 · kFewPerLane input features. Returns whether it ran.
bool few_rows_fully_connected(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<FullyConnectedParams>();
  const nd::NDArray &x = inv.inputs[0], &w = inv.inputs[1], &y = inv.outputs[0];
  if (y.dtype() != DType::float32 || y.size() == 0 || !x.is_contiguous() || !w.is_contiguous()) return false;
  if (!p.no_bias && !inv.inputs[2].is_contiguous()) return false;
  const std::int64_t out = p.num_hidden, rows = y.size() / out, in = w.shape()[1];
  if (rows > kFewRows || in < 1 || in > kFewWarps * 32 * kFewPerLane) return false;
  // The fewest warps per output whose chunks fit, then more while the GPU has room for them and a
  // chunk stays at least 32 values: shorter chunks finish sooner (batch 1 of a 784-256-256-10 MLP,
  // one H100: 8 warps per output in all three layers replay in 6.0 µs, 4 in 6.6 µs).
  int split = 1;
  while (split * 32 * kFewPerLane < in) split *= 2;
  while (split < kFewWarps && out * split < 4096 && in / (2 * split) >= 32) split *= 2;
  const dim3 grid(static_cast<unsigned>((out + kFewWarps / split - 1) / (kFewWarps / split)));
  const cuda::DependentLaunch launch(grid, dim3(cuda::kThreads), cuda::stream_of(ec),
                                     cuda::device(ec.ctx.device_id()).dependent_launch());
  const float* bias = p.no_bias ? nullptr : static_cast<const float*>(inv.inputs[2].data());
  const std::uint32_t params = p.no_bias ? 1u << 1 : 1u << 1 | 1u << 2;
  const bool settled = (ec.settled_inputs & params) == params;
  with_activation(p.act, [&](auto act) {
    using A = decltype(act);
    const bool short_chunks = (in + split - 1) / split <= 32 * 4;
    const auto kernel = rows == 1 ? (short_chunks ? &few_rows_dense<1, 4, A> : &few_rows_dense<1, kFewPerLane, A>)
                                  : (short_chunks ? &few_rows_dense<kFewRows, 4, A> : &few_rows_dense<kFewRows, kFewPerLane, A>);
    NDG_CUDA_CHECK(cudaLaunchKernelEx(&launch.config, kernel, static_cast<const float*>(x.data()),
                                      static_cast<const float*>(w.data()), bias, static_cast<float*>(y.data()),
                                      static_cast<int>(rows), static_cast<int>(in), static_cast<int>(out), split,
                                      settled, act));
  });
  return true;
}

// out[i] = f(g[i], x[i], y[i])
template <class T, class F>
__global__ void map3_elements(T* out, const T* g, const T* x, const T* y, std::int64_t n, F f) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = f(g[i], x[i], y[i]);
}

}  // namespace

// LeakyReLU: one elementwise pass with the shared element function (nn_kernels.hpp).
void leaky_relu(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<LeakyReLUParams>();
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  dispatch_floating(x.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data());
    T* out = static_cast<T*>(y.data());
    const bool packed = cuda::aligned16(in) && cuda::aligned16(out);
    cuda::launch(ec, inv.op->name, x.size(), &cuda::map_elements<T, LeakyReLUForward<T>>, out, in, x.size(), packed,
                 LeakyReLUForward<T>{p.act, static_cast<ComputeType<T>>(p.slope)});
  });
}

// _backward_LeakyReLU: inputs (g, x, y), output dx.
void leaky_relu_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<LeakyReLUParams>();
  const nd::NDArray& dx = inv.outputs[0];
  dispatch_floating(dx.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, inv.op->name, dx.size(), &map3_elements<T, LeakyReLUBackward<T>>, static_cast<T*>(dx.data()),
                 static_cast<const T*>(inv.inputs[0].data()), static_cast<const T*>(inv.inputs[1].data()),
                 static_cast<const T*>(inv.inputs[2].data()), dx.size(), LeakyReLUBackward<T>{p.act, static_cast<ComputeType<T>>(p.slope)});
  });
}

// cuRAND's uniform draws (a multiple of 4, into scratch memory), then one pass for mask and result.
void dropout(const ExecContext& ec, const Invocation& inv) {
  const double p = inv.params.as<DropoutParams>().p;
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0], &mask = inv.outputs[1];
  const std::int64_t n = x.size(), padded = (n + 3) / 4 * 4;
  if (n == 0) return;
  dispatch_floating(x.dtype(), "Dropout", [&](auto tag) {
    using T = decltype(tag);
    using U = ComputeType<T>;
    const Workspace draws(ec, static_cast<std::size_t>(padded) * sizeof(U));
    {
      auto [gen, lock] = cuda::device(ec.ctx.device_id()).curand(-1, padded);
      cuda::generate_uniform(gen, dtype_of<U>, draws.data(), padded);
    }
    cuda::launch(ec, "Dropout", n, &dropout_elements<T>, static_cast<T*>(y.data()), static_cast<T*>(mask.data()),
                 static_cast<const T*>(x.data()), draws.as<U>(), n, static_cast<U>(p), static_cast<T>(1.0 / (1.0 - p)));
  });
}

// A few rows: few_rows_dense. Else the product with the bias and relu in cuBLASLt's epilogue (one
// kernel) where it has one; else the product, then the bias and activation in one pass over it,
// in place.
void fully_connected(const ExecContext& ec, const Invocation& inv) {
  if (few_rows_fully_connected(ec, inv)) return;
  const auto& p = inv.params.as<FullyConnectedParams>();
  const nd::NDArray& y = inv.outputs[0];
  const bool relu = p.act == UnaryOp::relu;
  if ((!p.no_bias || relu) && (!p.act || relu) && y.size() > 0 && inv.inputs[1].shape()[1] > 0) {
    const void* bias = p.no_bias ? nullptr : inv.inputs[2].data();
    if (gemm_bias_relu(ec, y.dtype(), fully_connected_gemm(inv), inv.inputs[0].data(), inv.inputs[1].data(), y.data(),
                       bias, relu)) {
      return;
    }
  }
  fully_connected_product(ec, inv);
  if (p.no_bias && !p.act) return;
  const std::int64_t cols = p.num_hidden, rows = y.size() / cols;
  dispatch_floating(y.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* bias = p.no_bias ? nullptr : static_cast<const T*>(inv.inputs[2].data());
    with_activation(p.act, [&](auto act) {
      cuda::launch(ec, inv.op->name, rows * cols, &bias_activation_elements<T, decltype(act)>,
                   static_cast<T*>(y.data()), bias, rows, cols, act);
    });
  });
}

// Both gradients from one cuBLASLt call (its BGRADB epilogue sums g over the rows while the
// product reads it) where cuBLASLt has that algorithm; else the product, then the column sums.
void fully_connected_weight_grad(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &g = inv.inputs[0], &dw = inv.outputs[0], &db = inv.outputs[1];
  if (dw.size() > 0 && g.shape()[0] > 0 &&
      gemm_bias_grad(ec, g.dtype(), fully_connected_weight_grad_gemm(inv), g.data(), inv.inputs[1].data(), dw.data(),
                     db.data())) {
    return;
  }
  fully_connected_weight_grad_unfused(ec, inv);
}

}  // namespace mx::op::gpu
