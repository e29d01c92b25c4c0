#include "ndarray/linalg.hpp"

#include "ndarray/autograd.hpp"
#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"
#include "ndarray/contiguous.hpp"

namespace mx::nd {

namespace {

// A matrix operand as GEMM reads it: a contiguous one as is, a transposed view of a contiguous
// matrix (strides (1, rows)) as its storage with the transpose flag flipped, anything else copied.
NDArray gemm_operand(const NDArray& x, bool& trans) {
  if (x.ndim() == 2 && !x.is_contiguous() && x.strides() == std::vector<std::int64_t>{1, x.shape()[0]}) {
    trans = !trans;
    return x;
  }
  return detail::dense(x);
}

}  // namespace

NDArray dot(const NDArray& a, const NDArray& b, bool transpose_a, bool transpose_b) {
  detail::check_same_context("dot", a, b);
  detail::check_same_dtype("dot", a, b);
  detail::check_floating("dot", a);
  if (a.ndim() < 1 || a.ndim() > 2 || b.ndim() < 1 || b.ndim() > 2 ||
      ((transpose_a && a.ndim() != 2) || (transpose_b && b.ndim() != 2))) {
    throw ShapeError("dot: supports 1-D and 2-D operands (transposes of 2-D only), got lhs " +
                     detail::describe(a) + ", rhs " + detail::describe(b));
  }
  // Treat a vector lhs as (1, k) and a vector rhs as (k, 1).
  const std::int64_t a_rows = a.ndim() == 2 ? a.shape()[0] : 1;
  const std::int64_t a_cols = a.ndim() == 2 ? a.shape()[1] : a.shape()[0];
  const std::int64_t b_rows = b.ndim() == 2 ? b.shape()[0] : b.shape()[0];
  const std::int64_t b_cols = b.ndim() == 2 ? b.shape()[1] : 1;
  GemmArgs args;
  args.trans_a = transpose_a;
  args.trans_b = transpose_b;
  args.m = transpose_a ? a_cols : a_rows;
  args.k = transpose_a ? a_rows : a_cols;
  args.n = transpose_b ? b_rows : b_cols;
  const std::int64_t k_b = transpose_b ? b_cols : b_rows;
  if (args.k != k_b) {
    throw ShapeError("dot: inner dimensions do not match: lhs " + detail::describe(a) +
                     (transpose_a ? " (transposed)" : "") + " has " + std::to_string(args.k) +
                     ", rhs " + detail::describe(b) + (transpose_b ? " (transposed)" : "") + " has " +
                     std::to_string(k_b));
  }
  // (m, n) for two matrices, (m,) or (n,) with a vector, (1,) for two vectors.
  const Shape out_shape = a.ndim() == 2 && b.ndim() == 2 ? Shape{args.m, args.n}
                          : a.ndim() == 2               ? Shape{args.m}
                          : b.ndim() == 2               ? Shape{args.n}
                                                        : Shape{1};
  NDArray out(out_shape, a.context(), a.dtype());
  // An empty result needs no product (and cuBLAS rejects the leading dimension 0 that n = 0 gives);
  // an empty inner dimension sums nothing.
  if (out.size() > 0 && args.k == 0) out.fill(0.0);
  if (out.size() > 0 && args.k > 0) {
    GemmArgs stored = args;
    const NDArray sa = gemm_operand(a, stored.trans_a), sb = gemm_operand(b, stored.trans_b);
    backend(a.context()).gemm(a.context(), a.dtype(), stored, sa.data(), sb.data(), out.data());
  }
  if (autograd::needs_record({&a, &b})) {
    // Only the operands that lead to a variable get a gradient product (a Dense layer's input
    // usually does not), so backward costs no more matrix products than it must.
    const bool need_a = a.autograd_node() != nullptr, need_b = b.autograd_node() != nullptr;
    autograd::record_op("dot", out, {&a, &b}, [a = a.detach(), b = b.detach(), transpose_a, transpose_b,
                                              need_a, need_b, m = args.m, n = args.n](const NDArray& g) {
      // In 2-D terms, with C = op(A)·op(B) and G its gradient:
      //   A: G·op(B)ᵀ (or its transpose when A is stored transposed); B: op(A)ᵀ·G (likewise).
      const NDArray g2 = g.reshape({m, n});
      const NDArray a2 = a.ndim() == 2 ? a : a.reshape({1, a.size()});
      const NDArray b2 = b.ndim() == 2 ? b : b.reshape({b.size(), 1});
      NDArray ga, gb;
      if (need_a) ga = (transpose_a ? dot(b2, g2, transpose_b, true) : dot(g2, b2, false, !transpose_b)).reshape(a.shape());
      if (need_b) gb = (transpose_b ? dot(g2, a2, true, transpose_a) : dot(a2, g2, !transpose_a, false)).reshape(b.shape());
      return std::vector<NDArray>{ga, gb};
    });
  }
  return out;
}

}  // namespace mx::nd
