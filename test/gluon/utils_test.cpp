// gluon::utils::split_data and split_and_load against MXNet's rules: even and uneven splits, other
// axes, views versus copies, one slice per context, and the errors.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
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
