#pragma once
// The elementwise functors, generated from ndarray/ops/elementwise_list.hpp: for each op a forward
// and a derivative, for host and device alike (NDG_HD). The CPU loops and the CUDA kernels
// instantiate the same functors, so the CPU result is the reference for the GPU one. Internal.
#include <cmath>
#include <type_traits>

#include "ndarray/core/half.hpp"
#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::op {

// Transcendental functions run in float for float and in double for every other type, so that
// integer instantiations call overloads that exist in device code too. float16 and bfloat16
// compute in float.
template <class T> using MathType = std::conditional_t<std::is_same_v<ComputeType<T>, float>, float, double>;

template <UnaryOp op> struct Unary;
template <BinaryOp op> struct Binary;

#define M(v) static_cast<Math>(v)
#define NDG_UNARY_FUNCTOR(NAME, FLOATING, DIFFERENTIABLE, FORWARD, DERIVATIVE)                \
  template <> struct Unary<UnaryOp::NAME> {                                                   \
    static constexpr bool floating_only = FLOATING, differentiable = DIFFERENTIABLE;          \
    template <class T> NDG_HD static T forward(T x) {                                         \
      using Math [[maybe_unused]] = MathType<T>;                                                             \
      return static_cast<T>(FORWARD);                                                         \
    }                                                                                         \
    template <class T> NDG_HD static ComputeType<T> derivative([[maybe_unused]] T x, [[maybe_unused]] T y) { \
      using Math [[maybe_unused]] = MathType<T>;                                                             \
      return static_cast<ComputeType<T>>(DERIVATIVE);                                         \
    }                                                                                         \
  };
NDG_UNARY_OPS(NDG_UNARY_FUNCTOR)
#undef NDG_UNARY_FUNCTOR

#define NDG_BINARY_FUNCTOR(NAME, DIFFERENTIABLE, FORWARD, DA, DB)                             \
  template <> struct Binary<BinaryOp::NAME> {                                                 \
    static constexpr bool differentiable = DIFFERENTIABLE;                                    \
    template <class T> NDG_HD static T forward(T a, T b) {                                    \
      using Math [[maybe_unused]] = MathType<T>;                                                             \
      return static_cast<T>(FORWARD);                                                         \
    }                                                                                         \
    template <class T> NDG_HD static ComputeType<T> da([[maybe_unused]] T a, [[maybe_unused]] T b, [[maybe_unused]] T y) { \
      using Math [[maybe_unused]] = MathType<T>;                                                             \
      return static_cast<ComputeType<T>>(DA);                                                 \
    }                                                                                         \
    template <class T> NDG_HD static ComputeType<T> db([[maybe_unused]] T a, [[maybe_unused]] T b, [[maybe_unused]] T y) { \
      using Math [[maybe_unused]] = MathType<T>;                                                             \
      return static_cast<ComputeType<T>>(DB);                                                 \
    }                                                                                         \
  };
NDG_BINARY_OPS(NDG_BINARY_FUNCTOR)
#undef NDG_BINARY_FUNCTOR
#undef M

// Functors as the kernels call them: y = f(x), and the gradient g * dy/dx.
template <UnaryOp op> struct UnaryForward {
  template <class T> NDG_HD T operator()(T x) const { return Unary<op>::forward(x); }
};
template <UnaryOp op> struct UnaryBackward {
  template <class T> NDG_HD T operator()(T g, T x, T y) const {
    return static_cast<T>(g * Unary<op>::derivative(x, y));
  }
};
template <BinaryOp op> struct BinaryForward {
  template <class T> NDG_HD T operator()(T a, T b) const { return Binary<op>::forward(a, b); }
};
// a op scalar (reverse: scalar op a), as a unary functor.
template <BinaryOp op, class T> struct ScalarForward {
  T scalar;
  bool reverse;
  NDG_HD T operator()(T a) const { return reverse ? Binary<op>::forward(scalar, a) : Binary<op>::forward(a, scalar); }
};
template <BinaryOp op, class T> struct ScalarBackward {
  T scalar;
  bool reverse;
  NDG_HD T operator()(T g, T a, T y) const {
    return static_cast<T>(g * (reverse ? Binary<op>::db(scalar, a, y) : Binary<op>::da(a, scalar, y)));
  }
};

}  // namespace mx::op
