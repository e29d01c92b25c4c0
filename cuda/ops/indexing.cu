// GPU launches of the indexing family (ndarray/ops/indexing.cpp has the ops and the CPU loops; the
// element functions are shared with them in indexing_kernels.hpp): one thread per output element,
// and for take's gradient one atomic add per element of the output gradient.
#include "cuda/launch.hpp"
#include "cuda/module_preload.hpp"
#include "ndarray/ops/indexing_kernels.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

// out[i] = f(i) for every output element; f is one of the element functors below.
template <class T, class F>
__global__ void generate_elements(T* out, std::int64_t n, F f) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) out[i] = f(i);
}

template <class T, class F>
void generate(const ExecContext& ec, const Invocation& inv, F f) {
  const nd::NDArray& y = inv.outputs[0];
  cuda::launch(ec, inv.op->name, y.size(), &generate_elements<T, F>, static_cast<T*>(y.data()), y.size(), f);
}

template <class T, class I>
struct TakeAt {
  const T* data;
  const I* index;
  TakeShape s;
  bool wrap;
  __device__ T operator()(std::int64_t i) const { return take_element(data, index, s, wrap, i); }
};

template <class T, class C>
struct WhereAt {
  const C* condition;
  const T *x, *y;
  WhereShape s;
  __device__ T operator()(std::int64_t i) const { return where_takes_x(condition, s, i) ? x[i] : y[i]; }
};

template <class T>
struct ClipAt {
  const T* x;
  T lo, hi;
  __device__ T operator()(std::int64_t i) const { return clip_element(x[i], lo, hi); }
};

template <class T>
struct ClipGradientAt {
  const T *g, *x;
  T lo, hi;
  __device__ T operator()(std::int64_t i) const { return clip_gradient_element(g[i], x[i], lo, hi); }
};

// dx[o, position(index[j]), in] += g[o, j, in] for each element of g (outer, count, inner), in A
// (the gradient's own float or double, or float32 for 16-bit gradients): repeated indices add up
// through the atomics.
template <class A, class T, class I>
__global__ void scatter_add_rows(A* dx, const T* g, const I* index, TakeShape s, bool wrap, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    const std::int64_t in = i % s.inner, j = (i / s.inner) % s.count, o = i / (s.inner * s.count);
    atomicAdd(dx + (o * s.length + pick_position(index[j], s.length, wrap)) * s.inner + in, static_cast<A>(g[i]));
  }
}

template <class T>
__global__ void round_sums(T* out, const float* sums, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) out[i] = static_cast<T>(sums[i]);
}

template <class T, class C>
__global__ void where_gradient_elements(T* dx, T* dy, const T* g, const C* condition, WhereShape s, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    const bool take_x = where_takes_x(condition, s, i);
    dx[i] = take_x ? g[i] : T(0);
    dy[i] = take_x ? T(0) : g[i];
  }
}

}  // namespace

// take and Embedding. mode="raise" clips here (Note [take's raise mode on a GPU]).
void take(const ExecContext& ec, const Invocation& inv) {
  const TakeShape s = take_shape(inv);
  const TakeOperands in = take_operands(inv);
  dispatch_data_index(inv, in.data, in.index, [&](auto data_tag, auto index_tag) {
    using T = decltype(data_tag);
    using I = decltype(index_tag);
    generate<T>(ec, inv, TakeAt<T, I>{input_of<T>(inv, in.data), input_of<I>(inv, in.index), s, in.wrap});
  });
}

// The sums start from zero: float and double gradients in the output itself, 16-bit ones in a
// float32 workspace rounded into the output at the end.
void take_backward(const ExecContext& ec, const Invocation& inv) {
  const TakeShape s = take_shape(inv);
  const bool wrap = inv.params.as<TakeParams>().mode == TakeMode::wrap;
  const nd::NDArray& dx = inv.outputs[0];
  const std::int64_t n = inv.inputs[0].size();
  dispatch_floating(inv.inputs[0].dtype(), "_backward_take", [&](auto grad_tag) {
    dispatch_dtype(inv.inputs[1].dtype(), [&](auto index_tag) {
      using T = decltype(grad_tag);
      using I = decltype(index_tag);
      using A = ComputeType<T>;
      const std::size_t bytes = static_cast<std::size_t>(dx.size()) * sizeof(A);
      const Workspace sums(ec, std::is_same_v<A, T> ? 0 : bytes);
      A* acc = std::is_same_v<A, T> ? static_cast<A*>(dx.data()) : sums.as<A>();
      if (bytes) NDG_CUDA_CHECK(cudaMemsetAsync(acc, 0, bytes, cuda::stream_of(ec)));
      cuda::launch(ec, inv.op->name, n, &scatter_add_rows<A, T, I>, acc, input_of<T>(inv, 0), input_of<I>(inv, 1), s,
                   wrap, n);
      if constexpr (!std::is_same_v<A, T>) {
        cuda::launch(ec, inv.op->name, dx.size(), &round_sums<T>, static_cast<T*>(dx.data()), acc, dx.size());
      }
    });
  });
}

void where(const ExecContext& ec, const Invocation& inv) {
  const WhereShape s = where_shape(inv);
  dispatch_data_index(inv, 1, 0, [&](auto data_tag, auto condition_tag) {
    using T = decltype(data_tag);
    using C = decltype(condition_tag);
    generate<T>(ec, inv, WhereAt<T, C>{input_of<C>(inv, 0), input_of<T>(inv, 1), input_of<T>(inv, 2), s});
  });
}

void where_backward(const ExecContext& ec, const Invocation& inv) {
  const WhereShape s = where_shape(inv);
  const std::int64_t n = inv.outputs[0].size();
  dispatch_data_index(inv, 0, 1, [&](auto data_tag, auto condition_tag) {
    using T = decltype(data_tag);
    using C = decltype(condition_tag);
    cuda::launch(ec, inv.op->name, n, &where_gradient_elements<T, C>, static_cast<T*>(inv.outputs[0].data()),
                 static_cast<T*>(inv.outputs[1].data()), input_of<T>(inv, 0), input_of<C>(inv, 1), s, n);
  });
}

void clip(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<ClipParams>();
  dispatch_dtype(inv.inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    generate<T>(ec, inv, ClipAt<T>{input_of<T>(inv, 0), static_cast<T>(p.a_min), static_cast<T>(p.a_max)});
  });
}

void clip_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<ClipParams>();
  dispatch_floating(inv.inputs[0].dtype(), "_backward_clip", [&](auto tag) {
    using T = decltype(tag);
    generate<T>(ec, inv,
                ClipGradientAt<T>{input_of<T>(inv, 0), input_of<T>(inv, 1), static_cast<T>(p.a_min), static_cast<T>(p.a_max)});
  });
}

namespace {

template <template <class, class> class At>
void sequence_launch(const ExecContext& ec, const Invocation& inv) {
  dispatch_sequence<At>(inv, [&](const auto& at) { generate<decltype(at(0))>(ec, inv, at); });
}

}  // namespace

void sequence_mask(const ExecContext& ec, const Invocation& inv) { sequence_launch<SequenceMaskAt>(ec, inv); }
void sequence_reverse(const ExecContext& ec, const Invocation& inv) { sequence_launch<SequenceReverseAt>(ec, inv); }
void sequence_last(const ExecContext& ec, const Invocation& inv) { sequence_launch<SequenceLastAt>(ec, inv); }
void sequence_last_backward(const ExecContext& ec, const Invocation& inv) {
  sequence_launch<SequenceLastGradientAt>(ec, inv);
}

}  // namespace mx::op::gpu
