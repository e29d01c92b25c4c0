// GPU copies through strided views: gather (a view made contiguous) and scatter (written into one).
// The op families are in cuda/ops/.
#include "cuda/kernels.hpp"
#include "cuda/launch.hpp"

namespace mx::cuda {
namespace {

template <class T>
__global__ void gather_elements(T* out, const T* in, GatherIndex index, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[1];
    index.offsets(i, off);
    out[i] = in[off[0]];
  }
}

template <class T>
__global__ void scatter_elements(T* out, const T* in, GatherIndex index, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[1];
    index.offsets(i, off);
    out[off[0]] = in[i];
  }
}

template <int N>
std::int64_t index_size(const StridedIndex<N>& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}

}  // namespace

void gather(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  const std::int64_t n = index_size(index);
  if (n == 0) return;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    launch(stream, "gather", n, &gather_elements<T>, static_cast<T*>(out), static_cast<const T*>(in), index, n);
  });
}

void scatter(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  const std::int64_t n = index_size(index);
  if (n == 0) return;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    launch(stream, "scatter", n, &scatter_elements<T>, static_cast<T*>(out), static_cast<const T*>(in), index, n);
  });
}

}  // namespace mx::cuda
