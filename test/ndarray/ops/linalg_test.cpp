// nd::dot: matrix·matrix, matrix·vector, vector·vector, vector·matrix, transposed operands,
// float64, random products against a naive triple loop in double, empty dimensions. Every case
// runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>
#include <ndarray/ops/linalg_kernels.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::uniform_values;
using ndg_test::Values;
using ndg_test::dtype_of;
using ndg_test::values;

namespace {

// Row-major (m, k) · (k, n) in double.
Values naive_matmul(const Values& a, const Values& b, std::int64_t m, std::int64_t k, std::int64_t n) {
  Values c(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double total = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        total += a[static_cast<std::size_t>(i * k + p)] * b[static_cast<std::size_t>(p * n + j)];
      }
      c[static_cast<std::size_t>(i * n + j)] = total;
    }
  return c;
}

// The (cols, rows) transpose of a row-major (rows, cols) matrix.
Values transposed(const Values& a, std::int64_t rows, std::int64_t cols) {
  Values t(a.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      t[static_cast<std::size_t>(j * rows + i)] = a[static_cast<std::size_t>(i * cols + j)];
    }
  return t;
}

// a (3, 2), b (2, 3) and their product (3, 3), by hand.
const Values kA{1, 2, 3, 4, 5, 6};
const Values kB{7, 8, 9, 10, 11, 12};
const Values kAB{27, 30, 33, 61, 68, 75, 95, 106, 117};

}  // namespace

BOOST_AUTO_TEST_SUITE(linalg)

BOOST_AUTO_TEST_CASE(matrix_times_matrix) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array(kA, {3, 2}, ctx, DType::float32);
    const nd::NDArray b = nd::array(kB, {2, 3}, ctx, DType::float32);
    const nd::NDArray c = nd::dot(a, b);
    BOOST_TEST(c.shape() == (mx::Shape{3, 3}));
    BOOST_TEST(dtype_of(c) == "float32");
    BOOST_TEST(c.context() == ctx);
    BOOST_TEST(values(c) == kAB, tt::per_element());
    // b · a is (2, 2): [[7 + 24 + 45, 14 + 32 + 54], [10 + 33 + 60, 20 + 44 + 72]].
    BOOST_TEST(values(nd::dot(b, a)) == (Values{76, 100, 103, 136}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(matrix_times_vector) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array(kA, {3, 2}, ctx, DType::float32);
    const nd::NDArray v = nd::array({2, 1}, ctx);
    const nd::NDArray av = nd::dot(a, v);  // (3, 2)·(2,) -> (3,)
    BOOST_TEST(av.shape() == (mx::Shape{3}));
    BOOST_TEST(values(av) == (Values{4, 10, 16}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(vector_times_vector) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray dot = nd::dot(nd::array({1, 2, 3}, ctx), nd::array({4, -5, 6}, ctx));
    BOOST_TEST(dot.shape() == (mx::Shape{1}));
    BOOST_TEST(dot.asscalar<double>() == 12);  // 4 - 10 + 18
  });
}

BOOST_AUTO_TEST_CASE(vector_times_matrix) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array(kA, {3, 2}, ctx, DType::float32);
    const nd::NDArray va = nd::dot(nd::array({1, 2, 3}, ctx), a);  // (3,)·(3, 2) -> (2,)
    BOOST_TEST(va.shape() == (mx::Shape{2}));
    BOOST_TEST(values(va) == (Values{22, 28}), tt::per_element());  // 1+6+15, 2+8+18
  });
}

BOOST_AUTO_TEST_CASE(transposed_operands) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // aᵀ stored as (2, 3) and bᵀ stored as (3, 2): each flag reads the stored matrix transposed.
    const nd::NDArray a = nd::array(kA, {3, 2}, ctx, DType::float32);
    const nd::NDArray b = nd::array(kB, {2, 3}, ctx, DType::float32);
    const nd::NDArray at = nd::array({{1, 3, 5}, {2, 4, 6}}, ctx);
    const nd::NDArray bt = nd::array({{7, 10}, {8, 11}, {9, 12}}, ctx);
    for (const nd::NDArray& c : {nd::dot(at, b, true, false), nd::dot(a, bt, false, true),
                                 nd::dot(at, bt, true, true)}) {
      BOOST_TEST(c.shape() == (mx::Shape{3, 3}));
      BOOST_TEST(values(c) == kAB, tt::per_element());
    }
    // aᵀ · a is (2, 2): [[1+9+25, 2+12+30], [.., 4+16+36]].
    const nd::NDArray gram = nd::dot(a, a, true, false);
    BOOST_TEST(gram.shape() == (mx::Shape{2, 2}));
    BOOST_TEST(values(gram) == (Values{35, 44, 44, 56}), tt::per_element());
    // a · aᵀ is (3, 3).
    BOOST_TEST(nd::dot(a, a, false, true).shape() == (mx::Shape{3, 3}));
    BOOST_TEST(values(nd::dot(a, a, false, true)) == (Values{5, 11, 17, 11, 25, 39, 17, 39, 61}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(transposes_change_the_inner_dimension_check) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::ones({3, 2}, ctx), b = nd::ones({3, 4}, ctx);
    NDG_CHECK_THROWS_WITH(nd::dot(a, b), mx::ShapeError, "dot", "(3, 2)", "(3, 4)");
    // aᵀ (2, 3) · b (3, 4) fits.
    const nd::NDArray c = nd::dot(a, b, true);
    BOOST_TEST(c.shape() == (mx::Shape{2, 4}));
    BOOST_TEST(values(c) == Values(8, 3.0), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(float64_products) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array(kA, {3, 2}, ctx), b = nd::array(kB, {2, 3}, ctx);
    BOOST_TEST(dtype_of(a) == "float64");
    const nd::NDArray c = nd::dot(a, b);
    BOOST_TEST(dtype_of(c) == "float64");
    BOOST_TEST(values(c) == kAB, tt::per_element());
    // (1 + 1e-10) · 1 and 1/3 · 3 keep double precision, lost in float32.
    const nd::NDArray u = nd::array(Values{1 + 1e-10, 1.0 / 3}, {2}, ctx);
    const nd::NDArray w = nd::array(Values{1, 3}, {2}, ctx);
    BOOST_TEST(nd::dot(u, w).asscalar<double>() - 2.0 == 1e-10, tt::tolerance(1e-4));
  });
}

BOOST_AUTO_TEST_CASE(random_product_against_a_naive_loop) {
  const std::int64_t m = 64, k = 48, n = 80;
  const Values a = uniform_values(static_cast<std::size_t>(m * k), 11);
  const Values b = uniform_values(static_cast<std::size_t>(k * n), 12);
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : {DType::float32, DType::float64}) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray x = nd::array(a, {m, k}, ctx, dt), y = nd::array(b, {k, n}, ctx, dt);
        // The reference uses the inputs as rounded to dt.
        const Values expected = naive_matmul(values(x), values(y), m, k, n);
        // float32 with a float32 accumulator: about sqrt(k) * 6e-8 relative; TF32 (1e-3) would fail.
        const double tolerance = dt == DType::float32 ? 1e-5 : 1e-13;
        const nd::NDArray c = nd::dot(x, y);
        BOOST_TEST(c.shape() == (mx::Shape{m, n}));
        BOOST_TEST(ndg_test::relative_error(values(c), expected) < tolerance);
        // The same product through transposed storage.
        const nd::NDArray xt = nd::array(transposed(values(x), m, k), {k, m}, ctx, dt);
        const nd::NDArray yt = nd::array(transposed(values(y), k, n), {n, k}, ctx, dt);
        BOOST_TEST(ndg_test::relative_error(values(nd::dot(xt, y, true, false)), expected) < tolerance);
        BOOST_TEST(ndg_test::relative_error(values(nd::dot(x, yt, false, true)), expected) < tolerance);
        BOOST_TEST(ndg_test::relative_error(values(nd::dot(xt, yt, true, true)), expected) < tolerance);
        // Matrix·vector with the first column of y.
        const Values y_rows = values(yt);
        const nd::NDArray column = nd::array(Values(y_rows.begin(), y_rows.begin() + k), {k}, ctx, dt);
        const Values expected_column = naive_matmul(values(x), values(column), m, k, 1);
        BOOST_TEST(ndg_test::relative_error(values(nd::dot(x, column)), expected_column) < tolerance);
      }
    }
  });
}

// cpu(0) cuts large products into a grid of blocks for its OpenMP team when OpenBLAS is not the
// OpenMP build (Note [one thread team], ndarray/ops/linalg.cpp). Grids of rows, of columns and of
// both, each transpose, and batch_dot, against the naive loop; the same products handed to
// OpenBLAS whole give the same values.
BOOST_AUTO_TEST_CASE(products_split_over_the_thread_team) {
  struct Case {
    std::int64_t m, k, n;
  };
  // 2^21 multiply-adds and more: split wherever there are two threads or more.
  for (const Case& c : {Case{300, 96, 100}, Case{6, 512, 700}, Case{33, 257, 301}, Case{256, 128, 256}}) {
    const Values a = uniform_values(static_cast<std::size_t>(c.m * c.k), 21);
    const Values b = uniform_values(static_cast<std::size_t>(c.k * c.n), 22);
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT("(" << c.m << ", " << c.k << ") . (" << c.k << ", " << c.n << ")") {
        const nd::NDArray x = nd::array(a, {c.m, c.k}, ctx, DType::float32);
        const nd::NDArray y = nd::array(b, {c.k, c.n}, ctx, DType::float32);
        const Values expected = naive_matmul(values(x), values(y), c.m, c.k, c.n);
        const nd::NDArray xt = nd::array(transposed(values(x), c.m, c.k), {c.k, c.m}, ctx, DType::float32);
        const nd::NDArray yt = nd::array(transposed(values(y), c.k, c.n), {c.n, c.k}, ctx, DType::float32);
        // Split over the team's threads, over 6 (2 x 3 or 3 x 2 blocks where the product allows),
        // and handed to OpenBLAS whole.
        for (const int threads : {0, 6, -1}) {
          const bool was = mx::op::set_cpu_gemm_split(threads >= 0);
          const int threads_before = mx::op::set_cpu_gemm_threads(std::max(threads, 0));
          BOOST_TEST(ndg_test::relative_error(values(nd::dot(x, y)), expected) < 1e-5);
          BOOST_TEST(ndg_test::relative_error(values(nd::dot(xt, y, true, false)), expected) < 1e-5);
          BOOST_TEST(ndg_test::relative_error(values(nd::dot(x, yt, false, true)), expected) < 1e-5);
          BOOST_TEST(ndg_test::relative_error(values(nd::dot(xt, yt, true, true)), expected) < 1e-5);
          // Two products in one batch_dot: each the same product.
          const nd::NDArray xs = nd::concat({x, x}).reshape({2, c.m, c.k});
          const nd::NDArray ys = nd::concat({y, y}).reshape({2, c.k, c.n});
          Values twice = expected;
          twice.insert(twice.end(), expected.begin(), expected.end());
          BOOST_TEST(ndg_test::relative_error(values(nd::batch_dot(xs, ys)), twice) < 1e-5);
          mx::op::set_cpu_gemm_split(was);
          mx::op::set_cpu_gemm_threads(threads_before);
        }
      }
    });
  }
  // A batch of products too small to cut: run side by side over the team.
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::int64_t batch = 256, m = 16, k = 32, n = 16;
    const nd::NDArray x = nd::array(uniform_values(static_cast<std::size_t>(batch * m * k), 31), {batch, m, k}, ctx,
                                    DType::float32);
    const nd::NDArray y = nd::array(uniform_values(static_cast<std::size_t>(batch * k * n), 32), {batch, k, n}, ctx,
                                    DType::float32);
    const Values xs = values(x), ys = values(y);
    Values expected;
    for (std::int64_t i = 0; i < batch; ++i) {
      const Values xi(xs.begin() + i * m * k, xs.begin() + (i + 1) * m * k);
      const Values yi(ys.begin() + i * k * n, ys.begin() + (i + 1) * k * n);
      const Values ci = naive_matmul(xi, yi, m, k, n);
      expected.insert(expected.end(), ci.begin(), ci.end());
    }
    BOOST_TEST(ndg_test::relative_error(values(nd::batch_dot(x, y)), expected) < 1e-5);
  });
  // One thread team after all that: the OpenMP build, or OpenBLAS running single-threaded.
  const char* split = std::getenv("NDG_CPU_GEMM_SPLIT");  // "0": OpenBLAS's own threads, as asked
  BOOST_TEST((mx::op::openblas_threading() == "openmp" || mx::op::openblas_threads() == 1 ||
              (split && std::string(split) == "0")),
             "OpenBLAS " << mx::op::openblas_threading() << " runs " << mx::op::openblas_threads() << " threads");
}

BOOST_AUTO_TEST_CASE(products_of_views) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // Rows 1..2 of a (4, 2) matrix, a slice at an offset into the storage.
    const nd::NDArray big = nd::array({{9, 9}, {1, 2}, {3, 4}, {9, 9}}, ctx);
    const nd::NDArray a = big.slice(1, 3);
    const nd::NDArray b = nd::array({{1, 0}, {0, 1}}, ctx);
    BOOST_TEST(values(nd::dot(a, b)) == (Values{1, 2, 3, 4}), tt::per_element());
    BOOST_TEST(values(nd::dot(big[2], b * 2)) == (Values{6, 8}), tt::per_element());
    BOOST_TEST(values(nd::dot(big.reshape({2, 4}), nd::ones({4}, ctx))) == (Values{21, 25}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(zero_inner_dimension_gives_zeros) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray c = nd::dot(nd::ones({3, 0}, ctx), nd::ones({0, 4}, ctx));
    BOOST_TEST(c.shape() == (mx::Shape{3, 4}));
    BOOST_TEST(values(c) == Values(12, 0.0), tt::per_element());
    const nd::NDArray v = nd::dot(nd::zeros({0}, ctx), nd::zeros({0}, ctx));
    BOOST_TEST(v.shape() == (mx::Shape{1}));
    BOOST_TEST(v.asscalar<double>() == 0);
    BOOST_TEST(values(nd::dot(nd::ones({0, 2}, ctx, DType::float64), nd::ones({0, 3}, ctx, DType::float64),
                              true, false)) == Values(6, 0.0), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(zero_outer_dimensions_give_empty_results) {
  ndg_test::for_each_context([](mx::Context ctx) {
    BOOST_TEST(nd::dot(nd::ones({0, 3}, ctx), nd::ones({3, 4}, ctx)).shape() == (mx::Shape{0, 4}));
    BOOST_TEST(nd::dot(nd::ones({2, 3}, ctx), nd::ones({3, 0}, ctx)).shape() == (mx::Shape{2, 0}));
    BOOST_TEST(nd::dot(nd::ones({3}, ctx), nd::ones({3, 0}, ctx)).shape() == (mx::Shape{0}));
  });
}

// batch_dot: each matrix of a batch against the naive product, with every transpose, in float32
// and float64; the gradients against the naive products of dot's formulas.
BOOST_AUTO_TEST_CASE(batch_dot_multiplies_each_matrix_of_the_batch) {
  const std::int64_t batch = 3, m = 4, k = 5, n = 2;
  const Values a = uniform_values(static_cast<std::size_t>(batch * m * k), 1),
               b = uniform_values(static_cast<std::size_t>(batch * k * n), 2);
  Values want;
  for (std::int64_t i = 0; i < batch; ++i) {
    const Values ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k), bi(b.begin() + i * k * n, b.begin() + (i + 1) * k * n);
    const Values ci = naive_matmul(ai, bi, m, k, n);
    want.insert(want.end(), ci.begin(), ci.end());
  }
  // The same operands stored transposed, matrix by matrix.
  Values at, bt;
  for (std::int64_t i = 0; i < batch; ++i) {
    const Values ti = transposed(Values(a.begin() + i * m * k, a.begin() + (i + 1) * m * k), m, k);
    const Values ui = transposed(Values(b.begin() + i * k * n, b.begin() + (i + 1) * k * n), k, n);
    at.insert(at.end(), ti.begin(), ti.end());
    bt.insert(bt.end(), ui.begin(), ui.end());
  }
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : ndg_test::kFloatDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
        const auto arr = [&](const Values& v, mx::Shape s) { return nd::array(v.data(), DType::float64, s, ctx, dt); };
        const double tol = dt == DType::float32 ? 1e-5 : 1e-12;
        ndg_test::check_close(nd::batch_dot(arr(a, {batch, m, k}), arr(b, {batch, k, n})), want, tol, tol);
        ndg_test::check_close(nd::batch_dot(arr(at, {batch, k, m}), arr(b, {batch, k, n}), true), want, tol, tol);
        ndg_test::check_close(nd::batch_dot(arr(a, {batch, m, k}), arr(bt, {batch, n, k}), false, true), want, tol, tol);
        const nd::NDArray both = nd::batch_dot(arr(at, {batch, k, m}), arr(bt, {batch, n, k}), true, true);
        BOOST_TEST(both.shape() == (mx::Shape{batch, m, n}));
        ndg_test::check_close(both, want, tol, tol);
        // 4-D: two batch axes.
        BOOST_TEST(nd::batch_dot(arr(a, {1, batch, m, k}), arr(b, {1, batch, k, n})).shape() ==
                   (mx::Shape{1, batch, m, n}));
        // Gradients of sum(batch_dot(a, b) * w): a gets w·bᵀ, b gets aᵀ·w, matrix by matrix.
        nd::NDArray va = arr(a, {batch, m, k}), vb = arr(bt, {batch, n, k});
        va.attach_grad();
        vb.attach_grad();
        const Values w = uniform_values(static_cast<std::size_t>(batch * m * n), 3);
        {
          auto record = mx::autograd::record();
          (nd::batch_dot(va, vb, false, true) * arr(w, {batch, m, n})).sum().backward();
        }
        Values grad_a, grad_bt;
        for (std::int64_t i = 0; i < batch; ++i) {
          const Values wi(w.begin() + i * m * n, w.begin() + (i + 1) * m * n);
          const Values bi(b.begin() + i * k * n, b.begin() + (i + 1) * k * n);
          const Values ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
          const Values ga = naive_matmul(wi, transposed(bi, k, n), m, n, k);                     // (m, k)
          const Values gb = transposed(naive_matmul(transposed(ai, m, k), wi, k, m, n), k, n);  // (n, k)
          grad_a.insert(grad_a.end(), ga.begin(), ga.end());
          grad_bt.insert(grad_bt.end(), gb.begin(), gb.end());
        }
        ndg_test::check_close(va.grad(), grad_a, tol, tol);
        ndg_test::check_close(vb.grad(), grad_bt, tol, tol);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(batch_dot_errors_name_both_operands) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::batch_dot(nd::ones({2, 3, 4}, ctx), nd::ones({2, 5, 4}, ctx)), mx::ShapeError,
                          "batch_dot", "(2, 3, 4)", "(2, 5, 4)");
    NDG_CHECK_THROWS_WITH(nd::batch_dot(nd::ones({2, 3, 4}, ctx), nd::ones({3, 4, 4}, ctx)), mx::ShapeError,
                          "batch_dot", "(3, 4, 4)");
    NDG_CHECK_THROWS_WITH(nd::batch_dot(nd::ones({3, 4}, ctx), nd::ones({4, 3}, ctx)), mx::ShapeError, "batch_dot",
                          "3-D");
    NDG_CHECK_THROWS_WITH(nd::batch_dot(nd::ones({2, 3, 4}, ctx, DType::int32), nd::ones({2, 4, 3}, ctx, DType::int32)),
                          mx::DTypeError, "batch_dot", "int32");
  });
}

BOOST_AUTO_TEST_CASE(integer_operands_are_refused) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray i = nd::ones({2, 2}, ctx, DType::int32);
    NDG_CHECK_THROWS_WITH(nd::dot(i, i), mx::DTypeError, "dot", "int32");
  });
}

// set_matmul_precision: "high" lets a GPU run float32 products and convolutions in TF32, within
// TF32's rounding (inputs to 10-bit mantissas) of the reference; "highest" keeps them float32
// (1e-5, which TF32 would fail); cpu(0) is float32 under both. Another word is refused and changes
// nothing.
BOOST_AUTO_TEST_CASE(matmul_precision_governs_float32_products_and_convolutions) {
  struct Restore {
    ~Restore() { mx::set_matmul_precision("highest"); }
  } restore;
  NDG_CHECK_THROWS_WITH(mx::set_matmul_precision("medium"), mx::ValueError, "set_matmul_precision", "\"medium\"");
  BOOST_TEST(mx::matmul_precision() == "highest");
  const std::int64_t m = 48, k = 300, n = 40;
  const Values a = uniform_values(static_cast<std::size_t>(m * k), 21);
  const Values b = uniform_values(static_cast<std::size_t>(k * n), 22);
  const mx::Shape x_shape{2, 8, 12, 12}, w_shape{16, 8, 3, 3};
  const Values xv = uniform_values(static_cast<std::size_t>(x_shape.numel()), 23);
  const Values wv = uniform_values(static_cast<std::size_t>(w_shape.numel()), 24);
  const nd::ConvolutionOptions conv{.kernel = {3, 3}, .pad = {1, 1}, .num_filter = 16, .no_bias = true};
  // The references, in double from the inputs as rounded to float32.
  const nd::NDArray x32 = nd::array(a, {m, k}, mx::cpu()), y32 = nd::array(b, {k, n}, mx::cpu());
  const Values product = naive_matmul(values(x32), values(y32), m, k, n);
  const auto in_double = [](const Values& v, const mx::Shape& shape) {
    return nd::array(values(nd::array(v, shape, mx::cpu())), shape, mx::cpu(), DType::float64);
  };
  const Values convolved = values(nd::Convolution(in_double(xv, x_shape), in_double(wv, w_shape), {}, conv));
  for (const std::string precision : {"highest", "high"}) {
    mx::set_matmul_precision(precision);
    BOOST_TEST(mx::matmul_precision() == precision);
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT(precision << " on " << ctx.str()) {
        const double tolerance = precision == "high" && ctx.is_gpu() ? 5e-3 : 1e-5;
        const nd::NDArray c = nd::dot(nd::array(a, {m, k}, ctx), nd::array(b, {k, n}, ctx));
        BOOST_TEST(ndg_test::relative_error(values(c), product) < tolerance);
        const nd::NDArray y = nd::Convolution(nd::array(xv, x_shape, ctx), nd::array(wv, w_shape, ctx), {}, conv);
        BOOST_TEST(ndg_test::relative_error(values(y), convolved) < tolerance);
      }
    });
  }
}

BOOST_AUTO_TEST_SUITE_END()
