// test/consumer/suite.cpp: a suite of one's own, run on cpu(0) and on every visible GPU.
#define BOOST_TEST_MODULE my_suite
#include <boost/test/unit_test.hpp>
#include <ndarray/ndarray.hpp>
#include <ndarray/testing/testing.hpp>

namespace nd = mx::nd;
namespace tu = mx::test_utils;

BOOST_AUTO_TEST_CASE(relu_keeps_the_positive_part) {
  tu::for_each_context([](mx::Context ctx) {
    BOOST_TEST(tu::almost_equal(nd::relu(nd::array({-1.5, 2.0}, ctx)), nd::array({0.0, 2.0}, ctx)));
  });
}

BOOST_AUTO_TEST_CASE(softmax_agrees_on_every_context) {
  BOOST_TEST(tu::check_consistency([](auto& in) { return nd::softmax(in[0]); }, {nd::array({{1.0, 2.0, 3.0}})}));
}

BOOST_AUTO_TEST_CASE(copies_between_gpus, *boost::unit_test::precondition(tu::needs_gpus{2})) {
  BOOST_TEST(tu::almost_equal(nd::ones({4}, mx::gpu(0)).copyto(mx::gpu(1)), nd::ones({4}, mx::gpu(1))));
}
