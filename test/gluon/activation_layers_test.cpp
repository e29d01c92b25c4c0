// The activation layers (gluon/nn/activation_layers.hpp): values by hand or from the formulas in
// double, PReLU's gradients (data and alpha, per channel) against hand-computed sums, hybridized
// equal to eager, and their typed errors. Every case runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <vector>

#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

const Values kX{-3, -1, -0.25, 0, 0.5, 2};

Values map(double (*f)(double)) {
  Values y;
  for (double x : kX) y.push_back(f(x));
  return y;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(activation_layers)

BOOST_AUTO_TEST_CASE(values_by_formula) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::array(kX.data(), mx::DType::float64, {6}, ctx, mx::DType::float32);
    check_close(nn::LeakyReLU(0.1)(x), {-0.3, -0.1, -0.025, 0, 0.5, 2});
    check_close(nn::ELU(0.5)(x), map([](double v) { return v > 0 ? v : 0.5 * std::expm1(v); }));
    check_close(nn::SELU()(x), map([](double v) {
                  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
                  return scale * (v > 0 ? v : alpha * std::expm1(v));
                }));
    check_close(nn::GELU()(x), map([](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }));
    check_close(nn::Swish(2.0)(x), map([](double v) { return v / (1 + std::exp(-2 * v)); }));
    check_close(nn::SiLU()(x), map([](double v) { return v / (1 + std::exp(-v)); }));
  });
}

BOOST_AUTO_TEST_CASE(names_as_mxnet) {
  BOOST_TEST(nn::LeakyReLU(0.1).prefix().rfind("leakyrelu", 0) == 0u);
  BOOST_TEST(nn::PReLU().prefix().rfind("prelu", 0) == 0u);
  BOOST_TEST(nn::ELU().prefix().rfind("elu", 0) == 0u);
  BOOST_TEST(nn::SELU().prefix().rfind("selu", 0) == 0u);
  BOOST_TEST(nn::GELU().prefix().rfind("gelu", 0) == 0u);
  BOOST_TEST(nn::Swish().prefix().rfind("swish", 0) == 0u);
  BOOST_TEST(nn::SiLU().prefix().rfind("silu", 0) == 0u);
  const nn::PReLU prelu;
  BOOST_TEST(prelu.alpha().name() == prelu.prefix() + "alpha");
}

// y = x for x > 0, alpha_c · x otherwise; dL/dx = 1 or alpha_c; dL/dalpha_c = Σ over the negative
// elements of channel c of x (with L = Σ y · r, r = 1).
BOOST_AUTO_TEST_CASE(prelu_per_channel_values_and_gradients) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::PReLU prelu(mx::init::Constant(0.25), 2);
    prelu.initialize(mx::init::Zero(), {ctx});
    prelu.alpha().set_data(nd::array({0.5, 0.1}, mx::cpu()));
    // (2, 2, 2): channel 0 holds -2, 4, -6, 8; channel 1 holds 1, -3, 5, -7.
    nd::NDArray x = nd::array({-2, 4, 1, -3, -6, 8, 5, -7}, ctx).reshape({2, 2, 2});
    x.attach_grad();
    {
      auto scope = ag::record();
      const nd::NDArray y = prelu(x);
      check_close(y, {-1, 4, 1, -0.3, -3, 8, 5, -0.7});
      y.sum().backward();
    }
    check_close(x.grad(), {0.5, 1, 1, 0.1, 0.5, 1, 1, 0.1});
    check_close(prelu.alpha().grad(ctx), {-8, -10});
    // One slope for every element (in_channels 1, MXNet's default): alpha 0.25.
    nn::PReLU shared;
    shared.initialize(mx::init::Zero(), {ctx});
    check_close(shared(nd::array({-4, 2}, ctx)), {-1, 2});
  });
}

BOOST_AUTO_TEST_CASE(hybridized_as_eager) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    net.add(nn::Dense(4, "", true, 3), nn::PReLU(mx::init::Constant(0.2), 4), nn::ELU(), nn::Swish(1.5), nn::GELU(),
            nn::LeakyReLU(0.05), nn::SELU(), nn::Dense(2, "", true, 4));
    net.initialize(mx::init::Xavier(), {ctx});
    const nd::NDArray x = ndg_test::random_array({5, 3}, ctx, 3);
    const Values eager = ndg_test::values(net(x));
    net.hybridize();
    check_close(net(x), eager, 1e-5, 1e-6);
    check_close(net(x), eager, 1e-5, 1e-6);  // the replay
  });
}

BOOST_AUTO_TEST_CASE(bad_options_and_inputs_are_typed_errors) {
  NDG_CHECK_THROWS_WITH(nn::LeakyReLU(-0.1), mx::ValueError, "LeakyReLU", "alpha");
  NDG_CHECK_THROWS_WITH(nn::PReLU({}, 0), mx::ValueError, "PReLU", "in_channels");
  NDG_CHECK_THROWS_WITH(nn::Swish(NAN), mx::ValueError, "Swish", "beta");
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::PReLU prelu(mx::init::Constant(0.25), 3);
    prelu.initialize(mx::init::Zero(), {ctx});
    NDG_CHECK_THROWS_WITH(prelu(nd::ones({2, 4}, ctx)), mx::ShapeError, "PReLU", "3 slopes", "(2, 4)");
  });
}

BOOST_AUTO_TEST_SUITE_END()
