// softmax, log_softmax and one_hot: values against hand-computed ones, on every context.
#include "test/support/boost_test.hpp"
#include "test/support/arrays.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::check_close;
using ndg_test::dtype_of;
using ndg_test::Values;
using ndg_test::values;

BOOST_AUTO_TEST_SUITE(softmax)

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax_of_a_row) {
  // softmax([0, ln 2, ln 5]) = [1, 2, 5] / 8.
  const double l2 = std::log(2.0), l5 = std::log(5.0);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray x = nd::array({{0.0, l2, l5}, {l5, l2, 0.0}}, ctx);
    check_close(nd::softmax(x), {0.125, 0.25, 0.625, 0.625, 0.25, 0.125});
    check_close(nd::log_softmax(x), {std::log(0.125), std::log(0.25), std::log(0.625), std::log(0.625),
                                     std::log(0.25), std::log(0.125)});
    // Along axis 0, each column of two values: [0, ln 5] -> [1/6, 5/6], [ln 2, ln 2] -> [1/2, 1/2].
    check_close(nd::softmax(x, 0), {1.0 / 6, 0.5, 5.0 / 6, 5.0 / 6, 0.5, 1.0 / 6});
  });
}

BOOST_AUTO_TEST_CASE(one_hot_in_every_index_and_output_dtype) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType index_dtype : ndg_test::kAllDTypes) {
      for (DType out : ndg_test::kAllDTypes) {
        BOOST_TEST_CONTEXT("indices " << mx::dtype_name(index_dtype) << ", output " << mx::dtype_name(out)) {
          const nd::NDArray y = nd::one_hot(nd::array({2, 0, 1}, ctx, index_dtype), 3, out);
          BOOST_TEST(y.shape() == (mx::Shape{3, 3}));
          BOOST_TEST(dtype_of(y) == mx::dtype_name(out));
          BOOST_TEST(values(y) == (Values{0, 0, 1, 1, 0, 0, 0, 1, 0}), tt::per_element());
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(one_hot_of_an_index_out_of_range_is_a_zero_row) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // As MXNet: indices outside [0, depth) select nothing. 256 must not wrap to 0 in a uint8 output.
    const nd::NDArray y = nd::one_hot(nd::array({256, -1, 3, 1}, ctx), 4, DType::uint8);
    BOOST_TEST(values(y) == (Values{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0}), tt::per_element());
    // uint8 indices with more classes than uint8 counts: class 256 + k is not class k.
    const nd::NDArray wide = nd::one_hot(nd::array({0, 255}, ctx, DType::uint8), 300, DType::uint8);
    const Values got = values(wide);
    BOOST_TEST(got.size() == 600u);
    Values want(600, 0.0);
    want[0] = 1;
    want[300 + 255] = 1;
    BOOST_TEST(got == want, tt::per_element());
  });
}

BOOST_AUTO_TEST_SUITE_END()
