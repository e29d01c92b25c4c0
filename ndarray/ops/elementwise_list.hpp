#pragma once
// The elementwise ops, one line each. Everything else is generated from these lists: the UnaryOp /
// BinaryOp enums and names, the nd:: functions, the registered ops with their gradients, the CPU
// loops and the CUDA kernels. Adding an elementwise op is adding a line here (and its test).
//
// The expressions are written once for host and device. In them x, a, b are the operands and y
// the result, of element type T; M(v) converts to the math type (float for float, double for the
// other types). Forward values are converted back to T (integer ops stay in T, so that they are
// exact); derivatives are taken for float32 and float64 only.

// X(name, floating_only, differentiable, forward(x), dy/dx(x, y))
// Activations (relu, sigmoid, tanh, softrelu) write dy/dx from y alone: FullyConnected's fused
// epilogue keeps only its output. gelu is the exact (erf) GELU; 1 + erf(x/sqrt(2)) is written as
// erfc(-x/sqrt(2)), which does not cancel for negative x.
#define NDG_UNARY_OPS(X)                                                                              \
  X(negative, false, true, -x, M(-1))                                                              \
  X(abs, false, true, (std::is_unsigned_v<T> || !(x < T(0)) ? x : T(-x)), M(x > T(0)) - M(x < T(0))) \
  X(square, false, true, x * x, M(2) * M(x))                                                    \
  X(sqrt, true, true, std::sqrt(M(x)), M(0.5) / M(y))                                                 \
  X(exp, true, true, std::exp(M(x)), M(y))                                                            \
  X(log, true, true, std::log(M(x)), M(1) / M(x))                                                     \
  X(relu, false, true, (x > T(0) ? x : T(0)), M(y > T(0)))                                         \
  X(sigmoid, true, true, M(1) / (M(1) + std::exp(-M(x))), M(y) * (M(1) - M(y)))                       \
  X(tanh, true, true, std::tanh(M(x)), M(1) - M(y) * M(y))                                            \
  X(softrelu, true, true, (M(x) > M(20) ? M(x) : std::log1p(std::exp(M(x)))), -std::expm1(-M(y)))     \
  X(sign, false, false, int(x > T(0)) - int(!std::is_unsigned_v<T> && x < T(0)), M(0))                    \
  X(erf, true, true, std::erf(M(x)), M(1.1283791670955126) * std::exp(-M(x) * M(x)))                  \
  X(gelu, true, true, M(0.5) * M(x) * std::erfc(M(x) * M(-0.7071067811865476)),                     \
    M(0.5) * std::erfc(M(x) * M(-0.7071067811865476)) +                                               \
        M(x) * M(0.3989422804014327) * std::exp(M(-0.5) * M(x) * M(x)))

// X(name, differentiable, forward(a, b), dy/da(a, b, y), dy/db(a, b, y))
// Comparisons give 0/1 in the operands' dtype, as in MXNet. Integer division by zero gives 0.
#define NDG_BINARY_OPS(X)                                                                             \
  X(add, true, a + b, M(1), M(1))                                                               \
  X(subtract, true, a - b, M(1), M(-1))                                                         \
  X(multiply, true, a * b, M(b), M(a))                                                          \
  X(divide, true, (!mx::is_float_v<T> && b == T(0) ? T(0) : T(a / b)), M(1) / M(b),      \
    -M(y) / M(b))                                                                                     \
  X(power, true, std::pow(M(a), M(b)), M(b) * std::pow(M(a), M(b) - M(1)), M(y) * std::log(M(a)))     \
  X(maximum, true, (a > b ? a : b), M(a >= b), M(a < b))                                        \
  X(minimum, true, (a < b ? a : b), M(a <= b), M(a > b))                                        \
  X(equal, false, T(a == b), M(0), M(0))                                                              \
  X(not_equal, false, T(a != b), M(0), M(0))                                                          \
  X(greater, false, T(a > b), M(0), M(0))                                                             \
  X(greater_equal, false, T(a >= b), M(0), M(0))                                                      \
  X(less, false, T(a < b), M(0), M(0))                                                                \
  X(less_equal, false, T(a <= b), M(0), M(0))
