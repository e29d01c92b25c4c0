// GPU launches of LayerNorm, GroupNorm, InstanceNorm and their backward ops (ndarray/ops/norm.cpp
// has the ops and the CPU loops; norm_kernels.hpp the element functions both call). A line of
// contiguous elements (inner == 1: LayerNorm on the last axis, every GroupNorm and InstanceNorm)
// takes one warp, which reads it from L1/L2 again for each pass; a strided line (LayerNorm on
// another axis) takes one thread, whose reads are coalesced across neighbouring lines. Sums are
// in ComputeType (float for 16-bit data). The parameter gradients take one thread per channel,
// reads coalesced across neighbouring channels.
#include <cmath>

#include "cuda/launch.hpp"
#include "cuda/module_preload.hpp"
#include "ndarray/ops/norm_kernels.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;
using cuda::warp_sum;

template <class T, class P>
__global__ void norm_forward_rows(const T* x, const P* gamma, const P* beta, T* y, ComputeType<T>* mean,
                                  ComputeType<T>* stdev, NormShape s, double eps) {
  using A = ComputeType<T>;
  const int lane = threadIdx.x % 32;
  const std::int64_t M = s.lines.length;
  for (std::int64_t row = global_thread() / 32; row < s.lines.outer; row += grid_stride() / 32) {
    const T* in = x + row * M;
    T* out = y + row * M;
    A sum = 0;
    for (std::int64_t k = lane; k < M; k += 32) sum += A(in[k]);
    const A m = warp_sum(sum) / A(M);
    A squares = 0;
    for (std::int64_t k = lane; k < M; k += 32) {
      const A d = A(in[k]) - m;
      squares += d * d;
    }
    const A sd = std::sqrt(warp_sum(squares) / A(M) + A(eps)), rstd = A(1) / sd;
    if (lane == 0) {
      mean[row] = m;
      stdev[row] = sd;
    }
    for (std::int64_t k = lane; k < M; k += 32) {
      const std::int64_t c = norm_channel(s, row, k);
      out[k] = static_cast<T>((A(in[k]) - m) * rstd * A(gamma[c]) + A(beta[c]));
    }
  }
}

template <class T, class P>
__global__ void norm_forward_lines(const T* x, const P* gamma, const P* beta, T* y, ComputeType<T>* mean,
                                   ComputeType<T>* stdev, NormShape s, double eps) {
  const std::int64_t lines = s.lines.outer * s.lines.inner;
  for (std::int64_t line = global_thread(); line < lines; line += grid_stride()) {
    norm_forward_line<ComputeType<T>>(x, gamma, beta, y, mean, stdev, s, line, eps);
  }
}

template <class T, class P>
__global__ void norm_backward_rows(const T* dy, const T* x, const P* gamma, const ComputeType<T>* mean,
                                   const ComputeType<T>* stdev, T* dx, NormShape s) {
  using A = ComputeType<T>;
  const int lane = threadIdx.x % 32;
  const std::int64_t M = s.lines.length;
  for (std::int64_t row = global_thread() / 32; row < s.lines.outer; row += grid_stride() / 32) {
    const std::int64_t start = row * M;
    const A m = A(mean[row]), rstd = A(1) / A(stdev[row]);
    A sum_a = 0, sum_a_xhat = 0;
    for (std::int64_t k = lane; k < M; k += 32) {
      const A a = A(dy[start + k]) * A(gamma[norm_channel(s, row, k)]);
      sum_a += a;
      sum_a_xhat += a * (A(x[start + k]) - m) * rstd;
    }
    const A mean_a = warp_sum(sum_a) / A(M), mean_a_xhat = warp_sum(sum_a_xhat) / A(M);
    for (std::int64_t k = lane; k < M; k += 32) {
      const A a = A(dy[start + k]) * A(gamma[norm_channel(s, row, k)]);
      dx[start + k] = static_cast<T>((a - mean_a - (A(x[start + k]) - m) * rstd * mean_a_xhat) * rstd);
    }
  }
}

template <class T, class P>
__global__ void norm_backward_lines(const T* dy, const T* x, const P* gamma, const ComputeType<T>* mean,
                                    const ComputeType<T>* stdev, T* dx, NormShape s) {
  const std::int64_t lines = s.lines.outer * s.lines.inner;
  for (std::int64_t line = global_thread(); line < lines; line += grid_stride()) {
    norm_backward_line<ComputeType<T>>(dy, x, gamma, mean, stdev, dx, s, line);
  }
}

template <class T, class P>
__global__ void norm_param_grads(const T* dy, const T* x, const ComputeType<T>* mean, const ComputeType<T>* stdev,
                                 P* dgamma, P* dbeta, NormShape s) {
  for (std::int64_t c = global_thread(); c < s.channels; c += grid_stride()) {
    norm_param_grad_channel<ComputeType<T>>(dy, x, mean, stdev, dgamma, dbeta, s, c);
  }
}

const NormParams& params_of(const Invocation& inv) { return inv.params.as<NormParams>(); }

}  // namespace

void norm(const ExecContext& ec, const Invocation& inv) {
  const NormParams& p = params_of(inv);
  const nd::NDArray& x = inv.inputs[0];
  const NormShape s = norm_shape(p, x);
  dispatch_norm(x.dtype(), inv.inputs[1].dtype(), inv.op->name, [&](auto data_tag, auto param_tag) {
    using T = decltype(data_tag);
    using P = decltype(param_tag);
    const NormForwardArrays<T, P> a(inv);
    if (s.lines.inner == 1) {
      cuda::launch(ec, inv.op->name, s.lines.outer * 32, &norm_forward_rows<T, P>, a.x, a.gamma, a.beta, a.y, a.mean,
                   a.stdev, s, p.eps);
    } else {
      cuda::launch(ec, inv.op->name, s.lines.outer * s.lines.inner, &norm_forward_lines<T, P>, a.x, a.gamma, a.beta,
                   a.y, a.mean, a.stdev, s, p.eps);
    }
  });
}

// _backward_*: inputs (dy, data, gamma, mean, std), outputs (dx, dgamma, dbeta).
void norm_backward(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& x = inv.inputs[1];
  const NormShape s = norm_shape(params_of(inv), x);
  dispatch_norm(x.dtype(), inv.inputs[2].dtype(), inv.op->name, [&](auto data_tag, auto param_tag) {
    using T = decltype(data_tag);
    using P = decltype(param_tag);
    const NormBackwardArrays<T, P> a(inv);
    if (s.lines.inner == 1) {
      cuda::launch(ec, inv.op->name, s.lines.outer * 32, &norm_backward_rows<T, P>, a.dy, a.x, a.gamma, a.mean, a.stdev,
                   a.dx, s);
    } else {
      cuda::launch(ec, inv.op->name, s.lines.outer * s.lines.inner, &norm_backward_lines<T, P>, a.dy, a.x, a.gamma,
                   a.mean, a.stdev, a.dx, s);
    }
    cuda::launch(ec, inv.op->name, s.channels, &norm_param_grads<T, P>, a.dy, a.x, a.mean, a.stdev, a.dgamma, a.dbeta, s);
  });
}

}  // namespace mx::op::gpu
