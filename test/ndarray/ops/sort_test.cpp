// topk, sort and argsort (as mx.nd's): every ret_typ, both directions, along each axis and the
// flattened data, ties and NaN, every data and index dtype, on every context; long rows against
// std::stable_sort; the values' gradient; the errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;
using ndg_test::values;

namespace {

// MXNet's documentation example: x = [[0.3, 0.2, 0.4], [0.1, 0.3, 0.2]].
nd::NDArray doc_example(mx::Context ctx, DType dtype = DType::float32) {
  return nd::array({{0.3, 0.2, 0.4}, {0.1, 0.3, 0.2}}, ctx, dtype);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sort_ops)

BOOST_AUTO_TEST_CASE(topk_as_mxnet_documents_in_every_return_type) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = doc_example(ctx);
    // topk(x) = [[2], [1]]: the index of the largest per row, float32.
    const nd::NDArray top = nd::topk(x);
    BOOST_TEST(top.shape() == (mx::Shape{2, 1}));
    BOOST_TEST(top.dtype() == DType::float32);
    BOOST_TEST(values(top) == (Values{2, 1}), tt::per_element());
    // topk(x, axis=0, k=2) = [[0, 1, 0], [1, 0, 1]].
    BOOST_TEST(values(nd::topk(x, 0, 2)) == (Values{0, 1, 0, 1, 0, 1}), tt::per_element());
    // topk(x, k=2, ret_typ='value', is_ascend=1) = [[0.2, 0.3], [0.1, 0.2]].
    ndg_test::check_close(nd::topk(x, -1, 2, "value", true), {0.2, 0.3, 0.1, 0.2});
    // topk(x, axis=None, k=2, ret_typ='value') = [0.4, 0.3] (flattened); indices [2, 0].
    ndg_test::check_close(nd::topk(x, std::nullopt, 2, "value"), {0.4, 0.3});
    BOOST_TEST(values(nd::topk(x, std::nullopt, 3)) == (Values{2, 0, 4}), tt::per_element());
    // topk(x, k=2, ret_typ='mask', is_ascend=1) = [[1, 1, 0], [1, 0, 1]], in data's dtype.
    const nd::NDArray mask = nd::topk(x, -1, 2, "mask", true);
    BOOST_TEST(mask.shape() == x.shape());
    BOOST_TEST(mask.dtype() == DType::float32);
    BOOST_TEST(values(mask) == (Values{1, 1, 0, 1, 0, 1}), tt::per_element());
    // Both: values and indices.
    const std::vector<nd::NDArray> both = nd::topk_both(x, 1, 2, false, DType::int32);
    BOOST_TEST_REQUIRE(both.size() == 2u);
    ndg_test::check_close(both[0], {0.4, 0.3, 0.3, 0.2});
    BOOST_TEST(both[1].dtype() == DType::int32);
    BOOST_TEST(values(both[1]) == (Values{2, 0, 1, 2}), tt::per_element());
    // k < 1: every element.
    BOOST_TEST(values(nd::topk(x, -1, 0)) == (Values{2, 0, 1, 1, 2, 0}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(sort_and_argsort_in_both_directions_for_every_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kAllDTypes) {
      for (DType index_dtype : {DType::float32, DType::int32, DType::int64, DType::float64, DType::uint8}) {
        BOOST_TEST_CONTEXT(mx::dtype_name(dtype) << " indices " << mx::dtype_name(index_dtype)) {
          // [[3, 1, 2, 1], [0, 5, 4, 7]]: ties keep their order in either direction.
          const nd::NDArray x = nd::array({{3, 1, 2, 1}, {0, 5, 4, 7}}, ctx, dtype);
          const nd::NDArray up = nd::sort(x);
          BOOST_TEST(up.dtype() == dtype);
          BOOST_TEST(values(up) == (Values{1, 1, 2, 3, 0, 4, 5, 7}), tt::per_element());
          BOOST_TEST(values(nd::sort(x, -1, false)) == (Values{3, 2, 1, 1, 7, 5, 4, 0}), tt::per_element());
          const nd::NDArray order = nd::argsort(x, -1, true, index_dtype);
          BOOST_TEST(order.dtype() == index_dtype);
          BOOST_TEST(values(order) == (Values{1, 3, 2, 0, 0, 2, 1, 3}), tt::per_element());
          BOOST_TEST(values(nd::argsort(x, 1, false, index_dtype)) == (Values{0, 2, 1, 3, 3, 1, 2, 0}), tt::per_element());
          BOOST_TEST(values(nd::argsort(x, 0, true, index_dtype)) == (Values{1, 0, 0, 0, 0, 1, 1, 1}), tt::per_element());
          BOOST_TEST(values(nd::sort(x, std::nullopt)) == (Values{0, 1, 1, 2, 3, 4, 5, 7}), tt::per_element());
          BOOST_TEST(values(nd::topk(x, -1, 2, "indices", false, index_dtype)) == (Values{0, 2, 3, 1}), tt::per_element());
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(nan_sorts_above_every_number) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const double nan = std::nan("");
    const nd::NDArray x = nd::array({2, nan, -1, nan, 5}, ctx);
    BOOST_TEST(values(nd::argsort(x)) == (Values{2, 0, 4, 1, 3}), tt::per_element());
    BOOST_TEST(values(nd::argsort(x, -1, false)) == (Values{1, 3, 4, 0, 2}), tt::per_element());
    // -NaN (the sign bit set, as 0/0 gives on x86) sorts as NaN too.
    const nd::NDArray neg = nd::array({1, -nan, 0}, ctx);
    BOOST_TEST(values(nd::argsort(neg)) == (Values{2, 0, 1}), tt::per_element());
    BOOST_TEST(values(nd::topk(neg, -1, 1)) == (Values{1}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(long_rows_along_every_axis_match_a_stable_sort) {
  // (3, 700, 5) sorted along the middle axis, and (2, 2500) along the last, with ties (values
  // quantised to 50 levels).
  for (const auto& [shape, axis] : std::vector<std::pair<mx::Shape, int>>{{{3, 700, 5}, 1}, {{2, 2500}, 1}, {{2600}, 0}}) {
    Values v = ndg_test::uniform_values(static_cast<std::size_t>(shape.numel()), 5);
    for (double& e : v) e = std::round(e * 25);
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= shape[d];
    for (int d = axis + 1; d < shape.ndim(); ++d) inner *= shape[d];
    const std::int64_t n = shape[axis], k = 17;
    Values want_sorted(v.size()), want_order(v.size()), want_top;
    Values want_top_index(static_cast<std::size_t>(outer * k * inner));
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t in = 0; in < inner; ++in) {
        const auto at = [&](std::int64_t j) { return static_cast<std::size_t>((o * n + j) * inner + in); };
        std::vector<std::int64_t> order(static_cast<std::size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return v[at(a)] < v[at(b)]; });
        for (std::int64_t j = 0; j < n; ++j) {
          want_sorted[at(j)] = v[at(order[static_cast<std::size_t>(j)])];
          want_order[at(j)] = static_cast<double>(order[static_cast<std::size_t>(j)]);
        }
        std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return v[at(a)] > v[at(b)]; });
        for (std::int64_t j = 0; j < k; ++j) {
          want_top_index[static_cast<std::size_t>((o * k + j) * inner + in)] = static_cast<double>(order[static_cast<std::size_t>(j)]);
        }
      }
    }
    // Copies: clang 14 does not capture structured bindings in lambdas.
    ndg_test::for_each_context([&, shape = shape, axis = axis](mx::Context ctx) {
      BOOST_TEST_CONTEXT(shape << " axis " << axis) {
        const nd::NDArray x = nd::array(v, shape, ctx);
        BOOST_TEST(values(nd::sort(x, axis)) == want_sorted, tt::per_element());
        BOOST_TEST(values(nd::argsort(x, axis, true, DType::int32)) == want_order, tt::per_element());
        BOOST_TEST(values(nd::topk(x, axis, k, "indices", false, DType::int64)) == want_top_index, tt::per_element());
      }
    });
  }
}

// topk selects the first k of a row without sorting it where k <= 32 (the GPU's block per row),
// and sorts otherwise: both give the stable sort's first k, ties by position, NaN above every
// number, in both directions, as values, indices and mask.
BOOST_AUTO_TEST_CASE(topk_of_few_and_of_many_match_a_stable_sort) {
  const std::int64_t n = 10000;
  Values v = ndg_test::uniform_values(static_cast<std::size_t>(2 * n), 11);
  for (double& e : v) e = std::round(e * 40);  // ties
  v[3] = v[n + 7] = std::nan("");
  v[5] = -0.0;
  for (const std::int64_t k : {1, 5, 32, 33}) {
    for (const bool ascend : {false, true}) {
      Values want_values, want_indices, want_mask(v.size(), 0.0);
      for (std::int64_t row = 0; row < 2; ++row) {
        const auto at = [&](std::int64_t j) { return v[static_cast<std::size_t>(row * n + j)]; };
        std::vector<std::int64_t> order(static_cast<std::size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) {
          const double x = at(a), y = at(b);
          if (std::isnan(x) || std::isnan(y)) return ascend ? !std::isnan(x) && std::isnan(y) : std::isnan(x) && !std::isnan(y);
          return ascend ? x < y : x > y;
        });
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t i = order[static_cast<std::size_t>(j)];
          want_values.push_back(at(i));
          want_indices.push_back(static_cast<double>(i));
          want_mask[static_cast<std::size_t>(row * n + i)] = 1;
        }
      }
      ndg_test::for_each_context([&](mx::Context ctx) {
        BOOST_TEST_CONTEXT("k " << k << (ascend ? " ascending" : " descending")) {
          const nd::NDArray x = nd::array(v, {2, n}, ctx);
          const std::vector<nd::NDArray> both = nd::topk_both(x, -1, k, ascend, DType::int32);
          const Values got = values(both[0]);
          BOOST_TEST_REQUIRE(got.size() == want_values.size());
          for (std::size_t i = 0; i < got.size(); ++i) {
            BOOST_TEST((std::isnan(got[i]) ? std::isnan(want_values[i]) : got[i] == want_values[i]), "value " << i);
          }
          BOOST_TEST(values(both[1]) == want_indices, tt::per_element());
          BOOST_TEST(values(nd::topk(x, -1, k, "mask", ascend)) == want_mask, tt::per_element());
        }
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(gradient_of_the_values_goes_back_to_their_positions) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kFloatDTypes) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dtype)) {
        nd::NDArray x = doc_example(ctx, dtype);
        x.attach_grad();
        // topk values k=2 along axis 1 (descending): positions [2, 0] and [1, 2].
        {
          auto scope = ag::record();
          nd::topk(x, 1, 2, "value").backward(nd::array({{1, 2}, {3, 4}}, ctx, dtype));
        }
        BOOST_TEST(values(x.grad()) == (Values{2, 0, 1, 0, 3, 4}), tt::per_element());
        // sort ascending along axis 0: each column's order.
        {
          auto scope = ag::record();
          nd::sort(x, 0).backward(nd::array({{1, 2, 3}, {4, 5, 6}}, ctx, dtype));
        }
        BOOST_TEST(values(x.grad()) == (Values{4, 2, 6, 1, 5, 3}), tt::per_element());
        // Both: the values' gradient; the indices' none. Flattened: (k,) back to (2, 3).
        {
          auto scope = ag::record();
          const auto both = nd::topk_both(x, std::nullopt, 2);
          (both[0] * nd::array({10, 20}, ctx, dtype) + both[1].astype(dtype)).sum().backward();
        }
        BOOST_TEST(values(x.grad()) == (Values{20, 0, 10, 0, 0, 0}), tt::per_element());
        // argsort, indices and masks have none.
        {
          auto scope = ag::record();
          (nd::argsort(x).astype(dtype) + nd::topk(x, -1, 1, "mask") + x).sum().backward();
        }
        BOOST_TEST(values(x.grad()) == (Values{1, 1, 1, 1, 1, 1}), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(bad_k_axis_and_index_dtype_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::zeros({2, 3}, ctx);
    NDG_CHECK_THROWS_WITH(nd::topk(x, -1, 4), mx::ValueError, "topk", "k=4", "3 elements", "(2, 3)");
    NDG_CHECK_THROWS_WITH(nd::topk(x, 2), mx::IndexError, "topk", "axis 2");
    NDG_CHECK_THROWS_WITH(nd::topk(x, -1, 1, "both"), mx::ValueError, "topk", "topk_both");
    NDG_CHECK_THROWS_WITH(nd::sort(x, -3), mx::IndexError, "sort", "axis -3");
    NDG_CHECK_THROWS_WITH(nd::argsort(nd::zeros({300}, ctx), 0, true, DType::uint8), mx::ValueError, "argsort", "uint8",
                          "300 elements");
  });
}

BOOST_AUTO_TEST_SUITE_END()
