// CPU loops of the backend ops: fill, arange, cast, affine, gather, scatter.
#include "ndarray/cpu/kernels.hpp"
#include "ndarray/functors.hpp"

namespace mx::cpu_kernels {
namespace {

std::int64_t index_size(const StridedIndex<1>& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}

}  // namespace

void fill(DType dt, void* out_raw, std::int64_t n, double value) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(out_raw);
    const T v = static_cast<T>(value);
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = v;
  });
}

void arange(DType dt, void* out_raw, std::int64_t n, double start, double step) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(out_raw);
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
}

void cast(DType from, const void* in_raw, DType to, void* out_raw, std::int64_t n) {
  dispatch_dtype(from, [&](auto from_tag) {
    dispatch_dtype(to, [&](auto to_tag) {
      using S = decltype(from_tag);
      using D = decltype(to_tag);
      const S* in = static_cast<const S*>(in_raw);
      D* out = static_cast<D*>(out_raw);
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<D>(in[i]);
    });
  });
}

void affine(DType dt, void* data, std::int64_t n, double scale, double shift) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(data);
    const functors::Affine<T> f{static_cast<T>(scale), static_cast<T>(shift)};
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) values[i] = f(values[i]);
  });
}

void gather(DType dt, const GatherIndex& index, const void* in_raw, void* out_raw) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(in_raw);
    T* out = static_cast<T*>(out_raw);
    const std::int64_t n = index_size(index);
#pragma omp parallel for if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t off[1];
      index.offsets(i, off);
      out[i] = in[off[0]];
    }
  });
}

void scatter(DType dt, const GatherIndex& index, const void* in_raw, void* out_raw) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(in_raw);
    T* out = static_cast<T*>(out_raw);
    const std::int64_t n = index_size(index);
#pragma omp parallel for if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t off[1];
      index.offsets(i, off);
      out[off[0]] = in[i];
    }
  });
}

}  // namespace mx::cpu_kernels
