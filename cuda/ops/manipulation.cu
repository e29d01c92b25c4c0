// GPU launches of Cast, pick and _backward_pick (ndarray/ops/manipulation.cpp has the ops and the
// CPU loops; the pick element functions are shared with them in manipulation_kernels.hpp).
#include "cuda/launch.hpp"
#include "ndarray/ops/manipulation_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

template <class T, int K>
struct alignas(sizeof(T) * K) Vec {
  T v[K];
};

// K elements per step: 16-byte loads or stores for the wider of the two types (float32 to bfloat16:
// four floats in, four halves out), when `packed` (both pointers aligned); then the tail.
template <class From, class To>
__global__ void cast_elements(To* out, const From* in, std::int64_t n, bool packed) {
  constexpr int K = 16 / (sizeof(From) > sizeof(To) ? sizeof(From) : sizeof(To));
  const std::int64_t packs = packed ? n / K : 0;
  for (std::int64_t p = cuda::global_thread(); p < packs; p += cuda::grid_stride()) {
    const Vec<From, K> x = reinterpret_cast<const Vec<From, K>*>(in)[p];
    Vec<To, K> y;
#pragma unroll
    for (int j = 0; j < K; ++j) y.v[j] = static_cast<To>(x.v[j]);
    reinterpret_cast<Vec<To, K>*>(out)[p] = y;
  }
  for (std::int64_t i = packs * K + cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    out[i] = static_cast<To>(in[i]);
  }
}

bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

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
      constexpr std::int64_t k = 16 / (sizeof(S) > sizeof(D) ? sizeof(S) : sizeof(D));
      const std::int64_t n = y.size();
      const bool packed = aligned_to(x.data(), k * sizeof(S)) && aligned_to(y.data(), k * sizeof(D));
      cuda::launch(ec, "Cast", n == 0 ? 0 : packed ? n / k + 1 : n, &cast_elements<S, D>, static_cast<D*>(y.data()),
                   static_cast<const S*>(x.data()), n, packed);
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
