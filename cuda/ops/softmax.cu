// GPU launches of softmax / log_softmax and of their backward ops (ndarray/ops/softmax.cpp has the
// ops and the CPU loops). Lines along the last axis (inner == 1) take one warp each, reading the
// line three times (backward: twice) from L1/L2; other axes take one thread per (outer, inner)
// line, whose reads are coalesced across neighbouring threads.
#include <cmath>

#include "cuda/launch.hpp"
#include "ndarray/ops/softmax_kernels.hpp"

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

template <class T>
__device__ T warp_max(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
template <class T>
__device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp per line of `length` contiguous elements.
template <class T>
__global__ void softmax_rows(const T* x, T* y, std::int64_t rows, std::int64_t length, bool log) {
  const int lane = threadIdx.x % 32;
  for (std::int64_t row = global_thread() / 32; row < rows; row += grid_stride() / 32) {
    const T* in = x + row * length;
    T* out = y + row * length;
    T max = -INFINITY;
    for (std::int64_t k = lane; k < length; k += 32) max = fmax(max, in[k]);
    max = warp_max(max);
    T sum = 0;
    for (std::int64_t k = lane; k < length; k += 32) sum += exp(in[k] - max);
    sum = warp_sum(sum);
    const T log_sum = ::log(sum);
    for (std::int64_t k = lane; k < length; k += 32) out[k] = log ? in[k] - max - log_sum : exp(in[k] - max) / sum;
  }
}

// One thread per (outer, inner) line, elements `inner` apart.
template <class T>
__global__ void softmax_lines(const T* x, T* y, ReduceShape s, bool log) {
  const std::int64_t lines = s.outer * s.inner;
  for (std::int64_t line = global_thread(); line < lines; line += grid_stride()) {
    const std::int64_t o = line / s.inner, i = line % s.inner;
    const T* in = x + o * s.length * s.inner + i;
    T* out = y + o * s.length * s.inner + i;
    T max = in[0];
    for (std::int64_t k = 1; k < s.length; ++k) max = fmax(max, in[k * s.inner]);
    T sum = 0;
    for (std::int64_t k = 0; k < s.length; ++k) sum += exp(in[k * s.inner] - max);
    const T log_sum = ::log(sum);
    for (std::int64_t k = 0; k < s.length; ++k) {
      const T shifted = in[k * s.inner] - max;
      out[k * s.inner] = log ? shifted - log_sum : exp(shifted) / sum;
    }
  }
}

// Backward, one warp per line of `length` contiguous elements: the line's sum, then dx.
template <class T>
__global__ void softmax_backward_rows(const T* g, const T* y, T* dx, std::int64_t rows, std::int64_t length, bool log) {
  const int lane = threadIdx.x % 32;
  for (std::int64_t row = global_thread() / 32; row < rows; row += grid_stride() / 32) {
    const std::int64_t start = row * length;
    T sum = 0;
    for (std::int64_t k = lane; k < length; k += 32) sum += softmax_backward_term(g[start + k], y[start + k], log);
    sum = warp_sum(sum);
    for (std::int64_t k = lane; k < length; k += 32) {
      dx[start + k] = softmax_backward_element(g[start + k], y[start + k], sum, log);
    }
  }
}

// Backward, one thread per (outer, inner) line, elements `inner` apart.
template <class T>
__global__ void softmax_backward_lines(const T* g, const T* y, T* dx, ReduceShape s, bool log) {
  const std::int64_t lines = s.outer * s.inner;
  for (std::int64_t line = global_thread(); line < lines; line += grid_stride()) {
    softmax_backward_line(g, y, dx, s, line, log);
  }
}

}  // namespace

void softmax(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const ReduceShape s = softmax_shape(inv);
  if (s.length == 0) return;
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(inv.inputs[0].data());
    T* y = static_cast<T*>(inv.outputs[0].data());
    if (s.inner == 1) {
      cuda::launch(ec, inv.op->name, s.outer * 32, &softmax_rows<T>, x, y, s.outer, s.length, p.log);
    } else {
      cuda::launch(ec, inv.op->name, s.outer * s.inner, &softmax_lines<T>, x, y, s, p.log);
    }
  });
}

// _backward_softmax / _backward_log_softmax: inputs (g, y), output dx.
void softmax_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const ReduceShape s = softmax_shape(inv);
  if (s.length == 0) return;
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* g = static_cast<const T*>(inv.inputs[0].data());
    const T* y = static_cast<const T*>(inv.inputs[1].data());
    T* dx = static_cast<T*>(inv.outputs[0].data());
    if (s.inner == 1) {
      cuda::launch(ec, inv.op->name, s.outer * 32, &softmax_backward_rows<T>, g, y, dx, s.outer, s.length, p.log);
    } else {
      cuda::launch(ec, inv.op->name, s.outer * s.inner, &softmax_backward_lines<T>, g, y, dx, s, p.log);
    }
  });
}

}  // namespace mx::op::gpu
