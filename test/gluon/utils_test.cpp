// gluon::utils::split_data and split_and_load against MXNet's rules: even and uneven splits, other
// axes, views versus copies, one slice per context, and the errors; clip_global_norm against norms
// worked out by hand, on every context, with MXNet's non-finite behaviour and the errors.
#include "test/support/boost_test.hpp"
#include "test/support/arrays.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include <gluon/utils.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace utils = mx::gluon::utils;
namespace tt = boost::test_tools;

namespace {

// (rows, cols) holding 0, 1, 2, ... row by row.
nd::NDArray counting(std::int64_t rows, std::int64_t cols, mx::Context ctx) {
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  std::iota(v.begin(), v.end(), 0.0);
  return nd::array(v, {rows, cols}, ctx);
}

std::vector<double> range(double begin, double end) {
  std::vector<double> v;
  for (double x = begin; x < end; ++x) v.push_back(x);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(utils_split)

BOOST_AUTO_TEST_CASE(even_split_along_the_batch_axis_gives_views) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = counting(6, 2, ctx);
    const std::vector<nd::NDArray> parts = utils::split_data(x, 3);
    BOOST_TEST_REQUIRE(parts.size() == 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      BOOST_TEST(parts[i].shape() == mx::Shape({2, 2}));
      BOOST_TEST(parts[i].context() == ctx);
      BOOST_TEST(parts[i].asvector<double>() == range(4.0 * i, 4.0 * i + 4), tt::per_element());
    }
    nd::NDArray first = parts[0];
    first.fill(-1);  // a view: the batch sees it
    BOOST_TEST(x[0].asvector<double>() == std::vector<double>({-1, -1}), tt::per_element());
    BOOST_TEST(utils::split_data(x, 1)[0].is(x));
  });
}

BOOST_AUTO_TEST_CASE(uneven_split_gives_the_first_slices_one_more_row) {
  // MXNet: size 7 in 3 slices -> 3, 2, 2.
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::vector<nd::NDArray> parts = utils::split_data(counting(7, 1, ctx), 3, 0, false);
    BOOST_TEST_REQUIRE(parts.size() == 3u);
    BOOST_TEST(parts[0].asvector<double>() == range(0, 3), tt::per_element());
    BOOST_TEST(parts[1].asvector<double>() == range(3, 5), tt::per_element());
    BOOST_TEST(parts[2].asvector<double>() == range(5, 7), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(split_along_another_axis_copies_columns) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const std::vector<nd::NDArray> parts = utils::split_data(counting(2, 4, ctx), 2, 1);
    BOOST_TEST_REQUIRE(parts.size() == 2u);
    BOOST_TEST(parts[0].shape() == mx::Shape({2, 2}));
    BOOST_TEST(parts[0].asvector<double>() == std::vector<double>({0, 1, 4, 5}), tt::per_element());
    BOOST_TEST(parts[1].asvector<double>() == std::vector<double>({2, 3, 6, 7}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(split_errors_name_the_shape_and_the_arguments) {
  const nd::NDArray x = counting(5, 2, mx::cpu());
  NDG_CHECK_THROWS_WITH(utils::split_data(x, 2), mx::ValueError, "(5, 2)", "num_slice=2", "evenly",
                        "even_split=false");
  NDG_CHECK_THROWS_WITH(utils::split_data(x, 6, 0, false), mx::ValueError, "too many slices", "(5, 2)", "num_slice=6");
  NDG_CHECK_THROWS_WITH(utils::split_data(x, 2, 2), mx::IndexError, "batch_axis=2", "(5, 2)");
  NDG_CHECK_THROWS_WITH(utils::split_data(x, 0), mx::ValueError, "num_slice must be at least 1");
  NDG_CHECK_THROWS_WITH(utils::split_and_load(x, {}), mx::ValueError, "ctx_list is empty");
  NDG_CHECK_THROWS_WITH(utils::split_and_load(x, {mx::cpu(), mx::cpu()}), mx::ValueError, "(5, 2)", "evenly");
}

BOOST_AUTO_TEST_CASE(split_and_load_puts_one_slice_on_each_context) {
  const std::vector<mx::Context> ctxs = ndg_test::all_contexts();
  const auto n = static_cast<std::int64_t>(ctxs.size());
  for (mx::Context source : ctxs) {
    BOOST_TEST_CONTEXT("batch on " << source.str()) {
      const nd::NDArray batch = counting(2 * n + 1, 3, source);
      const std::vector<nd::NDArray> parts = utils::split_and_load(batch, ctxs, 0, false);
      BOOST_TEST_REQUIRE(parts.size() == ctxs.size());
      double next = 0;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const double rows = i == 0 ? 3 : 2;  // 2n + 1 rows: the first slice has one more
        BOOST_TEST(parts[i].context() == ctxs[i]);
        BOOST_TEST(parts[i].shape() == mx::Shape({static_cast<std::int64_t>(rows), 3}));
        BOOST_TEST(parts[i].asvector<double>() == range(next, next + 3 * rows), tt::per_element());
        next += 3 * rows;
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(split_and_load_onto_one_context_moves_the_whole_batch) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray batch = counting(3, 2, mx::cpu());
    const std::vector<nd::NDArray> parts = utils::split_and_load(batch, {ctx});
    BOOST_TEST_REQUIRE(parts.size() == 1u);
    BOOST_TEST(parts[0].context() == ctx);
    BOOST_TEST(parts[0].is(batch) == (ctx == mx::cpu()));  // as_in_context: no copy when already there
    BOOST_TEST(parts[0].asvector<double>() == range(0, 6), tt::per_element());
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(utils_clip_global_norm)

// [3, 4] and [[12]]: 9 + 16 + 144 = 169, a norm of 13.
BOOST_AUTO_TEST_CASE(the_norm_of_all_arrays_together_and_the_scaling_above_max_norm) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({3, 4}, ctx), b = nd::array({{12}}, ctx);
    // Below max_norm: returned, nothing scaled.
    BOOST_TEST(utils::clip_global_norm({a, b}, 26) == 13.0);
    BOOST_TEST(a.asvector<double>() == std::vector<double>({3, 4}), tt::per_element());
    BOOST_TEST(utils::clip_global_norm({a, b}, 13) == 13.0);  // 13 / (13 + 1e-8) < 1: scaled by a hair
    ndg_test::check_close(a, {3, 4}, 1e-7, 0);
    // Above: every array scaled in place by 6.5 / 13 = 0.5.
    nd::NDArray c = nd::array({3, 4}, ctx), d = nd::array({{12}}, ctx);
    const nd::NDArray view = d;  // a handle to the same storage sees the scaling
    BOOST_TEST(utils::clip_global_norm({c, d}, 6.5) == 13.0);
    ndg_test::check_close(c, {1.5, 2}, 1e-6, 0);
    ndg_test::check_close(view, {6}, 1e-6, 0);
    // Now at max_norm.
    BOOST_TEST(utils::clip_global_norm({c, d}, 6.5) == 6.5, tt::tolerance(1e-6));
  });
}

// float64 [1, 2, 2] (9) and float16 [4] (16, summed in float32): 5. A transposed view (not
// contiguous) is scaled in its base.
BOOST_AUTO_TEST_CASE(mixed_dtypes_views_and_empty_arrays) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray wide = nd::array({1, 2, 2}, ctx, mx::DType::float64), half = nd::array({4}, ctx, mx::DType::float16);
    BOOST_TEST(utils::clip_global_norm({wide, half, nd::zeros({0}, ctx)}, 2.5) == 5.0);
    ndg_test::check_close(wide, {0.5, 1, 1}, 1e-7, 0);
    ndg_test::check_close(half, {2}, 1e-3, 0);
    // 300 in float16: its square (90000) is beyond float16's range, not beyond float32's.
    BOOST_TEST(utils::clip_global_norm({nd::array({300, 400}, ctx, mx::DType::float16)}, 1000) == 500.0);
    const nd::NDArray base = nd::array({{0, 3}, {4, 0}}, ctx);
    BOOST_TEST(utils::clip_global_norm({base.T()}, 1) == 5.0);
    ndg_test::check_close(base, {0, 0.6, 0.8, 0}, 1e-6, 0);
  });
}

// As MXNet: a warning, the norm returned, and the arrays scaled anyway: by 0 for an infinite norm,
// by nan for a nan one ("clipping results will be undefined").
BOOST_AUTO_TEST_CASE(a_norm_that_is_not_finite_is_returned_and_scales_as_mxnet) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  ndg_test::for_each_context([&](mx::Context ctx) {
    nd::NDArray a = nd::array({1, inf}, ctx), b = nd::array({2}, ctx);
    BOOST_TEST(std::isinf(utils::clip_global_norm({a, b}, 1)));
    const std::vector<double> got = a.asvector<double>();
    BOOST_TEST(got[0] == 0.0);
    BOOST_TEST(std::isnan(got[1]));
    BOOST_TEST(b.asvector<double>() == std::vector<double>({0}), tt::per_element());
    nd::NDArray c = nd::array({1, nan}, ctx);
    BOOST_TEST(std::isnan(utils::clip_global_norm({c}, 1, /*check_isfinite=*/false)));
    BOOST_TEST(std::isnan(c.asvector<double>()[0]));
  });
}

BOOST_AUTO_TEST_CASE(errors_are_typed_and_scale_nothing) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray a = nd::array({3, 4}, ctx);
    NDG_CHECK_THROWS_WITH(utils::clip_global_norm({}, 1), mx::ValueError, "clip_global_norm", "empty");
    NDG_CHECK_THROWS_WITH(utils::clip_global_norm({a}, 0), mx::ValueError, "max_norm", "0");
    NDG_CHECK_THROWS_WITH(utils::clip_global_norm({a}, std::nan("")), mx::ValueError, "max_norm", "nan");
    NDG_CHECK_THROWS_WITH(utils::clip_global_norm({a, nd::NDArray()}, 1), mx::ValueError, "clip_global_norm");
    NDG_CHECK_THROWS_WITH(utils::clip_global_norm({a, nd::array({1, 2}, ctx, mx::DType::int32)}, 1), mx::DTypeError,
                          "array 1", "int32");
    BOOST_TEST(a.asvector<double>() == std::vector<double>({3, 4}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(arrays_on_different_contexts_are_a_context_mismatch,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  nd::NDArray a = nd::array({3, 4}, mx::cpu()), b = nd::array({12}, mx::gpu(0));
  NDG_CHECK_THROWS_WITH(utils::clip_global_norm({a, b}, 1), mx::ContextMismatch, "array 1", "gpu(0)", "cpu(0)",
                        "allreduce_grads");
  BOOST_TEST(a.asvector<double>() == std::vector<double>({3, 4}), tt::per_element());
  BOOST_TEST(b.asvector<double>() == std::vector<double>({12}), tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
