#pragma once
// The softmax family's attributes, shared element functions and GPU launches (ndarray/ops/softmax.cpp
// defines the ops and the CPU loops, cuda/ops/softmax.cu the launches). Internal.
#include <cmath>

#include "ndarray/host_device.hpp"
#include "ndarray/op_kinds.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

// softmax, log_softmax and their backward ops _backward_softmax, _backward_log_softmax.
struct SoftmaxParams {
  int axis = -1;
  bool log = false;  // log_softmax
};

// The input as (outer, length, inner) lines along the op's axis.
ReduceShape softmax_shape(const Invocation& inv);

// The backward ops see the output y and its gradient g, and take one sum along each line:
//   log_softmax: dx = g - exp(y) * sum(g)        softmax: dx = y * (g - sum(g * y))
// The term of that sum for one element:
template <class T>
NDG_HD T softmax_backward_term(T g, T y, bool log) {
  return log ? g : g * y;
}
// dx for one element, from the line's sum:
template <class T>
NDG_HD T softmax_backward_element(T g, T y, T sum, bool log) {
  return log ? g - std::exp(y) * sum : y * (g - sum);
}

// dx along one (outer, inner) line, elements `inner` apart: the sum of the terms, then dx.
template <class T>
NDG_HD void softmax_backward_line(const T* g, const T* y, T* dx, const ReduceShape& s, std::int64_t line, bool log) {
  const std::int64_t start = line / s.inner * s.length * s.inner + line % s.inner;
  T sum = 0;
  for (std::int64_t k = 0; k < s.length; ++k) {
    const std::int64_t at = start + k * s.inner;
    sum += softmax_backward_term(g[at], y[at], log);
  }
  for (std::int64_t k = 0; k < s.length; ++k) {
    const std::int64_t at = start + k * s.inner;
    dx[at] = softmax_backward_element(g[at], y[at], sum, log);
  }
}

namespace gpu {
void softmax(const ExecContext& ec, const Invocation& inv);
void softmax_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
