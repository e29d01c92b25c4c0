// Elementwise ops: arithmetic with NumPy broadcasting and scalars, in-place updates, unary math,
// power/maximum/minimum and comparison masks, in every dtype where they apply. Every case runs on
// every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;
using ndg_test::dtype_of;
using ndg_test::kAllDTypes;
using ndg_test::kFloatDTypes;
using ndg_test::values;

namespace {


// Relative tolerance for results computed in dt.
double tolerance_for(DType dt) { return dt == DType::float32 ? 2e-6 : 1e-13; }

// n values, element i = f(i).
Values generate(std::int64_t n, const std::function<double(std::int64_t)>& f) {
  Values v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = f(i);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(elementwise)

// ---- arithmetic -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(arithmetic_of_same_shapes_in_every_dtype) {
  // Values whose sums, differences, products and quotients are exact in every dtype.
  const Values a{8, 6, 9, 20, 12, 7}, b{2, 3, 3, 4, 6, 7};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : kAllDTypes) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray x = nd::array(a, {2, 3}, ctx, dt), y = nd::array(b, {2, 3}, ctx, dt);
        const nd::NDArray sum = x + y;
        BOOST_TEST(sum.shape() == (mx::Shape{2, 3}));
        BOOST_TEST(dtype_of(sum) == mx::dtype_name(dt));
        BOOST_TEST(sum.context() == ctx);
        BOOST_TEST(values(sum) == (Values{10, 9, 12, 24, 18, 14}), tt::per_element());
        BOOST_TEST(values(x - y) == (Values{6, 3, 6, 16, 6, 0}), tt::per_element());
        BOOST_TEST(values(x * y) == (Values{16, 18, 27, 80, 72, 49}), tt::per_element());
        BOOST_TEST(values(x / y) == (Values{4, 2, 3, 5, 2, 1}), tt::per_element());
        // The named functions are the operators.
        BOOST_TEST(values(nd::add(x, y)) == values(sum), tt::per_element());
        BOOST_TEST(values(nd::subtract(x, y)) == values(x - y), tt::per_element());
        BOOST_TEST(values(nd::multiply(x, y)) == values(x * y), tt::per_element());
        BOOST_TEST(values(nd::divide(x, y)) == values(x / y), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(float_arithmetic_matches_a_double_reference) {
  const Values a{1.5, -2.25, 3.1, 1e-3, 7, -0.4}, b{3, 0.7, -1.3, 2e3, 0.1, 9};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : kFloatDTypes) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray x = nd::array(a, {3, 2}, ctx, dt), y = nd::array(b, {3, 2}, ctx, dt);
        // The reference uses the inputs as rounded to dt.
        const Values xa = values(x), yb = values(y);
        Values sum, difference, product, quotient;
        for (std::size_t i = 0; i < xa.size(); ++i) {
          sum.push_back(xa[i] + yb[i]);
          difference.push_back(xa[i] - yb[i]);
          product.push_back(xa[i] * yb[i]);
          quotient.push_back(xa[i] / yb[i]);
        }
        const double tol = tolerance_for(dt);
        BOOST_TEST(values(x + y) == sum, tt::tolerance(tol) << tt::per_element());
        BOOST_TEST(values(x - y) == difference, tt::tolerance(tol) << tt::per_element());
        BOOST_TEST(values(x * y) == product, tt::tolerance(tol) << tt::per_element());
        BOOST_TEST(values(x / y) == quotient, tt::tolerance(tol) << tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(float64_keeps_double_precision) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // 1 + 1e-10 is 1 in float32; float64 must keep it.
    const nd::NDArray x = nd::array({1e-10}, ctx, DType::float64);
    const nd::NDArray one = nd::ones({1}, ctx, DType::float64);
    BOOST_TEST((x + one).asscalar<double>() - 1.0 == 1e-10, tt::tolerance(1e-5));
    BOOST_TEST((x + 1.0).asscalar<double>() - 1.0 == 1e-10, tt::tolerance(1e-5));
    BOOST_TEST((one / 3.0).asscalar<double>() == 1.0 / 3.0);
  });
}

BOOST_AUTO_TEST_CASE(float_division_by_zero_is_ieee) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const Values q = values(nd::array({1, -1, 0}, ctx) / nd::zeros({3}, ctx));
    BOOST_TEST(q[0] == std::numeric_limits<double>::infinity());
    BOOST_TEST(q[1] == -std::numeric_limits<double>::infinity());
    BOOST_TEST(std::isnan(q[2]));
  });
}

// ---- broadcasting -----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(broadcast_a_row_over_a_matrix) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray m = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    const nd::NDArray row = nd::array({10, 20, 30}, ctx);
    const nd::NDArray sum = m + row;  // (2, 3) + (3,)
    BOOST_TEST(sum.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(values(sum) == (Values{11, 22, 33, 14, 25, 36}), tt::per_element());
    // The broadcast operand may be on either side.
    BOOST_TEST(values(row - m) == (Values{9, 18, 27, 6, 15, 24}), tt::per_element());
    BOOST_TEST(values(m * row) == (Values{10, 40, 90, 40, 100, 180}), tt::per_element());
    BOOST_TEST(values(row / m) == (Values{10, 10, 10, 2.5, 4, 5}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(broadcast_a_column_against_a_row) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray column = nd::array({1, 2}, ctx).reshape({2, 1});
    const nd::NDArray row = nd::array({{10, 20, 30}}, ctx);       // (1, 3)
    const nd::NDArray sum = column + row;
    BOOST_TEST(sum.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(values(sum) == (Values{11, 21, 31, 12, 22, 32}), tt::per_element());
    const nd::NDArray difference = row - column;
    BOOST_TEST(difference.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(values(difference) == (Values{9, 19, 29, 8, 18, 28}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(broadcast_across_ranks) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // (4, 1, 3) + (2, 3) -> (4, 2, 3): out[i, j, k] = a[i, 0, k] + b[j, k].
    const nd::NDArray a = nd::arange(12, ctx).reshape({4, 1, 3});
    const nd::NDArray b = nd::arange(6, ctx).reshape({2, 3}) * 100.0;
    const nd::NDArray sum = a + b;
    BOOST_TEST(sum.shape() == (mx::Shape{4, 2, 3}));
    Values expected;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k) expected.push_back((i * 3 + k) + 100.0 * (j * 3 + k));
    BOOST_TEST(values(sum) == expected, tt::per_element());
    BOOST_TEST(values(b + a) == expected, tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(broadcast_both_operands_in_3d) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // (2, 1, 3) / (1, 4, 1) -> (2, 4, 3): out[i, j, k] = a[i, 0, k] / b[0, j, 0].
    const nd::NDArray a = (nd::arange(6, ctx) + 1.0).reshape({2, 1, 3});
    const nd::NDArray b = (nd::arange(4, ctx) + 1.0).reshape({1, 4, 1});
    const nd::NDArray q = a / b;
    BOOST_TEST(q.shape() == (mx::Shape{2, 4, 3}));
    Values expected;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 3; ++k) expected.push_back((i * 3 + k + 1) / (j + 1.0));
    BOOST_TEST(values(q) == expected, tt::tolerance(1e-6) << tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(broadcast_an_element_and_integer_dtypes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray m = nd::array({{1, 2}, {3, 4}}, ctx, DType::int32);
    const nd::NDArray one = nd::array({5}, ctx, DType::int32);  // (1,)
    BOOST_TEST(values(m * one) == (Values{5, 10, 15, 20}), tt::per_element());
    BOOST_TEST((one - m).shape() == (mx::Shape{2, 2}));
    BOOST_TEST(values(one - m) == (Values{4, 3, 2, 1}), tt::per_element());
    const nd::NDArray column = nd::array({10, 20}, ctx, DType::uint8).reshape({2, 1});
    const nd::NDArray row = nd::array({1, 2, 3}, ctx, DType::uint8);
    BOOST_TEST(values(column + row) == (Values{11, 12, 13, 21, 22, 23}), tt::per_element());
    BOOST_TEST(dtype_of(column + row) == "uint8");
  });
}

BOOST_AUTO_TEST_CASE(broadcast_over_a_large_matrix) {
  // Large enough for the parallel CPU path and many GPU blocks.
  const std::int64_t rows = 300, cols = 257;
  ndg_test::for_each_context([&](mx::Context ctx) {
    const Values m = generate(rows * cols, [](std::int64_t i) { return static_cast<double>(i % 1000); });
    const Values c = generate(cols, [](std::int64_t j) { return static_cast<double>(3 * j); });
    const Values r = generate(rows, [](std::int64_t i) { return static_cast<double>(-i); });
    const nd::NDArray x = nd::array(m, {rows, cols}, ctx, DType::float64);
    const nd::NDArray per_column = nd::array(c, {cols}, ctx, DType::float64);
    const nd::NDArray per_row = nd::array(r, {rows, 1}, ctx, DType::float64);
    const nd::NDArray out = x * per_column + per_row;
    Values expected(m.size());
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) {
        const auto k = static_cast<std::size_t>(i * cols + j);
        expected[k] = m[k] * c[static_cast<std::size_t>(j)] + r[static_cast<std::size_t>(i)];
      }
    BOOST_TEST(out.shape() == (mx::Shape{rows, cols}));
    BOOST_TEST(values(out) == expected, tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(incompatible_shapes_do_not_broadcast) {
  ndg_test::for_each_context([](mx::Context ctx) {
    NDG_CHECK_THROWS_WITH(nd::ones({2, 3}, ctx) + nd::ones({2}, ctx), mx::ShapeError, "add", "(2, 3)", "(2,)");
    NDG_CHECK_THROWS_WITH(nd::ones({4, 1, 3}, ctx) * nd::ones({2, 2}, ctx), mx::ShapeError, "multiply");
  });
}

// ---- scalars ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(scalar_on_either_side) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({1, 2, 4}, ctx);
    BOOST_TEST(values(x + 2) == (Values{3, 4, 6}), tt::per_element());
    BOOST_TEST(values(2 + x) == (Values{3, 4, 6}), tt::per_element());
    BOOST_TEST(values(x - 2) == (Values{-1, 0, 2}), tt::per_element());
    BOOST_TEST(values(2 - x) == (Values{1, 0, -2}), tt::per_element());
    BOOST_TEST(values(x * 3) == (Values{3, 6, 12}), tt::per_element());
    BOOST_TEST(values(3 * x) == (Values{3, 6, 12}), tt::per_element());
    BOOST_TEST(values(x / 2) == (Values{0.5, 1, 2}), tt::per_element());
    BOOST_TEST(values(2 / x) == (Values{2, 1, 0.5}), tt::per_element());
    BOOST_TEST(values(nd::subtract(10, x)) == (Values{9, 8, 6}), tt::per_element());
    BOOST_TEST(values(nd::divide(x, 4)) == (Values{0.25, 0.5, 1}), tt::per_element());
    const nd::NDArray y = x * 2;
    BOOST_TEST(y.shape() == x.shape());
    BOOST_TEST(y.context() == ctx);
    BOOST_TEST(values(x) == (Values{1, 2, 4}), tt::per_element());  // x is untouched
  });
}

BOOST_AUTO_TEST_CASE(scalar_arithmetic_in_every_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : kAllDTypes) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray x = nd::array({4, 6, 10}, ctx, dt);
        BOOST_TEST(dtype_of(x * 2) == mx::dtype_name(dt));
        BOOST_TEST(values(x + 5) == (Values{9, 11, 15}), tt::per_element());
        BOOST_TEST(values(x - 4) == (Values{0, 2, 6}), tt::per_element());
        BOOST_TEST(values(20 - x) == (Values{16, 14, 10}), tt::per_element());
        BOOST_TEST(values(x * 3) == (Values{12, 18, 30}), tt::per_element());
        BOOST_TEST(values(x / 2) == (Values{2, 3, 5}), tt::per_element());
        BOOST_TEST(values(60 / x) == (Values{15, 10, 6}), tt::per_element());
      }
    }
  });
}

// ---- integers ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(int32_division_truncates) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array({7, -7, 9, 5, 1}, ctx, DType::int32);
    const nd::NDArray b = nd::array({2, 2, 3, 0, 4}, ctx, DType::int32);
    // C truncation toward zero, as MXNet; integer division by zero gives 0 (functors.hpp).
    BOOST_TEST(a.asvector<std::int32_t>() == (std::vector<std::int32_t>{7, -7, 9, 5, 1}), tt::per_element());
    BOOST_TEST((a / b).asvector<std::int32_t>() == (std::vector<std::int32_t>{3, -3, 3, 0, 0}),
               tt::per_element());
    BOOST_TEST(values(a / 2) == (Values{3, -3, 4, 2, 0}), tt::per_element());
    BOOST_TEST(values(10 / b) == (Values{5, 5, 3, 0, 2}), tt::per_element());
    BOOST_TEST(dtype_of(a / b) == "int32");
  });
}

BOOST_AUTO_TEST_CASE(int64_holds_values_beyond_int32) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::int64_t big = 3000000000;  // > 2^31
    const nd::NDArray x = nd::array(std::vector<std::int64_t>{big, -big}, {2}, ctx);
    BOOST_TEST((x + x).asvector<std::int64_t>() == (std::vector<std::int64_t>{2 * big, -2 * big}),
               tt::per_element());
    BOOST_TEST((x * 3).asvector<std::int64_t>() == (std::vector<std::int64_t>{3 * big, -3 * big}),
               tt::per_element());
    BOOST_TEST((x / 7).asvector<std::int64_t>() == (std::vector<std::int64_t>{big / 7, -big / 7}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(uint8_wraps_modulo_256) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::array({200, 5, 200, 250}, ctx, DType::uint8);
    const nd::NDArray b = nd::array({100, 10, 2, 7}, ctx, DType::uint8);
    BOOST_TEST(values(a + b) == (Values{44, 15, 202, 1}), tt::per_element());      // 300 - 256, 257 - 256
    BOOST_TEST(values(a - b) == (Values{100, 251, 198, 243}), tt::per_element());  // 5 - 10 + 256
    BOOST_TEST(values(a * b) == (Values{32, 50, 144, 214}), tt::per_element());    // 20000 % 256, ...
    BOOST_TEST(values(a / b) == (Values{2, 0, 100, 35}), tt::per_element());
    BOOST_TEST(values(a - 10) == (Values{190, 251, 190, 240}), tt::per_element());
    BOOST_TEST(dtype_of(a + b) == "uint8");
  });
}

// ---- in place ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(in_place_with_an_array) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2, 3, 4}, ctx);
    const nd::NDArray y = nd::array({4, 3, 2, 1}, ctx);
    x += y;
    BOOST_TEST(values(x) == (Values{5, 5, 5, 5}), tt::per_element());
    x *= y;
    BOOST_TEST(values(x) == (Values{20, 15, 10, 5}), tt::per_element());
    x -= y;
    BOOST_TEST(values(x) == (Values{16, 12, 8, 4}), tt::per_element());
    x /= y;
    BOOST_TEST(values(x) == (Values{4, 4, 4, 4}), tt::per_element());
    BOOST_TEST(values(y) == (Values{4, 3, 2, 1}), tt::per_element());  // rhs unchanged
    // The operand may be the array itself.
    x *= x;
    BOOST_TEST(values(x) == (Values{16, 16, 16, 16}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(in_place_with_a_scalar) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2, 3}, ctx);
    x += 1;
    BOOST_TEST(values(x) == (Values{2, 3, 4}), tt::per_element());
    x *= 3;
    BOOST_TEST(values(x) == (Values{6, 9, 12}), tt::per_element());
    x -= 0.5;
    BOOST_TEST(values(x) == (Values{5.5, 8.5, 11.5}), tt::per_element());
    x /= 2;
    BOOST_TEST(values(x) == (Values{2.75, 4.25, 5.75}), tt::per_element());
    // Chained: each operator returns the array.
    (x += 1) *= 4;
    BOOST_TEST(values(x) == (Values{15, 21, 27}), tt::per_element());

    nd::NDArray i = nd::array({7, 9, -9}, ctx, DType::int32);
    i /= 2;
    BOOST_TEST(values(i) == (Values{3, 4, -4}), tt::per_element());
    i -= 5;
    BOOST_TEST(values(i) == (Values{-2, -1, -9}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(in_place_broadcasts_the_rhs) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    x += nd::array({10, 20, 30}, ctx);          // (3,)
    BOOST_TEST(values(x) == (Values{11, 22, 33, 14, 25, 36}), tt::per_element());
    x *= nd::array({1, -1}, ctx).reshape({2, 1});
    BOOST_TEST(values(x) == (Values{11, 22, 33, -14, -25, -36}), tt::per_element());
    x -= nd::array({1}, ctx);                   // (1,)
    BOOST_TEST(values(x) == (Values{10, 21, 32, -15, -26, -37}), tt::per_element());
    x /= nd::array({{2, 3, 4}}, ctx);           // (1, 3)
    BOOST_TEST(values(x) == (Values{5, 7, 8, -7.5, -26.0 / 3, -9.25}),
               tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(x.shape() == (mx::Shape{2, 3}));
    // The result must keep the lhs shape.
    nd::NDArray row = nd::array({1, 2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(row += nd::ones({2, 3}, ctx), mx::ShapeError, "(3,)", "(2, 3)");
  });
}

BOOST_AUTO_TEST_CASE(in_place_writes_are_seen_by_every_handle) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray x = nd::array({1, 2, 3, 4}, ctx);
    const nd::NDArray alias = x;               // a copy of the handle shares the storage
    nd::NDArray reshaped = x.reshape({2, 2});  // so does a reshape
    x += 10;
    BOOST_TEST(values(alias) == (Values{11, 12, 13, 14}), tt::per_element());
    reshaped *= nd::array({1, -1}, ctx);
    BOOST_TEST(values(x) == (Values{11, -12, 13, -14}), tt::per_element());
    BOOST_TEST(values(alias) == (Values{11, -12, 13, -14}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(in_place_on_a_view_changes_only_its_elements) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray m = nd::array({{1, 2}, {3, 4}, {5, 6}}, ctx);
    nd::NDArray row = m[1];
    row += 100;
    BOOST_TEST(values(m) == (Values{1, 2, 103, 104, 5, 6}), tt::per_element());
    nd::NDArray tail = m.slice(1, 3);
    tail /= nd::array({2, 4}, ctx);
    BOOST_TEST(values(m) == (Values{1, 2, 51.5, 26, 2.5, 1.5}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(in_place_with_an_overlapping_rhs_reads_it_before_writing) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // x += x[0]: the rhs is x's first row, broadcast; NumPy gives every element 1 + 1.
    nd::NDArray x = nd::ones({2, 2}, ctx);
    x += x[0];
    BOOST_TEST(values(x) == (Values{2, 2, 2, 2}), tt::per_element());
    // Shifted views of one vector: t = v[1:3], t += v[0:2] gives [1, 2 + 1, 3 + 2].
    nd::NDArray v = nd::array({1, 2, 3}, ctx);
    nd::NDArray t = v.slice(1, 3);
    t += v.slice(0, 2);
    BOOST_TEST(values(v) == (Values{1, 3, 5}), tt::per_element());
    // The same view on both sides is element for element: no copy is needed, and the result is 2x.
    nd::NDArray w = nd::array({1, 2, 3}, ctx);
    w *= w.reshape({3});
    BOOST_TEST(values(w) == (Values{1, 4, 9}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(shares_memory_tells_overlapping_views) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray m = nd::zeros({3, 2}, ctx);
    BOOST_TEST(m.shares_memory(m));
    BOOST_TEST(m.shares_memory(m[1]));
    BOOST_TEST(m.slice(0, 2).shares_memory(m.slice(1, 3)));
    BOOST_TEST(!m[0].shares_memory(m[1]));        // adjacent rows touch but do not overlap
    BOOST_TEST(!m.shares_memory(m.copy()));
    BOOST_TEST(!m.shares_memory(nd::zeros({3, 2}, ctx)));
    BOOST_TEST(!m.shares_memory(nd::NDArray()));
  });
}

// ---- unary ------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(unary_math_matches_std) {
  const Values input{-3, -0.5, 0, 0.25, 1, 2.5};
  const Values positive{0.01, 0.25, 1, 2, 9, 1e4};
  struct Case {
    const char* name;
    nd::NDArray (*op)(const nd::NDArray&);
    double (*reference)(double);
    bool needs_positive;
  };
  const Case cases[] = {
      {"negative", nd::negative, [](double v) { return -v; }, false},
      {"abs", nd::abs, [](double v) { return std::fabs(v); }, false},
      {"square", nd::square, [](double v) { return v * v; }, false},
      {"relu", nd::relu, [](double v) { return v > 0 ? v : 0.0; }, false},
      {"sigmoid", nd::sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }, false},
      {"tanh", nd::tanh, [](double v) { return std::tanh(v); }, false},
      {"softrelu", nd::softrelu, [](double v) { return std::log1p(std::exp(v)); }, false},
      {"sign", nd::sign, [](double v) { return double((v > 0) - (v < 0)); }, false},
      {"exp", nd::exp, [](double v) { return std::exp(v); }, false},
      {"sqrt", nd::sqrt, [](double v) { return std::sqrt(v); }, true},
      {"log", nd::log, [](double v) { return std::log(v); }, true},
      {"erf", nd::erf, [](double v) { return std::erf(v); }, false},
      // The exact (erf) GELU, as MXNet's LeakyReLU(act_type='gelu') and torch's gelu.
      {"gelu", nd::gelu, [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }, false},
  };
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : kFloatDTypes) {
      for (const Case& c : cases) {
        BOOST_TEST_CONTEXT(c.name << " in " << mx::dtype_name(dt)) {
          const nd::NDArray x = nd::array(c.needs_positive ? positive : input, {2, 3}, ctx, dt);
          const nd::NDArray y = c.op(x);
          BOOST_TEST(y.shape() == (mx::Shape{2, 3}));
          BOOST_TEST(dtype_of(y) == mx::dtype_name(dt));
          BOOST_TEST(y.context() == ctx);
          Values expected = values(x);  // the inputs as rounded to dt
          for (double& v : expected) v = c.reference(v);
          BOOST_TEST(values(y) == expected, tt::tolerance(tolerance_for(dt)) << tt::per_element());
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(unary_methods_are_the_functions) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({0.5, 1, 4}, ctx);
    const nd::NDArray n = nd::array({-1, 0, 2}, ctx);
    BOOST_TEST(values(x.exp()) == (Values{1.6487213, 2.7182818, 54.598150}), tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(values(x.log()) == (Values{-0.69314718, 0, 1.3862944}), tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(values(x.sqrt()) == (Values{std::sqrt(0.5f), 1, 2}), tt::tolerance(1e-7) << tt::per_element());
    BOOST_TEST(values(n.abs()) == (Values{1, 0, 2}), tt::per_element());
    BOOST_TEST(values(n.square()) == (Values{1, 0, 4}), tt::per_element());
    BOOST_TEST(values(n.relu()) == (Values{0, 0, 2}), tt::per_element());
    BOOST_TEST(values(n.sigmoid()) == (Values{0.26894142, 0.5, 0.88079708}), tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(values(n.tanh()) == (Values{-0.76159416, 0, 0.96402758}), tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(values(-n) == (Values{1, 0, -2}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(unary_math_at_the_extremes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({-30, -10, 30, 100}, ctx);
    // softrelu(x) = log(1 + e^x): ~e^x for very negative x, ~x for large x without overflowing
    // (e^100 is inf in float32).
    BOOST_TEST(values(nd::softrelu(x)) ==
                   (Values{std::log1p(std::exp(-30.0)), std::log1p(std::exp(-10.0)), 30, 100}),
               tt::tolerance(1e-5) << tt::per_element());
    BOOST_TEST(values(nd::sigmoid(x)) == (Values{1 / (1 + std::exp(30.0)), 1 / (1 + std::exp(10.0)), 1, 1}),
               tt::tolerance(1e-5) << tt::per_element());
    BOOST_TEST(values(nd::tanh(x)) == (Values{-1, -1, 1, 1}), tt::per_element());
    const Values logs = values(nd::log(nd::array({0, -1}, ctx)));
    BOOST_TEST(logs[0] == -std::numeric_limits<double>::infinity());
    BOOST_TEST(std::isnan(logs[1]));
    BOOST_TEST(values(nd::exp(nd::array({100}, ctx)))[0] == std::numeric_limits<double>::infinity());
  });
}

BOOST_AUTO_TEST_CASE(integer_unary_ops) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : {DType::int32, DType::int64}) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray x = nd::array({-3, 0, 4}, ctx, dt);
        BOOST_TEST(dtype_of(nd::abs(x)) == mx::dtype_name(dt));
        BOOST_TEST(values(nd::abs(x)) == (Values{3, 0, 4}), tt::per_element());
        BOOST_TEST(values(nd::negative(x)) == (Values{3, 0, -4}), tt::per_element());
        BOOST_TEST(values(nd::square(x)) == (Values{9, 0, 16}), tt::per_element());
        BOOST_TEST(values(nd::relu(x)) == (Values{0, 0, 4}), tt::per_element());
        BOOST_TEST(values(nd::sign(x)) == (Values{-1, 0, 1}), tt::per_element());
      }
    }
    const nd::NDArray u = nd::array({0, 5, 255}, ctx, DType::uint8);
    BOOST_TEST(values(nd::abs(u)) == (Values{0, 5, 255}), tt::per_element());
    BOOST_TEST(values(nd::sign(u)) == (Values{0, 1, 1}), tt::per_element());
    BOOST_TEST(values(nd::relu(u)) == (Values{0, 5, 255}), tt::per_element());
    BOOST_TEST(values(nd::square(u)) == (Values{0, 25, 1}), tt::per_element());  // 255² mod 256
    // Transcendental functions need a floating dtype.
    NDG_CHECK_THROWS_WITH(nd::exp(nd::array({1}, ctx, DType::int32)), mx::DTypeError, "exp", "int32");
  });
}

// ---- power, maximum, minimum ------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(power_and_pow) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray base = nd::array({2, 3, 4, 9}, ctx);
    const nd::NDArray exponent = nd::array({3, 2, 0.5, -1}, ctx);
    BOOST_TEST(values(nd::power(base, exponent)) == (Values{8, 9, 2, 1.0 / 9}),
               tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(values(nd::pow(base, 2)) == (Values{4, 9, 16, 81}), tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(values(nd::power(base, 2)) == (Values{4, 9, 16, 81}), tt::tolerance(1e-6) << tt::per_element());
    BOOST_TEST(values(nd::power(2, exponent)) == (Values{8, 4, std::sqrt(2.0), 0.5}),
               tt::tolerance(1e-6) << tt::per_element());
    // Broadcasting: (2, 1) ** (3,) -> (2, 3).
    const nd::NDArray p = nd::pow(nd::array({2, 3}, ctx).reshape({2, 1}), nd::array({0, 1, 2}, ctx));
    BOOST_TEST(p.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(values(p) == (Values{1, 2, 4, 1, 3, 9}), tt::tolerance(1e-6) << tt::per_element());
    // float64 and integers.
    BOOST_TEST(nd::power(nd::array({2}, ctx, DType::float64), 0.5).asscalar<double>() == std::sqrt(2.0),
               tt::tolerance(1e-15));
    const nd::NDArray i =
        nd::power(nd::array({2, 3, -2}, ctx, DType::int32), nd::array({10, 3, 3}, ctx, DType::int32));
    BOOST_TEST(dtype_of(i) == "int32");
    BOOST_TEST(values(i) == (Values{1024, 27, -8}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(maximum_and_minimum) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : kAllDTypes) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray a = nd::array({1, 7, 3, 5}, ctx, dt);
        const nd::NDArray b = nd::array({4, 2, 3, 6}, ctx, dt);
        BOOST_TEST(values(nd::maximum(a, b)) == (Values{4, 7, 3, 6}), tt::per_element());
        BOOST_TEST(values(nd::minimum(a, b)) == (Values{1, 2, 3, 5}), tt::per_element());
        BOOST_TEST(values(nd::maximum(a, 4)) == (Values{4, 7, 4, 5}), tt::per_element());
        BOOST_TEST(values(nd::maximum(4, a)) == (Values{4, 7, 4, 5}), tt::per_element());
        BOOST_TEST(values(nd::minimum(a, 4)) == (Values{1, 4, 3, 4}), tt::per_element());
        BOOST_TEST(values(nd::minimum(4, a)) == (Values{1, 4, 3, 4}), tt::per_element());
        BOOST_TEST(dtype_of(nd::maximum(a, b)) == mx::dtype_name(dt));
      }
    }
    // Broadcasting: (2, 2) against (2,).
    const nd::NDArray m = nd::array({{-1, 5}, {3, 0}}, ctx);
    BOOST_TEST(values(nd::maximum(m, nd::array({0, 4}, ctx))) == (Values{0, 5, 3, 4}), tt::per_element());
    BOOST_TEST(values(nd::minimum(nd::array({0, 4}, ctx), m)) == (Values{-1, 4, 0, 0}), tt::per_element());
  });
}

// ---- comparisons ------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(comparisons_give_masks_in_every_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dt : kAllDTypes) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray a = nd::array({1, 2, 3}, ctx, dt);
        const nd::NDArray b = nd::array({3, 2, 1}, ctx, dt);
        BOOST_TEST(dtype_of(a == b) == mx::dtype_name(dt));  // masks have the operands' dtype, as MXNet
        BOOST_TEST(values(a == b) == (Values{0, 1, 0}), tt::per_element());
        BOOST_TEST(values(a != b) == (Values{1, 0, 1}), tt::per_element());
        BOOST_TEST(values(a > b) == (Values{0, 0, 1}), tt::per_element());
        BOOST_TEST(values(a >= b) == (Values{0, 1, 1}), tt::per_element());
        BOOST_TEST(values(a < b) == (Values{1, 0, 0}), tt::per_element());
        BOOST_TEST(values(a <= b) == (Values{1, 1, 0}), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(comparison_functions_scalars_and_broadcasting) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array({1, 2, 3}, ctx);
    BOOST_TEST(values(nd::equal(x, 2)) == (Values{0, 1, 0}), tt::per_element());
    BOOST_TEST(values(nd::not_equal(x, 2)) == (Values{1, 0, 1}), tt::per_element());
    BOOST_TEST(values(nd::greater(x, 2)) == (Values{0, 0, 1}), tt::per_element());
    BOOST_TEST(values(nd::greater_equal(x, 2)) == (Values{0, 1, 1}), tt::per_element());
    BOOST_TEST(values(nd::lesser(x, 2)) == (Values{1, 0, 0}), tt::per_element());
    BOOST_TEST(values(nd::lesser_equal(x, 2)) == (Values{1, 1, 0}), tt::per_element());
    // The scalar on the left: 2 > x.
    BOOST_TEST(values(2 > x) == (Values{1, 0, 0}), tt::per_element());
    BOOST_TEST(values(2 <= x) == (Values{0, 1, 1}), tt::per_element());
    BOOST_TEST(values(x == 3) == (Values{0, 0, 1}), tt::per_element());
    // (2, 1) > (1, 3) -> (2, 3).
    const nd::NDArray mask = nd::array({1, 3}, ctx).reshape({2, 1}) > nd::array({{0, 2, 4}}, ctx);
    BOOST_TEST(mask.shape() == (mx::Shape{2, 3}));
    BOOST_TEST(values(mask) == (Values{1, 0, 0, 1, 1, 0}), tt::per_element());
    // A mask selects by multiplication: the elements greater than 1, others zeroed.
    BOOST_TEST(values(x * (x > 1)) == (Values{0, 2, 3}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(nan_compares_unequal) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const nd::NDArray x = nd::array(std::vector<float>{nan, 1}, {2}, ctx);
    BOOST_TEST(values(x == x) == (Values{0, 1}), tt::per_element());
    BOOST_TEST(values(x != x) == (Values{1, 0}), tt::per_element());
    BOOST_TEST(values(x > 0) == (Values{0, 1}), tt::per_element());
  });
}

// ---- sizes and layouts ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(large_and_odd_sized_arrays) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // 2^20 elements (parallel on the CPU, packed on GPUs) and 1001 (a ragged tail).
    for (const std::int64_t n : {std::int64_t{1} << 20, std::int64_t{1001}}) {
      BOOST_TEST_CONTEXT(n << " elements") {
        const nd::NDArray x = nd::arange(static_cast<double>(n), ctx, DType::float64);
        const nd::NDArray y = nd::arange(static_cast<double>(n), ctx, DType::float64) * -0.5;
        const Values out = values(x * 2 + 1 + y);
        bool all_equal = out.size() == static_cast<std::size_t>(n);
        for (std::int64_t i = 0; all_equal && i < n; ++i) {
          all_equal = out[static_cast<std::size_t>(i)] == 1.5 * static_cast<double>(i) + 1;
        }
        BOOST_TEST(all_equal);
        const Values s = values(nd::sqrt(x));
        bool all_roots = s.size() == static_cast<std::size_t>(n);
        for (std::int64_t i = 0; all_roots && i < n; ++i) {
          all_roots = s[static_cast<std::size_t>(i)] == std::sqrt(static_cast<double>(i));  // sqrt is exact in IEEE
        }
        BOOST_TEST(all_roots);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(ops_on_views_with_unaligned_offsets) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // slice(1, ...) starts 4 bytes into the storage.
    const nd::NDArray x = nd::arange(1027, ctx);
    const nd::NDArray a = x.slice(1, 1027), b = x.slice(0, 1026);
    Values a_values(1026), negated(1026), plus_one(1026), halves(1026);
    for (std::size_t i = 0; i < 1026; ++i) {
      a_values[i] = static_cast<double>(i + 1);
      negated[i] = -a_values[i];
      plus_one[i] = a_values[i] + 1;
      halves[i] = a_values[i] * 0.5;
    }
    BOOST_TEST(values(a - b) == Values(1026, 1.0), tt::per_element());
    BOOST_TEST(values(nd::negative(a)) == negated, tt::per_element());   // a unary op on the view itself
    BOOST_TEST(values(nd::square(a).sqrt()) == a_values, tt::per_element());
    BOOST_TEST(values(a + 1) == plus_one, tt::per_element());
    BOOST_TEST(values(a * 0.5) == halves, tt::per_element());
  });
}

BOOST_AUTO_TEST_SUITE_END()
