#pragma once
// Grid sizing shared by the kernels: 256-thread blocks, grid-stride loops, and 16-byte packs for
// contiguous elementwise work (one 128-bit load or store per pack).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

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

}  // namespace mx::cuda
