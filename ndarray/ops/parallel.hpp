#pragma once
// The CPU loops' one way to use every core. A loop below kParallelThreshold elements runs inline on
// the calling thread: entering an OpenMP region costs microseconds (libgomp wakes its team with a
// futex even under if(false)), more than a small loop takes. Internal.
#include <cstdint>

namespace mx::op {

inline constexpr std::int64_t kParallelThreshold = 1 << 15;

// body(i) for i in [0, n), split statically across the cores when `work` (default n) is large.
template <class Body>
void parallel_for(std::int64_t n, Body&& body, std::int64_t work = -1) {
  if ((work < 0 ? n : work) < kParallelThreshold) {
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) body(i);
}

// The same for bodies without dependencies between iterations, vectorised.
template <class Body>
void parallel_for_simd(std::int64_t n, Body&& body) {
  if (n < kParallelThreshold) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace mx::op
