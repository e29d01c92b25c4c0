#pragma once
// Grid sizing and the launch shared by the kernels: 256-thread blocks, grid-stride loops, and
// 16-byte packs for contiguous elementwise work (one 128-bit load or store per pack).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda/check.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::cuda {

inline constexpr int kThreads = 256;

// Blocks for `work` items, one per thread, capped (the kernels loop with a grid stride).
inline unsigned blocks_for(std::int64_t work) {
  constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;
  return static_cast<unsigned>(std::clamp<std::int64_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

template <class T>
struct alignas(16) Pack {
  static constexpr int size = 16 / sizeof(T);
  T v[size];
};

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

__device__ __forceinline__ std::int64_t global_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// out[i] = f(in[i]); 16-byte packs when `packed` (both pointers aligned), then the tail.
template <class T, class F>
__global__ void map_elements(T* out, const T* in, std::int64_t n, bool packed, F f) {
  using P = Pack<T>;
  const std::int64_t packs = packed ? n / P::size : 0;
  for (std::int64_t p = global_thread(); p < packs; p += grid_stride()) {
    P x = reinterpret_cast<const P*>(in)[p];
#pragma unroll
    for (int j = 0; j < P::size; ++j) x.v[j] = f(x.v[j]);
    reinterpret_cast<P*>(out)[p] = x;
  }
  for (std::int64_t i = packs * P::size + global_thread(); i < n; i += grid_stride()) out[i] = f(in[i]);
}

// The max and the sum of v over the 32 lanes of a warp, in every lane (a warp per row: softmax,
// the normalisation ops).
template <class T>
__device__ __forceinline__ T warp_max(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of every thread's v over a block of kThreads, in a fixed order (the same bits every
// run); valid in thread 0.
__device__ __forceinline__ double block_sum(double v) {
  __shared__ double shared[kThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  return shared[0];
}

inline cudaStream_t stream_of(const op::ExecContext& ec) { return static_cast<cudaStream_t>(ec.stream); }

// The one kernel launch: `grid` blocks of kThreads on stream, a bad launch reported at once as
// mx::DeviceError naming op. For kernels with their own grid (a block per row).
// Through cudaLaunchKernel, whose status is the launch's: the <<<>>> form pushes and pops a
// configuration around the same call and needs cudaGetLastError after it, together 3% of a tiny
// op's host instructions (callgrind of bench/ndarray_bench's dispatch chain). The arguments are
// converted to the kernel's parameter types on the way in (as a call would), and launch_values
// hands the driver their addresses. (A std::tuple of them, unpacked by std::apply, compiled
// twice as slowly: every kernel's launch instantiates it.)
template <class... Values>
void launch_values(cudaStream_t stream, const char* op, dim3 grid, const void* kernel, Values... values) {
  void* pointers[] = {static_cast<void*>(&values)..., nullptr};
  check_launch(op, cudaLaunchKernel(kernel, grid, dim3(kThreads), pointers, 0, stream));
}

template <class... Params, class... Args>
void launch(cudaStream_t stream, const char* op, dim3 grid, void (*kernel)(Params...), Args&&... args) {
  launch_values<std::decay_t<Params>...>(stream, op, grid, reinterpret_cast<const void*>(kernel),
                                         std::forward<Args>(args)...);
}

// A grid-stride kernel over `work` items: nothing for no work.
template <class... Params, class... Args>
void launch(cudaStream_t stream, const char* op, std::int64_t work, void (*kernel)(Params...), Args&&... args) {
  if (work > 0) launch(stream, op, dim3(blocks_for(work)), kernel, std::forward<Args>(args)...);
}

// The same on an op's stream.
template <class... Params, class... Args>
void launch(const op::ExecContext& ec, const char* op, std::int64_t work, void (*kernel)(Params...), Args&&... args) {
  launch(stream_of(ec), op, work, kernel, std::forward<Args>(args)...);
}

}  // namespace mx::cuda
