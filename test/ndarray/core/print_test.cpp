#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include <sstream>
#include <ndarray/ndarray.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace nd = mx::nd;

// Every expected string is what NumPy (>= 1.21, default print options) prints for
// str(x.asnumpy()), derived from numpy/core/arrayprint.py.

BOOST_AUTO_TEST_SUITE(print)

BOOST_AUTO_TEST_CASE(integer_valued_floats_keep_the_point) {
  BOOST_TEST(nd::format_values(nd::array({1, 2, 3})) == "[1. 2. 3.]");
  BOOST_TEST(nd::format_values(nd::array({0, 10, 100})) == "[  0.  10. 100.]");
}

BOOST_AUTO_TEST_CASE(points_line_up_across_widths) {
  BOOST_TEST(nd::format_values(nd::array({1, 2.5})) == "[1.  2.5]");
  BOOST_TEST(nd::format_values(nd::array({-1, 0.5})) == "[-1.   0.5]");
  BOOST_TEST(nd::format_values(nd::array({-0.0, 0.0})) == "[-0.  0.]");
}

BOOST_AUTO_TEST_CASE(float32_prints_its_shortest_digits) {
  BOOST_TEST(nd::format_values(nd::array({0.1, 0.2, 0.3})) == "[0.1 0.2 0.3]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<float>{0.5488135f, 0.71518934f, 0.60276335f},
                                         {3})) == "[0.5488135  0.71518934 0.60276335]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<float>{3.14159265358979f}, {1})) ==
             "[3.1415927]");
}

BOOST_AUTO_TEST_CASE(float64_prints_at_most_8_fractional_digits) {
  BOOST_TEST(nd::format_values(nd::array(std::vector<double>{3.141592653589793}, {1})) ==
             "[3.14159265]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<double>{1.0 / 3, 2.0 / 3}, {2})) ==
             "[0.33333333 0.66666667]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<double>{0.1 + 0.2}, {1})) == "[0.3]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<double>{0.0123456789}, {1})) ==
             "[0.01234568]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<double>{1.000000001, 2.5}, {2})) ==
             "[1.  2.5]");
}

BOOST_AUTO_TEST_CASE(exponential_for_small_values) {
  BOOST_TEST(nd::format_values(nd::array({1e-5, 1.0})) == "[1.e-05 1.e+00]");
  BOOST_TEST(nd::format_values(nd::array({-1e-5, 1.0})) == "[-1.e-05  1.e+00]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<double>{1e-100, 1.0}, {2})) ==
             "[1.e-100 1.e+000]");
}

BOOST_AUTO_TEST_CASE(exponential_for_large_values_and_wide_ranges) {
  BOOST_TEST(nd::format_values(nd::array(std::vector<double>{1.5e10, 2.0}, {2})) ==
             "[1.5e+10 2.0e+00]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<double>{1, 1000, 10000}, {3})) ==
             "[1.e+00 1.e+03 1.e+04]");
}

BOOST_AUTO_TEST_CASE(nan_and_inf_are_padded_to_the_common_width) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  BOOST_TEST(nd::format_values(nd::array(std::vector<float>{1, nan, inf}, {3})) == "[ 1. nan inf]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<float>{1.5f, -inf}, {2})) == "[ 1.5 -inf]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<float>{nan, nan}, {2})) == "[nan nan]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<float>{nan, 1e-5f, 1}, {3})) ==
             "[   nan 1.e-05 1.e+00]");
}

BOOST_AUTO_TEST_CASE(int32_is_right_aligned) {
  BOOST_TEST(nd::format_values(nd::array(std::vector<std::int32_t>{1, 2, 3}, {3})) == "[1 2 3]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<std::int32_t>{1, -2, 3, 4}, {2, 2})) ==
             "[[ 1 -2]\n [ 3  4]]");
}

BOOST_AUTO_TEST_CASE(int64_and_uint8_are_right_aligned) {
  BOOST_TEST(nd::format_values(nd::array(std::vector<std::int64_t>{10000000000, -1}, {2})) ==
             "[10000000000          -1]");
  BOOST_TEST(nd::format_values(nd::array(std::vector<std::uint8_t>{0, 128, 255}, {3})) ==
             "[  0 128 255]");
}

BOOST_AUTO_TEST_CASE(nested_brackets) {
  BOOST_TEST(nd::format_values(nd::array({{1, 2, 3}, {4, 5, 6}})) == "[[1. 2. 3.]\n [4. 5. 6.]]");
  BOOST_TEST(nd::format_values(nd::arange(8).reshape({2, 2, 2})) ==
             "[[[0. 1.]\n  [2. 3.]]\n\n [[4. 5.]\n  [6. 7.]]]");
}

BOOST_AUTO_TEST_CASE(strided_views_print_their_own_elements) {
  const nd::NDArray m = nd::array({{1, 2, 3}, {4, 5, 6}});
  BOOST_TEST(nd::format_values(m.T()) == "[[1. 4.]\n [2. 5.]\n [3. 6.]]");
  BOOST_TEST(nd::format_values(m.T().slice(0, 3, 2)) == "[[1. 4.]\n [3. 6.]]");
  BOOST_TEST(nd::format_values(nd::broadcast_to(m[1], {2, 3})) == "[[4. 5. 6.]\n [4. 5. 6.]]");
}

BOOST_AUTO_TEST_CASE(long_rows_wrap_at_75_columns) {
  BOOST_TEST(nd::format_values(nd::arange(30)) ==
             "[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n"
             " 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.]");
  BOOST_TEST(nd::format_values(nd::arange(30, mx::cpu(), mx::DType::int32)) ==
             "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
             " 24 25 26 27 28 29]");
  BOOST_TEST(nd::format_values(nd::arange(40).reshape({2, 20})) ==
             "[[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n"
             "  18. 19.]\n"
             " [20. 21. 22. 23. 24. 25. 26. 27. 28. 29. 30. 31. 32. 33. 34. 35. 36. 37.\n"
             "  38. 39.]]");
}

BOOST_AUTO_TEST_CASE(summarised_1d_fits_the_format_to_the_shown_elements) {
  // 1999 / 1 > 1e3 among the shown elements: exponential.
  BOOST_TEST(nd::format_values(nd::arange(2000)) ==
             "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]");
  BOOST_TEST(nd::format_values(nd::arange(1001)) == "[   0.    1.    2. ...  998.  999. 1000.]");
  BOOST_TEST(nd::format_values(nd::arange(2000, mx::cpu(), mx::DType::int32)) ==
             "[   0    1    2 ... 1997 1998 1999]");
  // 1000 elements are not summarised.
  BOOST_TEST(nd::format_values(nd::zeros({1000})).find("...") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(summarised_2d) {
  BOOST_TEST(nd::format_values(nd::zeros({100, 100})) ==
             "[[0. 0. 0. ... 0. 0. 0.]\n"
             " [0. 0. 0. ... 0. 0. 0.]\n"
             " [0. 0. 0. ... 0. 0. 0.]\n"
             " ...\n"
             " [0. 0. 0. ... 0. 0. 0.]\n"
             " [0. 0. 0. ... 0. 0. 0.]\n"
             " [0. 0. 0. ... 0. 0. 0.]]");
  const nd::NDArray x = nd::arange(10000, mx::cpu(), mx::DType::int32).reshape({100, 100});
  BOOST_TEST(nd::format_values(x) ==
             "[[   0    1    2 ...   97   98   99]\n"
             " [ 100  101  102 ...  197  198  199]\n"
             " [ 200  201  202 ...  297  298  299]\n"
             " ...\n"
             " [9700 9701 9702 ... 9797 9798 9799]\n"
             " [9800 9801 9802 ... 9897 9898 9899]\n"
             " [9900 9901 9902 ... 9997 9998 9999]]");
}

BOOST_AUTO_TEST_CASE(empty_array) {
  BOOST_TEST(nd::format_values(nd::zeros({0})) == "[]");
  BOOST_TEST(nd::format_values(nd::zeros({2, 0})) == "[]");
}

BOOST_AUTO_TEST_CASE(values_are_read_from_every_context) {
  for (const mx::Context ctx : ndg_test::all_contexts()) {
    BOOST_TEST_CONTEXT("on " << ctx.str()) {
      const nd::NDArray x = nd::array({{1, -2.5}, {0.1, 4}}, ctx);
      BOOST_TEST(nd::format_values(x) == "[[ 1.  -2.5]\n [ 0.1  4. ]]");
      std::ostringstream out;
      out << x;
      BOOST_TEST(out.str() == "\n[[ 1.  -2.5]\n [ 0.1  4. ]]\n<NDArray 2x2 @" + ctx.str() + ">");
    }
  }
}

BOOST_AUTO_TEST_CASE(stream_prints_as_mxnet_repr) {
  std::ostringstream vector_out;
  vector_out << nd::array({1, 2, 3}, mx::cpu());
  BOOST_TEST(vector_out.str() == "\n[1. 2. 3.]\n<NDArray 3 @cpu(0)>");

  std::ostringstream matrix_out;
  matrix_out << nd::array({{1, 2, 3}, {4, 5, 6}}, mx::cpu());
  BOOST_TEST(matrix_out.str() == "\n[[1. 2. 3.]\n [4. 5. 6.]]\n<NDArray 2x3 @cpu(0)>");
}

BOOST_AUTO_TEST_SUITE_END()
