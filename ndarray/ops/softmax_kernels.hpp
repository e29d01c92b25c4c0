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

namespace gpu {
void softmax(const ExecContext& ec, const Invocation& inv);
void softmax_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
