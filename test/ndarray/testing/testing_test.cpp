// The public test kit (ndarray/testing/testing.hpp, mx::test_utils): almost_equal's verdicts and messages,
// the contexts it runs over, and check_consistency's, including the failures it must report.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>
#include <ndarray/testing/testing.hpp>

namespace nd = mx::nd;
namespace tu = mx::test_utils;

namespace {
// A verdict's message, read once (each read of Boost's message re-renders its buffer).
std::string message_of(const boost::test_tools::assertion_result& verdict) {
  const auto message = verdict.message();
  return std::string(message.begin(), message.end());
}
}  // namespace

BOOST_AUTO_TEST_SUITE(testing_kit)

BOOST_AUTO_TEST_CASE(contexts_are_cpu_then_every_gpu) {
  const std::vector<mx::Context> all = tu::contexts();
  BOOST_TEST_REQUIRE(all.size() == static_cast<std::size_t>(mx::num_gpus()) + 1);
  BOOST_TEST(all[0] == mx::cpu());
  for (std::size_t i = 1; i < all.size(); ++i) BOOST_TEST(all[i] == mx::gpu(static_cast<int>(i - 1)));
  std::vector<mx::Context> seen;
  tu::for_each_context([&](mx::Context ctx) { seen.push_back(ctx); });
  BOOST_TEST(seen == all);
  const auto two = tu::needs_gpus{2}(0);
  BOOST_TEST(bool(two) == (mx::num_gpus() >= 2));
  BOOST_TEST(message_of(two).find("needs 2 GPUs, found") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(almost_equal_names_the_worst_element) {
  tu::for_each_context([](mx::Context ctx) {
    const nd::NDArray want = nd::array({{1, 2, 3}, {4, 5, 6}}, ctx);
    BOOST_TEST(tu::almost_equal(want, want.copy(), 0, 0));
    BOOST_TEST(tu::almost_equal(want + 1e-6, want, 1e-6, 0));  // within rtol * |b|
    // Two elements off; the worst is (1, 2): 6.5 against 6.
    const nd::NDArray got = nd::array({{1, 2, 3.01}, {4, 5, 6.5}}, ctx);
    const auto verdict = tu::almost_equal(got, want, 1e-5, 1e-6);
    BOOST_TEST(!verdict);
    const std::string message = message_of(verdict);
    for (const char* part : {"2 of 6 elements", "at (1, 2)", "6.5 vs 6"}) {
      BOOST_TEST(message.find(part) != std::string::npos, "\"" << message << "\" lacks \"" << part << "\"");
    }
    // Another dtype is compared by value; a shape is not.
    BOOST_TEST(tu::almost_equal(want.astype(mx::DType::float64), want));
    const auto shapes = tu::almost_equal(want, want.reshape({3, 2}));
    BOOST_TEST(!shapes);
    BOOST_TEST(message_of(shapes).find("(2, 3) vs (3, 2)") != std::string::npos);
    // NaN equals only NaN.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    BOOST_TEST(tu::almost_equal(nd::array({nan, 1.0}, ctx), nd::array({nan, 1.0}, ctx)));
    BOOST_TEST(!tu::almost_equal(nd::array({nan, 1.0}, ctx), nd::array({0.0, 1.0}, ctx)));
  });
}

BOOST_AUTO_TEST_CASE(check_consistency_compares_values_and_gradients_across_contexts) {
  const nd::NDArray x = nd::array({{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}}), w = nd::array({{1.0, -0.5, 0.25}});
  const auto layer = [](const std::vector<nd::NDArray>& in) { return nd::tanh(nd::dot(in[0], in[1], false, true)); };
  BOOST_TEST(tu::check_consistency(layer, {x, w}));
  // The same context twice must agree with itself; a function that does not repeat is caught,
  // naming the context and the value.
  int calls = 0;
  const auto drifting = [&](const std::vector<nd::NDArray>& in) { return in[0] * static_cast<double>(++calls); };
  const auto verdict = tu::check_consistency(drifting, {x}, {mx::cpu(), mx::cpu()});
  BOOST_TEST(!verdict);
  const std::string message = message_of(verdict);
  for (const char* part : {"cpu(0) against cpu(0)", "the output", "the gradient of input 0"}) {
    BOOST_TEST(message.find(part) != std::string::npos, "\"" << message << "\" lacks \"" << part << "\"");
  }
}

BOOST_AUTO_TEST_SUITE_END()
