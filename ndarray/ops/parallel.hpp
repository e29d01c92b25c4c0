#pragma once
// The CPU loops' one way to use every core. A loop below kParallelThreshold elements runs inline on
// the calling thread: entering an OpenMP region costs microseconds (libgomp wakes its team with a
// futex even under if(false)), more than a small loop takes; larger loops run on the whole team,
// always the same number of threads (threads_for). Internal.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

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

// Note [one loop body]
// Each loop is compiled once, in a function of its own over a range of iterations [begin, end):
// the inline path runs it over everything, each thread of the team over its static share. Were
// the loop written out in both places (a plain loop and an `omp parallel for`), every op's body
// would be optimised and vectorised twice, for each of the CPU kernels' instantiations (ops x
// dtypes): elementwise.cpp took a fifth longer to compile at -O3 so.
template <class Body>
[[gnu::noinline]] void serial_range(std::int64_t begin, std::int64_t end, Body& body) {
  for (std::int64_t i = begin; i < end; ++i) body(i);
}
template <class Body>
[[gnu::noinline]] void simd_range(std::int64_t begin, std::int64_t end, Body& body) {
#pragma omp simd
  for (std::int64_t i = begin; i < end; ++i) body(i);
}

// Thread t's share of [0, n) among `threads`, contiguous and in order (OpenMP's static schedule).
inline std::pair<std::int64_t, std::int64_t> static_share(std::int64_t n, int t, int threads) {
  const std::int64_t q = n / threads, r = n % threads;
  const std::int64_t begin = t * q + std::min<std::int64_t>(t, r);
  return {begin, begin + q + (t < r ? 1 : 0)};
}

// range(begin, end, body) over [0, n), on threads_for(work) threads.
template <class Body, class Range>
void run_shares(std::int64_t n, Body& body, std::int64_t work, Range range) {
  const int threads = threads_for(work);
  if (threads == 1) {
    range(0, n, body);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const auto [begin, end] = static_share(n, omp_get_thread_num(), omp_get_num_threads());
    range(begin, end, body);
  }
}

// body(i) for i in [0, n), split statically across threads_for(work) threads (work: default n).
template <class Body>
void parallel_for(std::int64_t n, Body&& body, std::int64_t work = -1) {
  run_shares(n, body, work < 0 ? n : work, &serial_range<std::remove_reference_t<Body>>);
}

// The same for bodies without dependencies between iterations, vectorised.
template <class Body>
void parallel_for_simd(std::int64_t n, Body&& body) {
  run_shares(n, body, n, &simd_range<std::remove_reference_t<Body>>);
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
