// GPU launches of Pooling and its backward (ndarray/ops/pool.cpp has the ops and the CPU loops):
// one thread per output element forward; backward one per output writing its window where windows
// do not overlap, else one per input element (a gather over the windows that hold it); no atomics
// either way. Both through the element functions of conv_kernels.hpp.
#include "cuda/launch.hpp"
#include "ndarray/ops/conv_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

// I: the index type, 32 bits whenever every index fits (fits_int32).
template <class T, class I>
__global__ void pool_elements(ConvGeometry g, PoolingParams p, const T* x, T* y, std::int32_t* argmax, I n) {
  for (I i = global_thread(); i < n; i += grid_stride()) y[i] = pool_element(g, p, x, i, argmax);
}

template <class T, class I>
__global__ void pool_backward_elements(ConvGeometry g, PoolingParams p, const T* dy, const std::int32_t* argmax, T* dx,
                                       I n) {
  for (I i = global_thread(); i < n; i += grid_stride()) dx[i] = pool_backward_element(g, p, dy, argmax, i);
}

template <class T, class I>
__global__ void pool_backward_windows(ConvGeometry g, PoolingParams p, const T* dy, const std::int32_t* argmax, T* dx,
                                      I n) {
  for (I i = global_thread(); i < n; i += grid_stride()) pool_backward_window(g, p, dy, argmax, dx, i);
}

// fn(I{}) with the narrowest index type that holds every index of g.
template <class Fn>
void with_index_type(const ConvGeometry& g, Fn&& fn) {
  if (fits_int32(g)) return fn(std::int32_t{});
  return fn(std::int64_t{});
}

}  // namespace

void pooling(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<PoolingParams>();
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const ConvGeometry g = pool_geometry(p, x.shape(), x.dtype());
  std::int32_t* argmax = p.max ? static_cast<std::int32_t*>(inv.outputs[1].data()) : nullptr;
  dispatch_floating(x.dtype(), "Pooling", [&](auto tag) {
    using T = decltype(tag);
    with_index_type(g, [&](auto index) {
      using I = decltype(index);
      cuda::launch(ec, "Pooling", y.size(), &pool_elements<T, I>, g, p, static_cast<const T*>(x.data()),
                   static_cast<T*>(y.data()), argmax, static_cast<I>(y.size()));
    });
  });
}

void pooling_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<PoolingParams>();
  const nd::NDArray &dy = inv.inputs[0], &x = inv.inputs[1], &dx = inv.outputs[0];
  const ConvGeometry g = pool_geometry(p, x.shape(), x.dtype());
  const std::int32_t* argmax = p.max ? static_cast<const std::int32_t*>(inv.inputs[2].data()) : nullptr;
  dispatch_floating(x.dtype(), "Pooling", [&](auto tag) {
    using T = decltype(tag);
    with_index_type(g, [&](auto index) {
      using I = decltype(index);
      if (windows_disjoint(g)) {  // a thread per output writes its window
        if (!windows_tile(g)) {
          NDG_CUDA_CHECK(cudaMemsetAsync(dx.data(), 0, static_cast<std::size_t>(dx.size()) * sizeof(T), cuda::stream_of(ec)));
        }
        cuda::launch(ec, "Pooling", dy.size(), &pool_backward_windows<T, I>, g, p, static_cast<const T*>(dy.data()),
                     argmax, static_cast<T*>(dx.data()), static_cast<I>(dy.size()));
        return;
      }
      cuda::launch(ec, "Pooling", dx.size(), &pool_backward_elements<T, I>, g, p, static_cast<const T*>(dy.data()),
                   argmax, static_cast<T*>(dx.data()), static_cast<I>(dx.size()));
    });
  });
}

}  // namespace mx::op::gpu
