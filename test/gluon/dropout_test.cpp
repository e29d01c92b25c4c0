// nn::Dropout: the identity in prediction, drops in training (record(), train_mode()), works inside
// a Sequential with Dense layers (backward reaches the weights), and rejects a bad rate.
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <string>

#include <gluon/nn.hpp>
#include <gluon/init.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;

namespace {

// The name of the first parameter, the first Dense's weight.
std::string params_first(const nn::Sequential& net) {
  const std::string first = net.collect_params().keys().front();
  BOOST_TEST_REQUIRE(first.find("weight") != std::string::npos);
  return first;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dropout_layer)

BOOST_AUTO_TEST_CASE(identity_in_prediction_and_dropping_in_training) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Dropout drop(0.4);
    BOOST_TEST(drop.rate() == 0.4);
    const nd::NDArray x = nd::ones({50, 40}, ctx);
    BOOST_TEST(drop(x).is(x));
    nd::NDArray y;
    {
      auto scope = ag::record();
      y = drop(x);
    }
    const double zeros = nd::sum(y == 0.0).asscalar<double>();
    BOOST_TEST(zeros > 0.3 * 2000);
    BOOST_TEST(zeros < 0.5 * 2000);
    BOOST_TEST(nd::max(y).asscalar<double>() == 1 / 0.6, boost::test_tools::tolerance(1e-6));
  });
}

BOOST_AUTO_TEST_CASE(in_a_sequential_backward_reaches_the_weights) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    net.add(nn::Dense(16, "relu"), nn::Dropout(0.5), nn::Dense(1));
    net.initialize(mx::init::Constant(0.1), ctx);
    const nd::NDArray x = nd::ones({8, 4}, ctx);
    {
      auto scope = ag::record();
      nd::sum(net(x)).backward();
    }
    // Unit j's weights get 0.1 (next weight) · 2 (1 / (1 - p)) for each of the 8 samples that kept
    // unit j: a multiple of 0.2, the same for its 4 inputs; about half of the 128 masks keep.
    const std::string first = params_first(net);
    const auto grads = net.collect_params()[first].grad(ctx).asvector<double>();
    double kept = 0;
    for (std::size_t row = 0; row < 16; ++row) {
      const double count = grads[row * 4] / 0.2;
      BOOST_TEST(std::abs(count - std::round(count)) < 1e-4);
      for (std::size_t k = 1; k < 4; ++k) BOOST_TEST(grads[row * 4 + k] == grads[row * 4], boost::test_tools::tolerance(1e-6));
      kept += count;
    }
    BOOST_TEST(kept > 32);
    BOOST_TEST(kept < 96);
  });
}

BOOST_AUTO_TEST_CASE(a_bad_rate_is_a_value_error) {
  NDG_CHECK_THROWS_WITH(nn::Dropout(1.0), mx::ValueError, "Dropout", "rate");
  NDG_CHECK_THROWS_WITH(nn::Dropout(-0.5), mx::ValueError, "Dropout", "rate");
}

BOOST_AUTO_TEST_SUITE_END()
