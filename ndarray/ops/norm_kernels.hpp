#pragma once
// The normalisation family's attributes, shared element functions and GPU launches: LayerNorm,
// GroupNorm and InstanceNorm (ndarray/ops/norm.cpp defines the ops and the CPU loops,
// cuda/ops/norm.cu the launches). Internal.
//
// Note [normalisation lines]. The three ops are one computation over different groupings: each
// group of elements that shares a mean and a standard deviation is a "line" of `length` elements,
// `inner` apart, and each element's gamma and beta come from its channel:
//
//   op            data          lines (outer, length, inner)        groups  spatial    channels
//   LayerNorm     any, axis a   around axis a                       1       1          shape[a]
//   GroupNorm     (N, C, ...)   (N·G, (C/G)·S, 1)                   G       (C/G)·S    G
//   InstanceNorm  (N, C, ...)   (N·C, S, 1)                         C       S          C
//
// S being the product of the spatial extents. Element k of the line with outer index o has
// channel (o % groups) · (length / spatial) + k / spatial: its position along a LayerNorm's axis,
// its group for GroupNorm (MXNet 1.x's GroupNorm scales and shifts per group), its channel for
// InstanceNorm. Then, per line, with M = length,
//   mean = Σx / M,  std = sqrt(Σ(x - mean)² / M + eps),  x̂ = (x - mean) / std,  y = x̂ · gamma[c] + beta[c]
// and backward, with a = dy · gamma[c],
//   dx = (a - Σa / M - x̂ · Σ(a · x̂) / M) / std,   dgamma[c] = Σ dy · x̂,   dbeta[c] = Σ dy
// (the parameter sums over every element of channel c).
#include <cmath>
#include <cstdint>

#include "ndarray/core/dtype.hpp"
#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

enum class NormKind : std::uint8_t { layer, group, instance };

struct NormParams {
  NormKind kind = NormKind::layer;
  int axis = -1;                 // LayerNorm: the axis normalised over
  std::int64_t num_groups = 1;   // GroupNorm
  double eps = 1e-5;
  bool output_mean_var = false;  // LayerNorm, GroupNorm: the front end returns mean and std too
};

struct NormShape {
  ReduceShape lines;
  std::int64_t groups = 1, spatial = 1, channels = 1;
};

// The grouping of data by the op's params; typed errors for an axis out of range, data of too few
// axes, or channels that num_groups does not divide.
NormShape norm_shape(const NormParams& p, const nd::NDArray& data);

NDG_HD std::int64_t norm_channel(const NormShape& s, std::int64_t o, std::int64_t k) {
  return (o % s.groups) * (s.lines.length / s.spatial) + k / s.spatial;
}
NDG_HD std::int64_t norm_element(const NormShape& s, std::int64_t o, std::int64_t k, std::int64_t i) {
  return (o * s.lines.length + k) * s.lines.inner + i;
}

// One line's statistics and outputs, accumulating in A (double on cpu(0), ComputeType<T> on a
// GPU). T is the data's type, P gamma's and beta's (T, or float for 16-bit data), S the
// statistics' (ComputeType<T>).
template <class A, class T, class P, class S>
NDG_HD void norm_forward_line(const T* x, const P* gamma, const P* beta, T* y, S* mean, S* stdev, const NormShape& s,
                              std::int64_t line, double eps) {
  const std::int64_t o = line / s.lines.inner, i = line % s.lines.inner, M = s.lines.length;
  A sum = 0;
  for (std::int64_t k = 0; k < M; ++k) sum += A(x[norm_element(s, o, k, i)]);
  const A m = sum / A(M);
  A squares = 0;
  for (std::int64_t k = 0; k < M; ++k) {
    const A d = A(x[norm_element(s, o, k, i)]) - m;
    squares += d * d;
  }
  const A sd = std::sqrt(squares / A(M) + A(eps)), rstd = A(1) / sd;
  mean[line] = static_cast<S>(m);
  stdev[line] = static_cast<S>(sd);
  for (std::int64_t k = 0; k < M; ++k) {
    const std::int64_t at = norm_element(s, o, k, i), c = norm_channel(s, o, k);
    y[at] = static_cast<T>((A(x[at]) - m) * rstd * A(gamma[c]) + A(beta[c]));
  }
}

// One line's dx from dy, x, gamma and the line's statistics.
template <class A, class T, class P, class S>
NDG_HD void norm_backward_line(const T* dy, const T* x, const P* gamma, const S* mean, const S* stdev, T* dx,
                               const NormShape& s, std::int64_t line) {
  const std::int64_t o = line / s.lines.inner, i = line % s.lines.inner, M = s.lines.length;
  const A m = A(mean[line]), rstd = A(1) / A(stdev[line]);
  A sum_a = 0, sum_a_xhat = 0;
  for (std::int64_t k = 0; k < M; ++k) {
    const std::int64_t at = norm_element(s, o, k, i);
    const A a = A(dy[at]) * A(gamma[norm_channel(s, o, k)]);
    sum_a += a;
    sum_a_xhat += a * (A(x[at]) - m) * rstd;
  }
  const A mean_a = sum_a / A(M), mean_a_xhat = sum_a_xhat / A(M);
  for (std::int64_t k = 0; k < M; ++k) {
    const std::int64_t at = norm_element(s, o, k, i);
    const A a = A(dy[at]) * A(gamma[norm_channel(s, o, k)]);
    dx[at] = static_cast<T>((a - mean_a - (A(x[at]) - m) * rstd * mean_a_xhat) * rstd);
  }
}

// dgamma[c] and dbeta[c]: the sums over every element of channel c (the lines whose group holds
// it, its `spatial` positions in each, every inner index).
template <class A, class T, class P, class S>
NDG_HD void norm_param_grad_channel(const T* dy, const T* x, const S* mean, const S* stdev, P* dgamma, P* dbeta,
                                    const NormShape& s, std::int64_t c) {
  const std::int64_t per_group = s.lines.length / s.spatial;  // channels in one group
  A sum_dy = 0, sum_dy_xhat = 0;
  if (per_group == 0) {  // empty groups: nothing to sum
    dgamma[c] = static_cast<P>(sum_dy_xhat);
    dbeta[c] = static_cast<P>(sum_dy);
    return;
  }
  const std::int64_t group = c / per_group, first = (c % per_group) * s.spatial;
  for (std::int64_t o = group; o < s.lines.outer; o += s.groups) {
    for (std::int64_t i = 0; i < s.lines.inner; ++i) {
      const std::int64_t line = o * s.lines.inner + i;
      const A m = A(mean[line]), rstd = A(1) / A(stdev[line]);
      for (std::int64_t k = first; k < first + s.spatial; ++k) {
        const std::int64_t at = norm_element(s, o, k, i);
        sum_dy += A(dy[at]);
        sum_dy_xhat += A(dy[at]) * (A(x[at]) - m) * rstd;
      }
    }
  }
  dgamma[c] = static_cast<P>(sum_dy_xhat);
  dbeta[c] = static_cast<P>(sum_dy);
}

// Calls f(T{}, P{}) with the data's type and the parameters' (the data's, or float for 16-bit data).
template <class F>
void dispatch_norm(DType data, DType params, const char* op, F&& f) {
  dispatch_floating(data, op, [&](auto tag) {
    using T = decltype(tag);
    if (params == data) f(T{}, T{});
    else f(T{}, ComputeType<T>{});
  });
}

// The forward op's arrays (inputs data, gamma, beta; outputs out, mean, std) and the backward
// op's (inputs dy, data, gamma, mean, std; outputs dx, dgamma, dbeta), typed.
template <class T, class P>
struct NormForwardArrays {
  using S = ComputeType<T>;
  explicit NormForwardArrays(const Invocation& inv)
      : x(static_cast<const T*>(inv.inputs[0].data())), gamma(static_cast<const P*>(inv.inputs[1].data())),
        beta(static_cast<const P*>(inv.inputs[2].data())), y(static_cast<T*>(inv.outputs[0].data())),
        mean(static_cast<S*>(inv.outputs[1].data())), stdev(static_cast<S*>(inv.outputs[2].data())) {}
  const T* x;
  const P *gamma, *beta;
  T* y;
  S *mean, *stdev;
};

template <class T, class P>
struct NormBackwardArrays {
  using S = ComputeType<T>;
  explicit NormBackwardArrays(const Invocation& inv)
      : dy(static_cast<const T*>(inv.inputs[0].data())), x(static_cast<const T*>(inv.inputs[1].data())),
        gamma(static_cast<const P*>(inv.inputs[2].data())), mean(static_cast<const S*>(inv.inputs[3].data())),
        stdev(static_cast<const S*>(inv.inputs[4].data())), dx(static_cast<T*>(inv.outputs[0].data())),
        dgamma(static_cast<P*>(inv.outputs[1].data())), dbeta(static_cast<P*>(inv.outputs[2].data())) {}
  const T *dy, *x;
  const P* gamma;
  const S *mean, *stdev;
  T* dx;
  P *dgamma, *dbeta;
};

namespace gpu {
void norm(const ExecContext& ec, const Invocation& inv);
void norm_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
