#pragma once
// The nn family's registered ops and GPU entry points (ndarray/ops/nn.cpp defines the ops and the
// CPU loops, cuda/ops/nn.cu the GPU launches). Internal.
#include <cstdint>
#include <optional>

#include "ndarray/dtype.hpp"
#include "ndarray/ops/elementwise_functors.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

// FullyConnected: inputs data, weight and bias (a none array when no_bias); output
// act(data · weightᵀ + bias).
struct FullyConnectedParams {
  std::int64_t num_hidden = 0;
  bool no_bias = false;
  bool flatten = true;
  std::optional<UnaryOp> act;  // relu, sigmoid, tanh or softrelu; none: identity
  // Whether data and weight lead to a variable (the front end knows; the recorded inputs are
  // detached): backward skips the matrix product of an input that needs no gradient.
  bool data_grad = true;
  bool weight_grad = true;
};

const OpDef& fully_connected_op();

// The matrix product of a FullyConnected invocation, into its output: (rows, num_hidden).
void fully_connected_product(const ExecContext& ec, const Invocation& inv);

// The identity, for FullyConnected without an activation.
struct Identity {
  template <class T> NDG_HD T operator()(T x) const { return x; }
};

// fn(functor) with the functor of act (Identity for none): the activations FullyConnected fuses.
template <class Fn>
void with_activation(std::optional<UnaryOp> act, Fn&& fn) {
  if (!act) return fn(Identity{});
  switch (*act) {
    case UnaryOp::relu: return fn(UnaryForward<UnaryOp::relu>{});
    case UnaryOp::sigmoid: return fn(UnaryForward<UnaryOp::sigmoid>{});
    case UnaryOp::tanh: return fn(UnaryForward<UnaryOp::tanh>{});
    case UnaryOp::softrelu: return fn(UnaryForward<UnaryOp::softrelu>{});
    default: throw ValueError(std::string("FullyConnected: ") + op_name(*act) + " is not a fused activation");
  }
}

// Dropout: input data; outputs the result and the mask it was multiplied by (0 where dropped,
// 1 / (1 - p) where kept, drawn from the context's generator), which backward reuses.
struct DropoutParams {
  double p = 0.5;
  bool always = false;  // mode "always": drop in prediction too (only kept for the attributes)
};

namespace gpu {
void fully_connected(const ExecContext& ec, const Invocation& inv);
void dropout(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
