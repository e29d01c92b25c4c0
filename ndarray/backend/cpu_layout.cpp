// CPU copies through strided views: gather (a view made contiguous) and scatter (written into one).
#include "ndarray/backend/cpu_kernels.hpp"
#include "ndarray/ops/parallel.hpp"

namespace mx::cpu_kernels {
namespace {

using op::parallel_for;

std::int64_t index_size(const StridedIndex<1>& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}

// gather: out[i] = in[index(i)]; scatter: out[index(i)] = in[i].
template <bool kScatter>
void move(DType dt, const GatherIndex& index, const void* in_raw, void* out_raw) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(in_raw);
    T* out = static_cast<T*>(out_raw);
    parallel_for(index_size(index), [&](std::int64_t i) {
      std::int64_t off[1];
      index.offsets(i, off);
      if constexpr (kScatter) out[off[0]] = in[i];
      else out[i] = in[off[0]];
    });
  });
}

}  // namespace

void gather(DType dt, const GatherIndex& index, const void* in, void* out) { move<false>(dt, index, in, out); }
void scatter(DType dt, const GatherIndex& index, const void* in, void* out) { move<true>(dt, index, in, out); }

}  // namespace mx::cpu_kernels
