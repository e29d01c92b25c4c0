// GPU copies through strided views: gather (a view made contiguous) and scatter (written into one).
// The op families are in cuda/ops/.
#include "cuda/kernels.hpp"
#include "cuda/launch.hpp"

namespace mx::cuda {
namespace {

// gather: out[i] = in[index(i)]; scatter: out[index(i)] = in[i].
template <bool kScatter, class T>
__global__ void move_elements(T* out, const T* in, GatherIndex index, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[1];
    index.offsets(i, off);
    if constexpr (kScatter) out[off[0]] = in[i];
    else out[i] = in[off[0]];
  }
}

template <int N>
std::int64_t index_size(const StridedIndex<N>& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}

template <bool kScatter>
void move(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    launch(stream, kScatter ? "scatter" : "gather", index_size(index), &move_elements<kScatter, T>, static_cast<T*>(out),
           static_cast<const T*>(in), index, index_size(index));
  });
}

}  // namespace

void gather(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  move<false>(stream, dt, index, in, out);
}
void scatter(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  move<true>(stream, dt, index, in, out);
}

}  // namespace mx::cuda
