// GPU launches of the image family (ndarray/ops/image.cpp has the ops and the CPU loops):
// BilinearResize2D a thread per output element; its backward a thread per output element adding
// its four shares into dx with atomics (in float for the 16-bit types, rounded once after).
#include "cuda/check.hpp"
#include "cuda/launch.hpp"
#include "ndarray/ops/image_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

template <class T>
__global__ void resize_elements(ResizeGeometry g, const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = resize_element(g, x, i);
}

// A = ComputeType<T>: dx is T for float and double, a float buffer for the 16-bit types.
template <class T, class A>
__global__ void resize_scatter_elements(ResizeGeometry g, const T* dy, A* dx, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    resize_scatter<A>(g, i, static_cast<A>(dy[i]), [&](std::int64_t j, A v) { atomicAdd(dx + j, v); });
  }
}

template <class T, class A>
__global__ void round_elements(const A* in, T* out, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = static_cast<T>(in[i]);
}

}  // namespace

void bilinear_resize(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const ResizeGeometry g = resize_geometry(inv.params.as<BilinearResizeParams>(), x.shape());
  dispatch_floating(x.dtype(), "_contrib_BilinearResize2D", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "_contrib_BilinearResize2D", y.size(), &resize_elements<T>, g, static_cast<const T*>(x.data()),
                 static_cast<T*>(y.data()), y.size());
  });
}

void bilinear_resize_backward(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &dy = inv.inputs[0], &x = inv.inputs[1], &dx = inv.outputs[0];
  const ResizeGeometry g = resize_geometry(inv.params.as<BilinearResizeParams>(), x.shape());
  const char* op = "_backward_contrib_BilinearResize2D";
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using A = ComputeType<T>;
    const std::size_t bytes = static_cast<std::size_t>(dx.size()) * sizeof(A);
    if constexpr (std::is_same_v<T, A>) {
      NDG_CUDA_CHECK(cudaMemsetAsync(dx.data(), 0, bytes, cuda::stream_of(ec)));
      cuda::launch(ec, op, dy.size(), &resize_scatter_elements<T, A>, g, static_cast<const T*>(dy.data()),
                   static_cast<A*>(dx.data()), dy.size());
    } else {
      Workspace sums(ec, bytes);
      NDG_CUDA_CHECK(cudaMemsetAsync(sums.data(), 0, bytes, cuda::stream_of(ec)));
      cuda::launch(ec, op, dy.size(), &resize_scatter_elements<T, A>, g, static_cast<const T*>(dy.data()),
                   static_cast<A*>(sums.data()), dy.size());
      cuda::launch(ec, op, dx.size(), &round_elements<T, A>, static_cast<const A*>(sums.data()),
                   static_cast<T*>(dx.data()), dx.size());
    }
  });
}

}  // namespace mx::op::gpu
