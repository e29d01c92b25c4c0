// GPU launches of Cast, pick and _backward_pick (ndarray/ops/manipulation.cpp has the ops and the
// CPU loops; the pick element functions are shared with them in manipulation_kernels.hpp).
#include "cuda/launch.hpp"
#include "ndarray/ops/manipulation_kernels.hpp"

namespace mx::op::gpu {
namespace {

template <class From, class To>
__global__ void cast_elements(To* out, const From* in, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) out[i] = static_cast<To>(in[i]);
}

// One thread per output element (outer, inner).
template <class T, class I>
__global__ void pick_elements(T* out, const T* data, const I* index, ReduceShape s, bool wrap, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    out[i] = pick_element(data, index, s, wrap, i);
  }
}

// One thread per element of the dense gradient (outer, length, inner): every element is written,
// so that no zero fill precedes it.
template <class T, class I>
__global__ void pick_gradient_elements(T* dx, const T* grad, const I* index, ReduceShape s, bool wrap,
                                       std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    dx[i] = pick_backward_element(grad, index, s, wrap, i);
  }
}

}  // namespace

void cast(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  dispatch_dtype(x.dtype(), [&](auto from_tag) {
    dispatch_dtype(y.dtype(), [&](auto to_tag) {
      using S = decltype(from_tag);
      using D = decltype(to_tag);
      cuda::launch(ec, "Cast", y.size(), &cast_elements<S, D>, static_cast<D*>(y.data()), static_cast<const S*>(x.data()),
                   y.size());
    });
  });
}

void pick(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &data = inv.inputs[0], &index = inv.inputs[1], &y = inv.outputs[0];
  const ReduceShape s = pick_shape(inv);
  const bool wrap = inv.params.as<PickParams>().wrap;
  dispatch_dtype(data.dtype(), [&](auto data_tag) {
    dispatch_dtype(index.dtype(), [&](auto index_tag) {
      using T = decltype(data_tag);
      using I = decltype(index_tag);
      cuda::launch(ec, inv.op->name, y.size(), &pick_elements<T, I>, static_cast<T*>(y.data()),
                   static_cast<const T*>(data.data()), static_cast<const I*>(index.data()), s, wrap, y.size());
    });
  });
}

void pick_backward(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &g = inv.inputs[0], &index = inv.inputs[1], &dx = inv.outputs[0];
  const ReduceShape s = pick_shape(inv);
  const bool wrap = inv.params.as<PickParams>().wrap;
  dispatch_dtype(g.dtype(), [&](auto grad_tag) {
    dispatch_dtype(index.dtype(), [&](auto index_tag) {
      using T = decltype(grad_tag);
      using I = decltype(index_tag);
      cuda::launch(ec, inv.op->name, dx.size(), &pick_gradient_elements<T, I>, static_cast<T*>(dx.data()),
                   static_cast<const T*>(g.data()), static_cast<const I*>(index.data()), s, wrap, dx.size());
    });
  });
}

}  // namespace mx::op::gpu
