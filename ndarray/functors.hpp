#pragma once
// Elementwise and reduction functors, one per op. The CPU loops and the CUDA kernels instantiate
// the same functors, so the CPU result is the reference for the GPU one.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ndarray/host_device.hpp"
#include "ndarray/op_kinds.hpp"

namespace mx::functors {

// Transcendental functions run in float for float and in double for every other type, so that
// integer instantiations call overloads that exist in device code too.
template <class T> using MathType = std::conditional_t<std::is_same_v<T, float>, float, double>;

template <BinaryOp op> struct Binary;
#define NDG_BINARY(OP, EXPR)                                   \
  template <> struct Binary<BinaryOp::OP> {                    \
    template <class T> NDG_HD T operator()(T a, T b) const { return EXPR; } \
  }
NDG_BINARY(add, static_cast<T>(a + b));
NDG_BINARY(subtract, static_cast<T>(a - b));
NDG_BINARY(multiply, static_cast<T>(a * b));
// Integer division by zero gives 0 instead of trapping.
NDG_BINARY(divide, static_cast<T>(!std::is_floating_point_v<T> && b == T(0) ? T(0) : a / b));
NDG_BINARY(power, static_cast<T>(std::pow(MathType<T>(a), MathType<T>(b))));
NDG_BINARY(maximum, a > b ? a : b);
NDG_BINARY(minimum, a < b ? a : b);
NDG_BINARY(equal, T(a == b));
NDG_BINARY(not_equal, T(a != b));
NDG_BINARY(greater, T(a > b));
NDG_BINARY(greater_equal, T(a >= b));
NDG_BINARY(less, T(a < b));
NDG_BINARY(less_equal, T(a <= b));
#undef NDG_BINARY

template <UnaryOp op> struct Unary;
#define NDG_UNARY(OP, EXPR)                                    \
  template <> struct Unary<UnaryOp::OP> {                      \
    template <class T> NDG_HD T operator()(T x) const {        \
      using M = MathType<T>;                                   \
      (void)sizeof(M);                                         \
      return EXPR;                                             \
    }                                                          \
  }
NDG_UNARY(negative, static_cast<T>(-x));
NDG_UNARY(abs, static_cast<T>(std::is_unsigned_v<T> || !(x < T(0)) ? x : -x));
NDG_UNARY(square, static_cast<T>(x * x));
NDG_UNARY(sqrt, static_cast<T>(std::sqrt(M(x))));
NDG_UNARY(exp, static_cast<T>(std::exp(M(x))));
NDG_UNARY(log, static_cast<T>(std::log(M(x))));
NDG_UNARY(relu, x > T(0) ? x : T(0));
NDG_UNARY(sigmoid, static_cast<T>(M(1) / (M(1) + std::exp(-M(x)))));
NDG_UNARY(tanh, static_cast<T>(std::tanh(M(x))));
// log(1 + exp(x)), without overflow for large x.
NDG_UNARY(softrelu, static_cast<T>(M(x) > M(20) ? M(x) : std::log1p(std::exp(M(x)))));
NDG_UNARY(sign, static_cast<T>(int(x > T(0)) - int(!std::is_unsigned_v<T> && x < T(0))));
#undef NDG_UNARY

// x * scale + shift with one rounding (fused multiply-add on host and device alike), so that
// cpu(0) and GPUs map the same uniform draws to bit-identical values.
template <class T>
struct Affine {
  T scale, shift;
  NDG_HD T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return fmaf(x, scale, shift);
    else return static_cast<T>(fma(static_cast<double>(x), static_cast<double>(scale), static_cast<double>(shift)));
  }
};

// Optimizer steps, one element at a time (MXNet's sgd_mom_update / adam_update), so that one pass
// over a parameter reads weight, gradient and state once and writes them once.
struct OptimizerStep {
  double lr = 0.01, wd = 0, rescale = 1, clip = -1;  // clip <= 0: no clipping
  double momentum = 0, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double lr_t = 0.01;  // Adam's bias-corrected step size for this update

  template <class T>
  NDG_HD T gradient(T grad, T weight) const {
    T g = static_cast<T>(grad * T(rescale));
    if (clip > 0) g = g > T(clip) ? T(clip) : (g < T(-clip) ? T(-clip) : g);
    return static_cast<T>(g + T(wd) * weight);
  }
  // SGD with momentum: mom = momentum * mom - lr * g; weight += mom (mom may be null).
  template <class T>
  NDG_HD void sgd(T& weight, T grad, T* mom) const {
    const T g = gradient(grad, weight);
    if (mom) {
      *mom = static_cast<T>(T(momentum) * *mom - T(lr) * g);
      weight = static_cast<T>(weight + *mom);
    } else {
      weight = static_cast<T>(weight - T(lr) * g);
    }
  }
  template <class T>
  NDG_HD void adam(T& weight, T grad, T& mean, T& var) const {
    const T g = gradient(grad, weight);
    mean = static_cast<T>(T(beta1) * mean + T(1 - beta1) * g);
    var = static_cast<T>(T(beta2) * var + T(1 - beta2) * g * g);
    weight = static_cast<T>(weight - T(lr_t) * mean / (std::sqrt(var) + T(epsilon)));
  }
};

// Reductions: an accumulator type, an identity-free combine, and for max/min/arg* a strict
// "better than" so that ties keep the first position, as NumPy does. NaN propagates.
template <class T> using SumType = std::conditional_t<std::is_floating_point_v<T>, T, std::int64_t>;

template <ReduceOp op> struct Compare;
template <> struct Compare<ReduceOp::max> {
  template <class T> NDG_HD static bool better(T candidate, T best) {
    return candidate > best || (candidate != candidate && best == best);
  }
};
template <> struct Compare<ReduceOp::min> {
  template <class T> NDG_HD static bool better(T candidate, T best) {
    return candidate < best || (candidate != candidate && best == best);
  }
};
template <> struct Compare<ReduceOp::argmax> : Compare<ReduceOp::max> {};
template <> struct Compare<ReduceOp::argmin> : Compare<ReduceOp::min> {};

constexpr bool is_arg_reduce(ReduceOp op) { return op == ReduceOp::argmax || op == ReduceOp::argmin; }

}  // namespace mx::functors
