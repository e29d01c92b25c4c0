// GPU launches of Pooling and its backward (ndarray/ops/pool.cpp has the ops and the CPU loops):
// one thread per output element forward, one per input element backward (a gather over the
// windows that hold it: no atomics), both through the element functions of conv_kernels.hpp.
#include "cuda/launch.hpp"
#include "ndarray/ops/conv_kernels.hpp"

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

template <class T>
__global__ void pool_elements(ConvGeometry g, PoolingParams p, const T* x, T* y, std::int32_t* argmax, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = pool_element(g, p, x, i, argmax);
}

template <class T>
__global__ void pool_backward_elements(ConvGeometry g, PoolingParams p, const T* dy, const std::int32_t* argmax, T* dx,
                                       std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) dx[i] = pool_backward_element(g, p, dy, argmax, i);
}

}  // namespace

void pooling(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<PoolingParams>();
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const ConvGeometry g = pool_geometry(p, x.shape(), x.dtype());
  std::int32_t* argmax = p.max ? static_cast<std::int32_t*>(inv.outputs[1].data()) : nullptr;
  dispatch_floating(x.dtype(), "Pooling", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "Pooling", y.size(), &pool_elements<T>, g, p, static_cast<const T*>(x.data()),
                 static_cast<T*>(y.data()), argmax, y.size());
  });
}

void pooling_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<PoolingParams>();
  const nd::NDArray &dy = inv.inputs[0], &x = inv.inputs[1], &dx = inv.outputs[0];
  const ConvGeometry g = pool_geometry(p, x.shape(), x.dtype());
  const std::int32_t* argmax = p.max ? static_cast<const std::int32_t*>(inv.inputs[2].data()) : nullptr;
  dispatch_floating(x.dtype(), "Pooling", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "Pooling", dx.size(), &pool_backward_elements<T>, g, p, static_cast<const T*>(dy.data()), argmax,
                 static_cast<T*>(dx.data()), dx.size());
  });
}

}  // namespace mx::op::gpu
