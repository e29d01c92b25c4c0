#pragma once
// Functors of the random, optimizer and reduction kernels, shared by the CPU loops and the CUDA
// kernels (the elementwise ones are generated in ndarray/ops/elementwise_functors.hpp).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ndarray/core/half.hpp"
#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op_kinds.hpp"

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
// over a parameter reads weight, gradient and state once and writes them once. They compute in A,
// the compute type of the state type S (float for 16-bit states), and round once on store.
//
// States are S: the weight's own dtype, or float32 under multi_precision (MXNet's mp_sgd_update,
// mp_adam_update), where `master` also holds a float32 copy of the weight: the update reads and
// writes it, and the 16-bit weight gets it rounded. master is null otherwise.
struct OptimizerStep {
  // lr is Adam's bias-corrected step size for this update (the caller folds the correction in).
  double lr = 0.01, wd = 0, rescale = 1, clip = -1;  // clip <= 0: no clipping
  double momentum = 0, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;

  template <class A>
  NDG_HD A gradient(A grad, A weight) const {
    A g = grad * A(rescale);
    if (clip > 0) g = g > A(clip) ? A(clip) : (g < A(-clip) ? A(-clip) : g);
    return g + A(wd) * weight;
  }
  // SGD with momentum: mom = momentum * mom - lr * g; weight += mom (mom may be null).
  template <class T, class S = T>
  NDG_HD void sgd(T& weight, T grad, S* mom, S* master = nullptr) const {
    using A = ComputeType<S>;
    A w = master ? A(*master) : A(weight);
    const A g = gradient(A(grad), w);
    if (mom) {
      const A m = A(momentum) * A(*mom) - A(lr) * g;
      *mom = static_cast<S>(m);
      w += m;
    } else {
      w -= A(lr) * g;
    }
    if (master) *master = static_cast<S>(w);
    weight = static_cast<T>(w);
  }
  template <class T, class S = T>
  NDG_HD void adam(T& weight, T grad, S& mean, S& var, S* master = nullptr) const {
    using A = ComputeType<S>;
    A w = master ? A(*master) : A(weight);
    const A g = gradient(A(grad), w);
    const A m = A(beta1) * A(mean) + A(1 - beta1) * g, v = A(beta2) * A(var) + A(1 - beta2) * g * g;
    mean = static_cast<S>(m);
    var = static_cast<S>(v);
    w -= A(lr) * m / (std::sqrt(v) + A(epsilon));
    if (master) *master = static_cast<S>(w);
    weight = static_cast<T>(w);
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
