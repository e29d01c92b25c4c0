// Reductions: sum, mean, max, min, argmax, argmin over all elements and along an axis (negative
// axes, keepdims), ties and NaN, norm, and large arrays against a double-precision reference.
// Every case runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;
using ndg_test::dtype_of;
using ndg_test::values;

namespace {

// n floats uniform in [0, 1), the same on every run.
std::vector<float> uniform_floats(std::size_t n, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = uniform(engine);
  return v;
}

// The CPU reference for a reduction of a row-major (outer, length, inner) block along its middle
// axis, in double.
enum class Op { sum, max, min, argmax, argmin };
Values reference(Op op, const Values& x, std::int64_t outer, std::int64_t length, std::int64_t inner) {
  Values out;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      double total = 0, best = 0;
      std::int64_t best_k = 0;
      for (std::int64_t k = 0; k < length; ++k) {
        const double v = x[static_cast<std::size_t>((o * length + k) * inner + i)];
        total += v;
        const bool better = (op == Op::max || op == Op::argmax) ? v > best : v < best;
        if (k == 0 || better) {
          best = v;
          best_k = k;
        }
      }
      switch (op) {
        case Op::sum: out.push_back(total); break;
        case Op::max: case Op::min: out.push_back(best); break;
        case Op::argmax: case Op::argmin: out.push_back(static_cast<double>(best_k)); break;
      }
    }
  }
  return out;
}

// Values of a (2, 3, 4) array without ties along any axis: 7 * i mod 24 permutes 0..23.
Values cube_values() {
  Values v;
  for (int i = 0; i < 24; ++i) v.push_back(static_cast<double>((7 * i) % 24) - 10);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reduce)

// ---- over every element -----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(full_reductions_give_shape_1) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, 5, 3}, {4, 2, 6}}, ctx);
    for (const nd::NDArray& r : {x.sum(), x.mean(), x.max(), x.min(), x.argmax(), x.argmin(), x.norm()}) {
      BOOST_TEST(r.shape() == (mx::Shape{1}));
      BOOST_TEST(r.context() == ctx);
    }
    BOOST_TEST(x.sum().asscalar<double>() == 21);
    BOOST_TEST(x.mean().asscalar<double>() == 3.5);
    BOOST_TEST(x.max().asscalar<double>() == 6);
    BOOST_TEST(x.min().asscalar<double>() == 1);
    BOOST_TEST(x.argmax().asscalar<double>() == 5);  // position in the flattened array
    BOOST_TEST(x.argmin().asscalar<double>() == 0);
    // The free functions are the methods.
    BOOST_TEST(nd::sum(x).asscalar<double>() == 21);
    BOOST_TEST(nd::mean(x).asscalar<double>() == 3.5);
    BOOST_TEST(nd::max(x).asscalar<double>() == 6);
    BOOST_TEST(nd::min(x).asscalar<double>() == 1);
    BOOST_TEST(nd::argmax(x).asscalar<double>() == 5);
    BOOST_TEST(nd::argmin(x).asscalar<double>() == 0);
  });
}

BOOST_AUTO_TEST_CASE(full_reductions_with_keepdims) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(24, ctx).reshape({2, 3, 4});
    const nd::NDArray s = x.sum({}, true);
    BOOST_TEST(s.shape() == (mx::Shape{1, 1, 1}));
    BOOST_TEST(s.asscalar<double>() == 276);  // 0 + 1 + ... + 23
    BOOST_TEST(x.max({}, true).shape() == (mx::Shape{1, 1, 1}));
    BOOST_TEST(x.argmin({}, true).shape() == (mx::Shape{1, 1, 1}));
    BOOST_TEST(x.mean({}, true).asscalar<double>() == 11.5);
  });
}

BOOST_AUTO_TEST_CASE(full_reductions_in_every_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : {DType::float32, DType::float64, DType::int32, DType::int64, DType::uint8}) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray x = nd::array({3, 9, 0, 7, 9}, ctx, dt);
        BOOST_TEST(dtype_of(x.sum()) == mx::dtype_name(dt));  // sums keep the dtype
        BOOST_TEST(x.sum().asscalar<double>() == 28);
        BOOST_TEST(x.max().asscalar<double>() == 9);
        BOOST_TEST(x.min().asscalar<double>() == 0);
        BOOST_TEST(dtype_of(x.max()) == mx::dtype_name(dt));
        BOOST_TEST(x.argmax().asscalar<double>() == 1);  // the first of the two 9s
        BOOST_TEST(x.argmin().asscalar<double>() == 2);
      }
    }
    // uint8 sums wrap like the dtype (3 * 200 = 600 = 88 + 2 * 256).
    BOOST_TEST(nd::full({3}, 200, ctx, DType::uint8).sum().asscalar<double>() == 88);
  });
}

BOOST_AUTO_TEST_CASE(argmax_and_argmin_return_float32) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : {DType::float64, DType::int32, DType::int64, DType::uint8}) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray x = nd::array({{1, 8}, {5, 0}}, ctx, dt);
        BOOST_TEST(dtype_of(x.argmax()) == "float32");
        BOOST_TEST(dtype_of(x.argmin(1)) == "float32");
        BOOST_TEST(x.argmax().asscalar<float>() == 1.0f);
        BOOST_TEST(values(x.argmin(1)) == (Values{0, 1}), tt::per_element());
      }
    }
  });
}

// ---- along an axis ----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(sum_along_each_axis_of_a_3d_array) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(24, ctx).reshape({2, 3, 4});  // x[i, j, k] = 12i + 4j + k
    // axis 0: x[0] + x[1] = 2 (4j + k) + 12.
    BOOST_TEST(x.sum(0).shape() == (mx::Shape{3, 4}));
    BOOST_TEST(values(x.sum(0)) == (Values{12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}), tt::per_element());
    // axis 1: sum over j of 12i + 4j + k = 36i + 12 + 3k.
    BOOST_TEST(x.sum(1).shape() == (mx::Shape{2, 4}));
    BOOST_TEST(values(x.sum(1)) == (Values{12, 15, 18, 21, 48, 51, 54, 57}), tt::per_element());
    // axis 2: sum over k = 48i + 16j + 6.
    BOOST_TEST(x.sum(2).shape() == (mx::Shape{2, 3}));
    BOOST_TEST(values(x.sum(2)) == (Values{6, 22, 38, 54, 70, 86}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(every_reduction_along_every_axis_with_keepdims) {
  const Values v = cube_values();
  const std::int64_t dims[3] = {2, 3, 4};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array(v, {2, 3, 4}, ctx);
    for (int axis = -3; axis < 3; ++axis) {
      const int a = axis < 0 ? axis + 3 : axis;
      std::int64_t outer = 1, inner = 1;
      for (int d = 0; d < a; ++d) outer *= dims[d];
      for (int d = a + 1; d < 3; ++d) inner *= dims[d];
      std::vector<std::int64_t> kept, dropped;
      for (int d = 0; d < 3; ++d) {
        kept.push_back(d == a ? 1 : dims[d]);
        if (d != a) dropped.push_back(dims[d]);
      }
      for (const bool keepdims : {false, true}) {
        BOOST_TEST_CONTEXT("axis " << axis << (keepdims ? " keepdims" : "")) {
          const mx::Shape shape(keepdims ? kept : dropped);
          const struct {
            Op op;
            nd::NDArray result;
          } cases[] = {{Op::sum, x.sum(axis, keepdims)},       {Op::max, x.max(axis, keepdims)},
                       {Op::min, x.min(axis, keepdims)},       {Op::argmax, x.argmax(axis, keepdims)},
                       {Op::argmin, x.argmin(axis, keepdims)}};
          for (const auto& c : cases) {
            BOOST_TEST(c.result.shape() == shape);
            BOOST_TEST(values(c.result) == reference(c.op, v, outer, dims[a], inner), tt::per_element());
          }
          Values mean = reference(Op::sum, v, outer, dims[a], inner);
          for (double& m : mean) m /= static_cast<double>(dims[a]);
          BOOST_TEST(x.mean(axis, keepdims).shape() == shape);
          BOOST_TEST(values(x.mean(axis, keepdims)) == mean, tt::tolerance(1e-6) << tt::per_element());
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(negative_axes_count_from_the_end) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, 5, 3}, {4, 2, 6}}, ctx);
    BOOST_TEST(values(x.sum(-1)) == (Values{9, 12}), tt::per_element());
    BOOST_TEST(values(x.sum(-2)) == (Values{5, 7, 9}), tt::per_element());
    BOOST_TEST(values(x.max(-1)) == (Values{5, 6}), tt::per_element());
    BOOST_TEST(values(x.argmin(-2)) == (Values{0, 1, 0}), tt::per_element());
    BOOST_TEST(x.sum(-1, true).shape() == (mx::Shape{2, 1}));
    BOOST_TEST(values(nd::mean(x, -1)) == (Values{3, 4}), tt::per_element());
    NDG_CHECK_THROWS_WITH(x.sum(2), mx::IndexError, "sum", "axis 2", "(2, 3)");
    NDG_CHECK_THROWS_WITH(x.max(-3), mx::IndexError, "max", "axis -3");
  });
}

BOOST_AUTO_TEST_CASE(reducing_a_1d_array_along_its_axis_gives_shape_1) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({2, -1, 4}, ctx);
    BOOST_TEST(x.sum(0).shape() == (mx::Shape{1}));
    BOOST_TEST(x.sum(0).asscalar<double>() == 5);
    BOOST_TEST(x.argmin(0).asscalar<double>() == 1);
    BOOST_TEST(x.max(0, true).shape() == (mx::Shape{1}));
  });
}

BOOST_AUTO_TEST_CASE(sum_keeps_integer_dtypes_along_an_axis) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, -2, 3}, {4, 5, -6}}, ctx, DType::int32);
    BOOST_TEST(dtype_of(x.sum(0)) == "int32");
    BOOST_TEST(values(x.sum(0)) == (Values{5, 3, -3}), tt::per_element());
    BOOST_TEST(values(x.sum(1)) == (Values{2, 3}), tt::per_element());
    BOOST_TEST(values(x.max(1)) == (Values{3, 5}), tt::per_element());
    BOOST_TEST(values(x.min(0)) == (Values{1, -2, -6}), tt::per_element());
    // mean needs a floating dtype: convert first.
    BOOST_TEST(values(x.astype(DType::float32).mean(0)) == (Values{2.5, 1.5, -1.5}), tt::per_element());
  });
}

// ---- ties, NaN, views, empty ------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(ties_keep_the_first_position) {
  ndg_test::for_each_context([](mx::Context ctx) {
    BOOST_TEST(nd::array({3, 1, 3, 0}, ctx).argmax().asscalar<double>() == 0);
    BOOST_TEST(nd::array({1, 0, 5, 0}, ctx).argmin().asscalar<double>() == 1);
    BOOST_TEST(nd::ones({7}, ctx).argmax().asscalar<double>() == 0);
    const nd::NDArray x = nd::array({{1, 1, 0}, {2, 1, 2}}, ctx);
    BOOST_TEST(values(x.argmax(1)) == (Values{0, 0}), tt::per_element());
    BOOST_TEST(values(x.argmin(1)) == (Values{2, 1}), tt::per_element());
    BOOST_TEST(values(x.argmax(0)) == (Values{1, 0, 1}), tt::per_element());
    BOOST_TEST(values(nd::ones({3, 2}, ctx).argmin(0)) == (Values{0, 0}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(ties_far_apart_in_a_large_array) {
  // Long enough that GPUs split the row across blocks; the tie is between far-apart blocks.
  const std::int64_t n = std::int64_t{1} << 20;
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::zeros({n}, ctx);
    x.slice(900000, 900001).fill(5);
    x.slice(1000, 1001).fill(5);
    x.slice(700000, 700001).fill(-5);
    x.slice(5000, 5001).fill(-5);
    BOOST_TEST(x.argmax().asscalar<double>() == 1000);
    BOOST_TEST(x.argmin().asscalar<double>() == 5000);
    BOOST_TEST(nd::ones({n}, ctx).argmax().asscalar<double>() == 0);
    BOOST_TEST(nd::ones({n}, ctx).argmin().asscalar<double>() == 0);
    BOOST_TEST(x.max().asscalar<double>() == 5);
    BOOST_TEST(x.min().asscalar<double>() == -5);
  });
}

BOOST_AUTO_TEST_CASE(column_ties_far_apart_keep_the_first_row) {
  // (20000, 3) along axis 0: GPUs split each column into chunks of rows; the ties lie in
  // different chunks and the first row must win.
  const std::int64_t rows = 20000;
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::zeros({rows, 3}, ctx);
    x.slice(15000, 15001).fill(4);
    x.slice(300, 301).fill(4);
    x.slice(19999, 20000).fill(-4);
    x.slice(12, 13).fill(-4);
    BOOST_TEST(values(x.argmax(0)) == Values({300, 300, 300}), tt::per_element());
    BOOST_TEST(values(x.argmin(0)) == Values({12, 12, 12}), tt::per_element());
    BOOST_TEST(values(x.max(0)) == Values({4, 4, 4}), tt::per_element());
    BOOST_TEST(values(nd::ones({rows, 3}, ctx).sum(0)) == Values({20000, 20000, 20000}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(nan_propagates) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const nd::NDArray x = nd::array(std::vector<float>{1, nan, 3, 2}, {4}, ctx);
    BOOST_TEST(std::isnan(x.sum().asscalar<double>()));
    BOOST_TEST(std::isnan(x.max().asscalar<double>()));
    BOOST_TEST(std::isnan(x.min().asscalar<double>()));
    BOOST_TEST(x.argmax().asscalar<double>() == 1);  // the NaN's position, as NumPy
    BOOST_TEST(x.argmin().asscalar<double>() == 1);
  });
}

BOOST_AUTO_TEST_CASE(reductions_of_views_see_only_the_view) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({{1, 9, 3}, {4, 5, 6}, {7, 8, 0}}, ctx);
    BOOST_TEST(x[1].sum().asscalar<double>() == 15);
    BOOST_TEST(x[2].argmin().asscalar<double>() == 2);
    BOOST_TEST(values(x.slice(1, 3).max(0)) == (Values{7, 8, 6}), tt::per_element());
    BOOST_TEST(values(x.slice(0, 2).sum(1)) == (Values{13, 15}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(zero_size_reductions) {
  ndg_test::for_each_context([](mx::Context ctx) {
    BOOST_TEST(nd::zeros({0}, ctx).sum().asscalar<double>() == 0);  // the empty sum
    const nd::NDArray s = nd::ones({2, 0}, ctx).sum(1);
    BOOST_TEST(s.shape() == (mx::Shape{2}));
    BOOST_TEST(values(s) == (Values{0, 0}), tt::per_element());
    BOOST_TEST(nd::ones({0, 3}, ctx).sum(1).shape() == (mx::Shape{0}));
    NDG_CHECK_THROWS_WITH(nd::zeros({0}, ctx).max(), mx::ShapeError, "max", "(0,)");
  });
}

// ---- norm -------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(norm_is_the_l2_norm_of_every_element) {
  ndg_test::for_each_context([](mx::Context ctx) {
    BOOST_TEST(nd::array({3, 4}, ctx).norm().asscalar<double>() == 5);
    const nd::NDArray m = nd::array({{1, -2}, {2, 4}}, ctx);  // 1 + 4 + 4 + 16 = 25
    BOOST_TEST(m.norm().shape() == (mx::Shape{1}));
    BOOST_TEST(nd::norm(m).asscalar<double>() == 5);
    const nd::NDArray d = nd::array({1e-3, 2e-3, 2e-3}, ctx, DType::float64);
    BOOST_TEST(dtype_of(d.norm()) == "float64");
    BOOST_TEST(d.norm().asscalar<double>() == 3e-3, tt::tolerance(1e-14));
    BOOST_TEST(nd::zeros({4}, ctx).norm().asscalar<double>() == 0);
  });
}

// ---- large arrays against a double reference ----------------------------------------------------

BOOST_AUTO_TEST_CASE(large_full_reductions) {
  const std::int64_t n = std::int64_t{1} << 20;
  const std::vector<float> v = uniform_floats(static_cast<std::size_t>(n), 1);
  double total = 0, squares = 0;
  for (float f : v) {
    total += f;
    squares += static_cast<double>(f) * f;
  }
  const auto max_at = std::max_element(v.begin(), v.end()) - v.begin();
  const auto min_at = std::min_element(v.begin(), v.end()) - v.begin();
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array(v, {n}, ctx);
    // float32 sums: relative error of a pairwise/tree sum, well under 1e-5.
    BOOST_TEST(x.sum().asscalar<double>() == total, tt::tolerance(1e-5));
    BOOST_TEST(x.mean().asscalar<double>() == total / static_cast<double>(n), tt::tolerance(1e-5));
    BOOST_TEST(x.norm().asscalar<double>() == std::sqrt(squares), tt::tolerance(1e-5));
    // Selections are exact.
    BOOST_TEST(x.max().asscalar<float>() == v[static_cast<std::size_t>(max_at)]);
    BOOST_TEST(x.min().asscalar<float>() == v[static_cast<std::size_t>(min_at)]);
    BOOST_TEST(x.argmax().asscalar<double>() == static_cast<double>(max_at));
    BOOST_TEST(x.argmin().asscalar<double>() == static_cast<double>(min_at));
    // float64 is close to exact; a 3-D shape reduces the same way.
    const nd::NDArray d = x.astype(DType::float64).reshape({64, 128, 128});
    BOOST_TEST(d.sum().asscalar<double>() == total, tt::tolerance(1e-12));
  });
}

BOOST_AUTO_TEST_CASE(large_integer_sum_is_exact) {
  const std::int64_t n = std::int64_t{1} << 20;
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(nd::ones({n}, ctx, DType::int32).sum().asscalar<std::int64_t>() == n);
    // Integer sums accumulate in int64; the result has the input dtype, and 2^20 * 2000 =
    // 2097152000 still fits int32.
    BOOST_TEST(nd::full({n}, 2000, ctx, DType::int32).sum().asscalar<std::int64_t>() == n * 2000);
    BOOST_TEST(nd::full({n}, 3000000, ctx, DType::int64).sum().asscalar<std::int64_t>() == n * 3000000);
  });
}

BOOST_AUTO_TEST_CASE(large_rows_along_axis_1) {
  const std::int64_t rows = 3, cols = 300000;
  const std::vector<float> v = uniform_floats(static_cast<std::size_t>(rows * cols), 2);
  const Values x_values(v.begin(), v.end());
  const Values sums = reference(Op::sum, x_values, rows, cols, 1);
  const Values maxima = reference(Op::max, x_values, rows, cols, 1);
  const Values argmaxima = reference(Op::argmax, x_values, rows, cols, 1);
  const Values argminima = reference(Op::argmin, x_values, rows, cols, 1);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array(v, {rows, cols}, ctx);
    const nd::NDArray s = x.sum(1);
    BOOST_TEST(s.shape() == (mx::Shape{3}));
    BOOST_TEST(values(s) == sums, tt::tolerance(1e-5) << tt::per_element());
    BOOST_TEST(values(x.mean(1)) == (Values{sums[0] / cols, sums[1] / cols, sums[2] / cols}),
               tt::tolerance(1e-5) << tt::per_element());
    BOOST_TEST(values(x.max(1)) == maxima, tt::per_element());
    BOOST_TEST(values(x.argmax(1)) == argmaxima, tt::per_element());
    BOOST_TEST(values(x.argmin(-1)) == argminima, tt::per_element());
    BOOST_TEST(x.sum(1, true).shape() == (mx::Shape{3, 1}));
    // Sixteenths below 2^18 add up exactly in float32 in any order, so a lost or doubled element
    // shows: each row of (k % 16) / 16 sums to 18750 * 7.5 = 140625.
    std::vector<float> sixteenths(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < sixteenths.size(); ++i) sixteenths[i] = static_cast<float>(i % 16) / 16.0f;
    const nd::NDArray exact = nd::array(sixteenths, {rows, cols}, ctx);
    BOOST_TEST(values(exact.sum(1)) == Values(3, 140625.0), tt::per_element());
    BOOST_TEST(values(exact.mean(1)) == Values(3, 0.46875), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(large_columns_along_axis_0) {
  const std::int64_t rows = 100000, cols = 7;
  const std::vector<float> v = uniform_floats(static_cast<std::size_t>(rows * cols), 3);
  const Values x_values(v.begin(), v.end());
  const Values sums = reference(Op::sum, x_values, 1, rows, cols);
  const Values minima = reference(Op::min, x_values, 1, rows, cols);
  const Values argmaxima = reference(Op::argmax, x_values, 1, rows, cols);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array(v, {rows, cols}, ctx);
    const nd::NDArray s = x.sum(0);
    BOOST_TEST(s.shape() == (mx::Shape{7}));
    // A float32 column sum of 1e5 values in [0, 1) errs by about sqrt(n) * 6e-8 ~ 2e-5 relative;
    // a lost element is below that, so the exact case below is what catches one.
    BOOST_TEST(values(s) == sums, tt::tolerance(1e-4) << tt::per_element());
    // Column c of (r % 16) / 16 sums exactly to 6250 * 7.5 = 46875 in float32, in any order.
    std::vector<float> sixteenths(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < sixteenths.size(); ++i) {
      sixteenths[i] = static_cast<float>((i / static_cast<std::size_t>(cols)) % 16) / 16.0f;
    }
    BOOST_TEST(values(nd::array(sixteenths, {rows, cols}, ctx).sum(0)) == Values(7, 46875.0), tt::per_element());
    BOOST_TEST(values(x.min(0)) == minima, tt::per_element());
    BOOST_TEST(values(x.argmax(-2)) == argmaxima, tt::per_element());
    // float64 makes the sum nearly exact.
    BOOST_TEST(values(x.astype(DType::float64).sum(0)) == sums, tt::tolerance(1e-12) << tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(many_short_rows_along_axis_1) {
  // 100000 rows of 7: more rows than a GPU grid has in y, so GPUs take one row per thread.
  const std::int64_t rows = 100000, cols = 7;
  const std::vector<float> v = uniform_floats(static_cast<std::size_t>(rows * cols), 5);
  const Values x_values(v.begin(), v.end());
  const Values sums = reference(Op::sum, x_values, rows, cols, 1);
  const Values maxima = reference(Op::max, x_values, rows, cols, 1);
  const Values argminima = reference(Op::argmin, x_values, rows, cols, 1);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array(v, {rows, cols}, ctx);
    BOOST_TEST(x.sum(1).shape() == (mx::Shape{rows}));
    BOOST_TEST(values(x.sum(1)) == sums, tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(values(x.max(-1)) == maxima, tt::per_element());
    BOOST_TEST(values(x.argmin(1, true)) == argminima, tt::per_element());
    BOOST_TEST(x.argmin(1, true).shape() == (mx::Shape{rows, 1}));
  });
}

BOOST_AUTO_TEST_CASE(large_3d_middle_axis) {
  // (40, 5000, 3) along axis 1: outer, length and inner all above 1.
  const std::int64_t outer = 40, length = 5000, inner = 3;
  const std::vector<float> v = uniform_floats(static_cast<std::size_t>(outer * length * inner), 4);
  const Values x_values(v.begin(), v.end());
  const Values sums = reference(Op::sum, x_values, outer, length, inner);
  const Values argminima = reference(Op::argmin, x_values, outer, length, inner);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array(v, {outer, length, inner}, ctx);
    BOOST_TEST(x.sum(1).shape() == (mx::Shape{40, 3}));
    // float32 sums of 5000 values in order: about sqrt(5000) * 6e-8 ~ 4e-6 relative.
    BOOST_TEST(values(x.sum(1)) == sums, tt::tolerance(3e-5) << tt::per_element());
    BOOST_TEST(values(x.argmin(-2)) == argminima, tt::per_element());
  });
}

BOOST_AUTO_TEST_SUITE_END()
