// CPU reductions over (outer, length, inner). Sums accumulate in the element type for floats
// (double for float32, which makes the CPU reference more exact than the GPU tree) and int64 for
// integers.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "ndarray/cpu/kernels.hpp"
#include "ndarray/functors.hpp"

namespace mx::cpu_kernels {
namespace {

template <class T>
using CpuSumType = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

template <class T>
void sum(const T* in, T* out, ReduceShape s) {
  const std::int64_t outputs = s.outer * s.inner;
#pragma omp parallel for if (outputs * s.length >= kParallelThreshold && outputs > 1) schedule(static)
  for (std::int64_t o = 0; o < s.outer; ++o) {
    std::vector<CpuSumType<T>> acc(static_cast<std::size_t>(s.inner), 0);
    for (std::int64_t k = 0; k < s.length; ++k) {
      const T* row = in + (o * s.length + k) * s.inner;
      for (std::int64_t i = 0; i < s.inner; ++i) acc[static_cast<std::size_t>(i)] += row[i];
    }
    for (std::int64_t i = 0; i < s.inner; ++i) out[o * s.inner + i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
  }
}

// Full sums of one long row split across threads.
template <class T>
void sum_all(const T* in, T* out, std::int64_t n) {
  CpuSumType<T> total = 0;
#pragma omp parallel for reduction(+ : total) if (n >= kParallelThreshold) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) total += in[i];
  *out = static_cast<T>(total);
}

template <ReduceOp op, class T, class Out>
void select(const T* in, Out* out, ReduceShape s) {
  const std::int64_t outputs = s.outer * s.inner;
#pragma omp parallel for if (outputs * s.length >= kParallelThreshold && outputs > 1) schedule(static)
  for (std::int64_t j = 0; j < outputs; ++j) {
    const std::int64_t o = j / s.inner, i = j % s.inner;
    const T* base = in + o * s.length * s.inner + i;
    T best = base[0];
    std::int64_t best_k = 0;
    for (std::int64_t k = 1; k < s.length; ++k) {
      const T v = base[k * s.inner];
      if (functors::Compare<op>::better(v, best)) {
        best = v;
        best_k = k;
      }
    }
    if constexpr (functors::is_arg_reduce(op)) {
      out[j] = static_cast<Out>(best_k);
    } else {
      out[j] = static_cast<Out>(best);
    }
  }
}

}  // namespace

void reduce(ReduceOp op, DType dt, const void* in_raw, void* out_raw, ReduceShape s) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(in_raw);
    switch (op) {
      case ReduceOp::sum:
        if (s.outer == 1 && s.inner == 1) sum_all(in, static_cast<T*>(out_raw), s.length);
        else sum(in, static_cast<T*>(out_raw), s);
        return;
      case ReduceOp::max: return select<ReduceOp::max>(in, static_cast<T*>(out_raw), s);
      case ReduceOp::min: return select<ReduceOp::min>(in, static_cast<T*>(out_raw), s);
      case ReduceOp::argmax: return select<ReduceOp::argmax>(in, static_cast<float*>(out_raw), s);
      case ReduceOp::argmin: return select<ReduceOp::argmin>(in, static_cast<float*>(out_raw), s);
      case ReduceOp::count: break;
    }
  });
}

}  // namespace mx::cpu_kernels
