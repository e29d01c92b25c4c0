#pragma once
// Functors of the random, optimizer and reduction kernels, shared by the CPU loops and the CUDA
// kernels (the elementwise ones are generated in ndarray/ops/elementwise_functors.hpp).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ndarray/half.hpp"
#include "ndarray/host_device.hpp"
#include "ndarray/op_kinds.hpp"

namespace mx::functors {

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
  // lr is Adam's bias-corrected step size for this update (the caller folds the correction in).
  double lr = 0.01, wd = 0, rescale = 1, clip = -1;  // clip <= 0: no clipping
  double momentum = 0, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;

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
    weight = static_cast<T>(weight - T(lr) * mean / (std::sqrt(var) + T(epsilon)));
  }
};

// Reductions: an accumulator type, an identity-free combine, and for max/min/arg* a strict
// "better than" so that ties keep the first position, as NumPy does. NaN propagates.
template <class T> using SumType = std::conditional_t<mx::is_float_v<T>, ComputeType<T>, std::int64_t>;

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
