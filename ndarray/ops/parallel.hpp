#pragma once
// The CPU loops' one way to use every core. A loop below kParallelThreshold elements runs inline on
// the calling thread: entering an OpenMP region costs microseconds (libgomp wakes its team with a
// futex even under if(false)), more than a small loop takes; larger loops take a thread per
// kParallelThreshold elements (threads_for). Internal.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <omp.h>

#include "ndarray/ops/cpu_team.hpp"

namespace mx::op {

inline constexpr std::int64_t kParallelThreshold = 1 << 15;

// The threads a loop of `work` elements runs on: one per kParallelThreshold elements, at most the
// team (PyTorch's intra-op rule, its grain 32768). A loop over a 256 x 256 batch wakes 2 threads,
// not every core's: on a wide host, waking and then joining a team of 32 for 2048 elements each
// costs more than the loop.
inline int threads_for(std::int64_t work) {
  const std::int64_t grains = (work + kParallelThreshold - 1) / kParallelThreshold;
  return static_cast<int>(std::clamp<std::int64_t>(grains, 1, cpu_team()));
}

// body(i) for i in [0, n), split statically across threads_for(work) threads (work: default n).
template <class Body>
void parallel_for(std::int64_t n, Body&& body, std::int64_t work = -1) {
  const int threads = threads_for(work < 0 ? n : work);
  if (threads == 1) {
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < n; ++i) body(i);
}

// The same for bodies without dependencies between iterations, vectorised.
template <class Body>
void parallel_for_simd(std::int64_t n, Body&& body) {
  const int threads = threads_for(n);
  if (threads == 1) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < n; ++i) body(i);
}

// memcpy over a few cores in 64 KiB chunks from kParallelCopyBytes on: one thread's memcpy moves a
// fraction of what the memory system can (a batch staged for a GPU, a gradient written back). At
// most kCopyThreads threads, which already copy faster than PCIe moves: a team as wide as a
// 64-core host made each 3 MB copy slower than one thread's (waking, and then spinning, beside the
// threads that feed the GPUs).
inline constexpr std::size_t kParallelCopyBytes = std::size_t{256} << 10;
inline constexpr int kCopyThreads = 8;

inline void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t kChunk = std::size_t{64} << 10;
  if (bytes < kParallelCopyBytes) {
    if (bytes) std::memcpy(dst, src, bytes);
    return;
  }
  const auto chunks = static_cast<std::int64_t>((bytes + kChunk - 1) / kChunk);
  const int threads = std::min<int>(kCopyThreads, cpu_team());
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t offset = static_cast<std::size_t>(c) * kChunk;
    std::memcpy(static_cast<char*>(dst) + offset, static_cast<const char*>(src) + offset, std::min(kChunk, bytes - offset));
  }
}

}  // namespace mx::op
