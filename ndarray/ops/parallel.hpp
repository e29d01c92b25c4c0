#pragma once
// The CPU loops' one way to use every core. A loop below kParallelThreshold elements runs inline on
// the calling thread: entering an OpenMP region costs microseconds (libgomp wakes its team with a
// futex even under if(false)), more than a small loop takes; larger loops run on the whole team,
// always the same number of threads (threads_for). Internal.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <omp.h>

#include "ndarray/core/threads.hpp"
#include "ndarray/ops/cpu_team.hpp"

namespace mx::op {

inline constexpr std::int64_t kParallelThreshold = 1 << 15;

// The threads a loop of `work` elements runs on: 1 below kParallelThreshold, else the whole team.
// Not one thread per grain of work (PyTorch's intra-op rule): libgomp keeps a team's threads
// spinning for the next region of the same size, and a region of another size parks or wakes
// some of them. On a 32-core host, the MLP epoch of tutorials/train_fashion_mnist on cpu(0) took
// 1.11 s with loops sized by grain and 0.19 s with the whole team of 16 (bench/RESULTS.md, "One
// thread team").
// A thread under nd::SingleThreadedOps (ndarray/core/threads.hpp) keeps every loop to itself.
inline int threads_for(std::int64_t work) {
  return work < kParallelThreshold || nd::ops_single_threaded() ? 1 : cpu_team();
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
  if (bytes < kParallelCopyBytes || nd::ops_single_threaded()) {
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
