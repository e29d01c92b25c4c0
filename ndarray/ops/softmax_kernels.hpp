#pragma once
// The softmax family's attributes, shared element functions and GPU launches (ndarray/ops/softmax.cpp
// defines the ops and the CPU loops, cuda/ops/softmax.cu the launches). Internal.
#include <cmath>
#include <cstdint>

#include "ndarray/core/dtype.hpp"
#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

// softmax, log_softmax and their backward ops _backward_softmax, _backward_log_softmax, with
// MXNet's temperature (softmax(x / t), the max shifted out first) and use_length: a second input,
// of data's shape without the axis and any dtype, gives each line's length n; only its first n
// elements take part, and the others are 0 in the output and in the gradient (a length is
// truncated toward zero and clipped to [0, the axis's extent]; NaN counts as 0).
struct SoftmaxParams {
  int axis = -1;
  bool log = false;  // log_softmax
  bool use_length = false;
  double temperature = 1;
};

// The input as (outer, length, inner) lines along the op's axis.
ReduceShape softmax_shape(const Invocation& inv);

// The lengths input, read in its own dtype; none: every line is whole.
struct LineLengths {
  const void* data = nullptr;
  DType dtype = DType::int32;
};

// The lengths input of a softmax invocation (forward: input 1; backward: input 2), or none.
LineLengths line_lengths(const Invocation& inv, std::size_t input);

NDG_HD std::int64_t line_length(LineLengths l, std::int64_t line, std::int64_t length) {
  if (!l.data) return length;
  double v = 0;
  switch (l.dtype) {
#define NDG_LENGTH_CASE(NAME, TYPE) \
  case DType::NAME: v = static_cast<double>(static_cast<const TYPE*>(l.data)[line]); break;
    NDG_DTYPES(NDG_LENGTH_CASE)
#undef NDG_LENGTH_CASE
  }
  return v > 0 ? (v < static_cast<double>(length) ? static_cast<std::int64_t>(v) : length) : 0;
}

// One (outer, inner) line of the forward pass, elements `inner` apart, its first n taking part:
// max-shifted so that exp cannot overflow, then scaled by 1 / temperature.
template <class T>
NDG_HD void softmax_line(const T* x, T* y, const ReduceShape& s, std::int64_t line, std::int64_t n, bool log,
                         ComputeType<T> inv_t) {
  using A = ComputeType<T>;  // float for float16 and bfloat16
  const std::int64_t o = line / s.inner, i = line % s.inner;
  const T* in = x + o * s.length * s.inner + i;
  T* out = y + o * s.length * s.inner + i;
  A max = n > 0 ? A(in[0]) : A(0);
  for (std::int64_t k = 1; k < n; ++k) max = A(in[k * s.inner]) > max ? A(in[k * s.inner]) : max;
  A sum = 0;
  for (std::int64_t k = 0; k < n; ++k) sum += std::exp((A(in[k * s.inner]) - max) * inv_t);
  const A log_sum = std::log(sum);
  for (std::int64_t k = 0; k < s.length; ++k) {
    const A shifted = (A(in[k * s.inner]) - max) * inv_t;
    out[k * s.inner] = k < n ? static_cast<T>(log ? shifted - log_sum : std::exp(shifted) / sum) : T(0);
  }
}

// The backward ops see the output y and its gradient g, and take one sum along each line:
//   log_softmax: dx = (g - exp(y) * sum(g)) / t        softmax: dx = y * (g - sum(g * y)) / t
// The term of that sum for one element (in float for float16 and bfloat16):
template <class T>
NDG_HD ComputeType<T> softmax_backward_term(T g, T y, bool log) {
  using A = ComputeType<T>;
  return log ? A(g) : A(g) * A(y);
}
// dx for one element, from the line's sum:
template <class T>
NDG_HD T softmax_backward_element(T g, T y, ComputeType<T> sum, bool log, ComputeType<T> inv_t) {
  using A = ComputeType<T>;
  return static_cast<T>((log ? A(g) - std::exp(A(y)) * sum : A(y) * (A(g) - sum)) * inv_t);
}

// dx along one (outer, inner) line, elements `inner` apart, its first n taking part: the sum of
// the terms, then dx (0 past n).
template <class T>
NDG_HD void softmax_backward_line(const T* g, const T* y, T* dx, const ReduceShape& s, std::int64_t line,
                                  std::int64_t n, bool log, ComputeType<T> inv_t) {
  const std::int64_t start = line / s.inner * s.length * s.inner + line % s.inner;
  ComputeType<T> sum = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t at = start + k * s.inner;
    sum += softmax_backward_term(g[at], y[at], log);
  }
  for (std::int64_t k = 0; k < s.length; ++k) {
    const std::int64_t at = start + k * s.inner;
    dx[at] = k < n ? softmax_backward_element(g[at], y[at], sum, log, inv_t) : T(0);
  }
}

// SoftmaxOutput: inputs data (rows, classes) (or (..., classes) under preserve_shape) and label
// (rows,) (data's leading axes), a none array when absent; output softmax(data) along the last
// axis. Its gradient, _backward_SoftmaxOutput (inputs (output, label) -> d data), ignores the head
// gradient, as MXNet's:
//   d data[r, k] = (output[r, k] - [k == label[r]]) * grad_scale / normalizer,  0 on a row whose
//   label is ignore_label under use_ignore;  normalizer: null 1, batch rows, valid the rows whose
//   label is not ignore_label (at least 1; MXNet counts them whatever use_ignore says).
// A label outside [0, classes) subtracts nothing from its row, as in MXNet.
enum class SoftmaxNormalization : std::uint8_t { null, batch, valid };

struct SoftmaxOutputParams {
  double grad_scale = 1;
  double ignore_label = -1;
  bool use_ignore = false;
  bool preserve_shape = false;
  SoftmaxNormalization normalization = SoftmaxNormalization::null;
};

// The class a label names, truncated toward zero as MXNet's static_cast<int>; NaN and labels
// beyond +-2^53 name no class (kNoClass).
inline constexpr std::int64_t kNoClass = INT64_MIN;
template <class T>
NDG_HD std::int64_t label_class(T label) {
  const double v = static_cast<double>(label);
  return v > -9007199254740992.0 && v < 9007199254740992.0 ? static_cast<std::int64_t>(v) : kNoClass;
}

// d data for element k of a row whose label names class `cls`.
template <class T>
NDG_HD T softmax_output_grad_element(T y, std::int64_t k, std::int64_t cls, bool ignored, ComputeType<T> scale) {
  using A = ComputeType<T>;
  return static_cast<T>(ignored ? A(0) : (k == cls ? A(y) - A(1) : A(y)) * scale);
}

// The SoftmaxOutput invocation as softmax's along the last axis, for softmax's kernels.
inline Invocation as_last_axis_softmax(const Invocation& inv) {
  return Invocation{inv.op, SoftmaxParams{-1, false}, {inv.inputs.at(0)}, inv.outputs};
}

namespace gpu {
void softmax(const ExecContext& ec, const Invocation& inv);
void softmax_backward(const ExecContext& ec, const Invocation& inv);
void softmax_output_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
