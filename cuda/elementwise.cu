// GPU launches of the backend ops: fill, arange, cast, affine, gather and scatter (the op families
// are in cuda/ops/).
#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "cuda/launch.hpp"
#include "ndarray/functors.hpp"

namespace mx::cuda {
namespace {

template <class T>
__global__ void fill_elements(T* out, std::int64_t n, T value) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = value;
}

template <class T>
__global__ void arange_elements(T* out, std::int64_t n, double start, double step) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    out[i] = static_cast<T>(start + static_cast<double>(i) * step);
  }
}

template <class From, class To>
__global__ void cast_elements(To* out, const From* in, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = static_cast<To>(in[i]);
}

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

template <class T, class Fn>
void launch_map(cudaStream_t stream, T* out, const T* in, std::int64_t n, Fn fn, const char* op) {
  const bool packed = aligned16(out) && aligned16(in);
  launch(stream, op, n == 0 ? 0 : packed ? n / Pack<T>::size + 1 : n, &map_elements<T, Fn>, out, in, n, packed, fn);
}

}  // namespace

void fill(cudaStream_t stream, DType dt, void* out, std::int64_t n, double value) {
  if (n == 0) return;
  if (value == 0.0) {  // all-zero bytes in every dtype
    NDG_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(n) * dtype_size(dt), stream));
    return;
  }
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    launch(stream, "fill", n, &fill_elements<T>, static_cast<T*>(out), n, static_cast<T>(value));
  });
}

void arange(cudaStream_t stream, DType dt, void* out, std::int64_t n, double start, double step) {
  if (n == 0) return;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    launch(stream, "arange", n, &arange_elements<T>, static_cast<T*>(out), n, start, step);
  });
}

void cast(cudaStream_t stream, DType from, const void* in, DType to, void* out, std::int64_t n) {
  if (n == 0) return;
  dispatch_dtype(from, [&](auto from_tag) {
    dispatch_dtype(to, [&](auto to_tag) {
      using S = decltype(from_tag);
      using D = decltype(to_tag);
      launch(stream, "astype", n, &cast_elements<S, D>, static_cast<D*>(out), static_cast<const S*>(in), n);
    });
  });
}

void affine(cudaStream_t stream, DType dt, void* data, std::int64_t n, double scale, double shift) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_map(stream, static_cast<T*>(data), static_cast<const T*>(data), n,
               functors::Affine<T>{static_cast<T>(scale), static_cast<T>(shift)}, "affine");
  });
}

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
