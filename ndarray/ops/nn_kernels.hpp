#pragma once
// The nn family's registered ops and GPU entry points (ndarray/ops/nn.cpp defines the ops and the
// CPU loops, cuda/ops/nn.cu the GPU launches). Internal.
#include <cmath>
#include <cstdint>
#include <optional>

#include "ndarray/core/dtype.hpp"
#include "ndarray/core/host_device.hpp"
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
struct GemmArgs;
GemmArgs fully_connected_gemm(const Invocation& inv);  // y = x · weightᵀ as a GEMM

// _backward_FullyConnected_weight: inputs g (rows, num_hidden) and x (rows, in), outputs the
// weight's gradient gᵀ · x and the bias's, the column sums of g. On a GPU one cuBLASLt call makes
// both where it can (gpu::fully_connected_weight_grad); elsewhere the product, then the sums.
const OpDef& fully_connected_weight_grad_op();
GemmArgs fully_connected_weight_grad_gemm(const Invocation& inv);
void fully_connected_weight_grad_unfused(const ExecContext& ec, const Invocation& inv);

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

// LeakyReLU: input data; output the activation of act_type, as MXNet's LeakyReLU (prelu, which
// takes a learned slope as a second input, and rrelu, which draws its slopes, are not ndgluon's).
// _backward_LeakyReLU: inputs (g, data, output) -> dx.
enum class LeakyAct : std::uint8_t { leaky, elu, selu, gelu };

struct LeakyReLUParams {
  LeakyAct act = LeakyAct::leaky;
  double slope = 0.25;  // leaky and elu; selu and gelu have their own constants
};

// SELU's constants (Klambauer et al. 2017), as MXNet's.
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluLambda = 1.0507009873554804934193349852946;

// The element functions, written once for the CPU loops and the CUDA kernels, computed in A
// (float for float16 and bfloat16) and rounded once to T:
//   leaky  x > 0 ? x : slope x                         dy/dx  x > 0 ? 1 : slope
//   elu    x > 0 ? x : slope (e^x - 1)                        x > 0 ? 1 : y + slope
//   selu   lambda (x > 0 ? x : alpha (e^x - 1))               x > 0 ? lambda : y + lambda alpha
//   gelu   x Phi(x) = x/2 erfc(-x/sqrt 2) (exact, erf form)   Phi(x) + x phi(x)
template <class T>
struct LeakyReLUForward {
  using A = ComputeType<T>;
  LeakyAct act;
  A slope;
  NDG_HD T operator()(T in) const {
    const A x = static_cast<A>(in);
    switch (act) {
      case LeakyAct::leaky: return static_cast<T>(x > A(0) ? x : slope * x);
      case LeakyAct::elu: return static_cast<T>(x > A(0) ? x : slope * std::expm1(x));
      case LeakyAct::selu: return static_cast<T>(A(kSeluLambda) * (x > A(0) ? x : A(kSeluAlpha) * std::expm1(x)));
      case LeakyAct::gelu: return static_cast<T>(A(0.5) * x * std::erfc(x * A(-0.7071067811865476)));
    }
    return in;
  }
};

// g * dy/dx from the input x and the output y.
template <class T>
struct LeakyReLUBackward {
  using A = ComputeType<T>;
  LeakyAct act;
  A slope;
  NDG_HD T operator()(T g_in, T x_in, T y_in) const {
    const A g = static_cast<A>(g_in), x = static_cast<A>(x_in), y = static_cast<A>(y_in);
    switch (act) {
      case LeakyAct::leaky: return static_cast<T>(x > A(0) ? g : g * slope);
      case LeakyAct::elu: return static_cast<T>(x > A(0) ? g : g * (y + slope));
      case LeakyAct::selu: return static_cast<T>(x > A(0) ? g * A(kSeluLambda) : g * (y + A(kSeluLambda * kSeluAlpha)));
      case LeakyAct::gelu:
        return static_cast<T>(g * (A(0.5) * std::erfc(x * A(-0.7071067811865476)) +
                                   x * A(0.3989422804014327) * std::exp(A(-0.5) * x * x)));
    }
    return g_in;
  }
};

namespace gpu {
void fully_connected(const ExecContext& ec, const Invocation& inv);
void fully_connected_weight_grad(const ExecContext& ec, const Invocation& inv);
void dropout(const ExecContext& ec, const Invocation& inv);
void leaky_relu(const ExecContext& ec, const Invocation& inv);
void leaky_relu_backward(const ExecContext& ec, const Invocation& inv);
}  // namespace gpu

}  // namespace mx::op
