// CPU copies through strided views: gather (a view made contiguous) and scatter (written into one).
#include "ndarray/cpu/kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::cpu_kernels {
namespace {

using op::parallel_for;

std::int64_t index_size(const StridedIndex<1>& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}

}  // namespace

void gather(DType dt, const GatherIndex& index, const void* in_raw, void* out_raw) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(in_raw);
    T* out = static_cast<T*>(out_raw);
    const std::int64_t n = index_size(index);
    parallel_for(n, [&](std::int64_t i) {
      std::int64_t off[1];
      index.offsets(i, off);
      out[i] = in[off[0]];
    });
  });
}

void scatter(DType dt, const GatherIndex& index, const void* in_raw, void* out_raw) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(in_raw);
    T* out = static_cast<T*>(out_raw);
    const std::int64_t n = index_size(index);
    parallel_for(n, [&](std::int64_t i) {
      std::int64_t off[1];
      index.offsets(i, off);
      out[off[0]] = in[i];
    });
  });
}

}  // namespace mx::cpu_kernels
