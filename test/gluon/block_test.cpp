#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/names.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace tt = boost::test_tools;
using ndg_test::prefix_number;

// Block: prefixes and names, children, structural parameter names (MXNet's
// _collect_params_with_prefix), nesting.

namespace {

std::vector<std::string> structural_keys(const gluon::Block& block, const std::string& prefix = "") {
  std::vector<std::string> keys;
  for (const auto& [key, param] : block.structural_params(prefix)) keys.push_back(key);
  return keys;
}

// A block with named children and a parameter of its own.
class TwoTower : public gluon::Block {
 public:
  TwoTower()
      : Block("twotower"),
        hidden_(register_child(nn::Dense(4, "relu", true, 3), "hidden")),
        out_(register_child(nn::Dense(2, "", true, 4), "out")) {
    register_parameter("scale", {2}, mx::init::Constant(2.0));
  }
  // out(hidden(x)) * scale
  nd::NDArray forward(const nd::NDArray& x) override {
    return out_(hidden_(x)) * parameter("scale").data(x.context()).reshape({1, 2});
  }
  nn::Dense& hidden() { return hidden_; }
  nn::Dense& out() { return out_; }
  gluon::Parameter scale() const { return parameter("scale"); }

 private:
  nn::Dense hidden_, out_;
};

// Holds the handles register_parameter returns, across later registrations.
class Affine : public gluon::Block {
 public:
  Affine()
      : Block("affine"),
        w_(register_parameter("w", {2}, mx::init::Constant(3.0))),
        b_(register_parameter("b", {2}, mx::init::Constant(1.0))) {
    for (int i = 0; i < 8; ++i) register_parameter("extra" + std::to_string(i), {1});
  }
  nd::NDArray forward(const nd::NDArray& x) override {
    return x * w_.data(x.context()) + b_.data(x.context());
  }

 private:
  gluon::Parameter w_, b_;
};

// A Dense whose forward doubles the output.
class DoubledDense : public nn::Dense {
 public:
  using Dense::Dense;
  nd::NDArray forward(const nd::NDArray& x) override { return Dense::forward(x) * 2.0; }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(block)

BOOST_AUTO_TEST_CASE(prefix_and_name) {
  nn::Dense a(2), b(2);
  const int n = prefix_number(a.prefix(), "dense");
  BOOST_TEST_REQUIRE(n >= 0, "prefix " << a.prefix());
  BOOST_TEST(a.name() == "dense" + std::to_string(n));
  BOOST_TEST(b.prefix() == "dense" + std::to_string(n + 1) + "_");
  BOOST_TEST(b.name() == "dense" + std::to_string(n + 1));
  // Each kind counts on its own.
  nn::Sequential s1, s2;
  const int s = prefix_number(s1.prefix(), "sequential");
  BOOST_TEST_REQUIRE(s >= 0, "prefix " << s1.prefix());
  BOOST_TEST(s2.prefix() == "sequential" + std::to_string(s + 1) + "_");
  nn::Dense c(2);
  BOOST_TEST(c.prefix() == "dense" + std::to_string(n + 2) + "_");
  // Activations are named after their function, as MXNet 1.x: relu0, relu1, tanh0.
  nn::Activation act("relu"), act2("relu");
  const int r = prefix_number(act.prefix(), "relu");
  BOOST_TEST_REQUIRE(r >= 0, "prefix " << act.prefix());
  BOOST_TEST(act2.prefix() == "relu" + std::to_string(r + 1) + "_");
  BOOST_TEST(prefix_number(nn::Activation("tanh").prefix(), "tanh") >= 0);
  nn::Flatten flat;
  BOOST_TEST(prefix_number(flat.prefix(), "flatten") >= 0);
  // An explicit prefix replaces the generated one, and names the parameters.
  nn::Dense named(3, "", true, 0, {}, mx::init::Zero(), "encoder_");
  BOOST_TEST(named.prefix() == "encoder_");
  BOOST_TEST(named.name() == "encoder");
  BOOST_TEST(named.weight().name() == "encoder_weight");
  BOOST_TEST(named.bias().name() == "encoder_bias");
  nn::Sequential body("body_");
  BOOST_TEST(body.name() == "body");
  nn::Activation no_underscore("tanh", "act");
  BOOST_TEST(no_underscore.prefix() == "act");
  BOOST_TEST(no_underscore.name() == "act");
  // An explicit prefix does not use up a number.
  nn::Dense d(2);
  BOOST_TEST(d.prefix() == "dense" + std::to_string(n + 3) + "_");
  // A user block has its own kind; its Dense children take the next dense numbers.
  TwoTower tower;
  BOOST_TEST(prefix_number(tower.prefix(), "twotower") >= 0);
  BOOST_TEST(tower.name() == tower.prefix().substr(0, tower.prefix().size() - 1));
  BOOST_TEST(tower.hidden().prefix() == "dense" + std::to_string(n + 4) + "_");
  BOOST_TEST(tower.out().prefix() == "dense" + std::to_string(n + 5) + "_");
}

BOOST_AUTO_TEST_CASE(children) {
  nn::Dense first(3);
  nn::Activation second("relu");
  nn::Sequential net;
  BOOST_TEST(net.num_children() == 0u);
  BOOST_TEST(net.size() == 0u);
  net.add(first);
  net.add(second, nn::Dense(1));
  BOOST_TEST(net.num_children() == 3u);
  BOOST_TEST(net.size() == 3u);
  BOOST_TEST(net.child(0).prefix() == first.prefix());
  BOOST_TEST(net.child(1).prefix() == second.prefix());
  BOOST_TEST(&net.child(2) == &net[2]);
  BOOST_TEST(dynamic_cast<nn::Activation*>(&net.child(1)) != nullptr);
  NDG_CHECK_THROWS_WITH(net.child(3), mx::IndexError, net.name(), "3 children", "index 3");
  // Leaves have no children.
  BOOST_TEST(first.num_children() == 0u);
  NDG_CHECK_THROWS_WITH(first.child(0), mx::IndexError, first.name(), "0 children");
  // A user block's children, in registration order.
  TwoTower tower;
  BOOST_TEST(tower.num_children() == 2u);
  BOOST_TEST(tower.child(0).prefix() == tower.hidden().prefix());
  BOOST_TEST(tower.child(1).prefix() == tower.out().prefix());
}

BOOST_AUTO_TEST_CASE(structural_parameter_names) {
  nn::Sequential net;
  net.add(nn::Dense(4, "relu"), nn::Activation("tanh"), nn::Dense(2, "", false), nn::Dense(1));
  const std::vector<std::string> keys = {"0.weight", "0.bias", "2.weight", "3.weight", "3.bias"};
  BOOST_TEST(structural_keys(net) == keys, tt::per_element());
  // Each entry is the parameter with that global name.
  const auto params = net.structural_params();
  BOOST_TEST(params[0].second.is(net.at<nn::Dense>(0).weight()));
  BOOST_TEST(params[1].second.is(net.at<nn::Dense>(0).bias()));
  BOOST_TEST(params[2].second.is(net.at<nn::Dense>(2).weight()));
  BOOST_TEST(params[4].second.name() == net.at<nn::Dense>(3).prefix() + "bias");
  // With a prefix.
  const std::vector<std::string> prefixed = {"net.0.weight", "net.0.bias", "net.2.weight", "net.3.weight", "net.3.bias"};
  BOOST_TEST(structural_keys(net, "net.") == prefixed, tt::per_element());
  // A leaf: its short names.
  nn::Dense leaf(3);
  BOOST_TEST(structural_keys(leaf) == (std::vector<std::string>{"weight", "bias"}), tt::per_element());
  // Named children, and a block's own parameter first.
  TwoTower tower;
  const std::vector<std::string> tower_keys = {"scale", "hidden.weight", "hidden.bias", "out.weight", "out.bias"};
  BOOST_TEST(structural_keys(tower) == tower_keys, tt::per_element());
  BOOST_TEST(tower.scale().name() == tower.prefix() + "scale");
  // collect_params has the same parameters in the same order, by global name.
  const std::vector<std::string> global = {tower.prefix() + "scale", tower.hidden().prefix() + "weight",
                                           tower.hidden().prefix() + "bias", tower.out().prefix() + "weight",
                                           tower.out().prefix() + "bias"};
  BOOST_TEST(tower.collect_params().keys() == global, tt::per_element());
  // Named children inside a Sequential.
  nn::Sequential outer;
  outer.add(tower);
  BOOST_TEST(structural_keys(outer) == (std::vector<std::string>{"0.scale", "0.hidden.weight", "0.hidden.bias",
                                                                 "0.out.weight", "0.out.bias"}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(nested_sequential) {
  nn::Sequential inner;
  nn::Dense i0(4, "tanh", true, 3), i1(3, "", false, 4);
  inner.add(i0, i1);
  nn::Sequential outer;
  nn::Dense first(3, "relu", true, 2), last(2, "", true, 3);
  outer.add(first, inner, last);
  BOOST_TEST(outer.num_children() == 3u);
  BOOST_TEST(outer.child(1).num_children() == 2u);
  BOOST_TEST(outer.at<nn::Sequential>(1).at<nn::Dense>(1).weight().is(i1.weight()));
  const std::vector<std::string> keys = {"0.weight", "0.bias", "1.0.weight", "1.0.bias", "1.1.weight", "2.weight",
                                         "2.bias"};
  BOOST_TEST(structural_keys(outer) == keys, tt::per_element());
  const std::vector<std::string> names = {first.prefix() + "weight", first.prefix() + "bias", i0.prefix() + "weight",
                                          i0.prefix() + "bias",      i1.prefix() + "weight",  last.prefix() + "weight",
                                          last.prefix() + "bias"};
  BOOST_TEST(outer.collect_params().keys() == names, tt::per_element());
  // Initialising the outer net initialises the inner blocks; the output is the layers by hand.
  ndg_test::for_each_context([&](mx::Context ctx) {
    outer.initialize(mx::init::Uniform(), ctx, true);
    first.weight().set_data(nd::array({{1, -1}, {0.5, 0.5}, {-2, 1}}));
    first.bias().set_data(nd::array({0.25, 0, 0.5}));
    i0.weight().set_data(nd::array({{0.1, 0.2, 0.3}, {-0.3, 0.2, -0.1}, {0.5, 0, -0.5}, {1, 1, 1}}));
    i0.bias().set_data(nd::array({0, 0.1, -0.1, 0.2}));
    i1.weight().set_data(nd::array({{1, 0, 0, 1}, {0, 1, 1, 0}, {1, -1, 1, -1}}));
    last.weight().set_data(nd::array({{1, 2, 3}, {-1, 0, 1}}));
    last.bias().set_data(nd::array({0.5, -0.5}));
    const nd::NDArray x = nd::array({{1, 2}, {-1, 0.5}}, ctx);
    // By hand, in double.
    const double xs[2][2] = {{1, 2}, {-1, 0.5}};
    const double w0[3][2] = {{1, -1}, {0.5, 0.5}, {-2, 1}}, b0[3] = {0.25, 0, 0.5};
    const double w1[4][3] = {{0.1, 0.2, 0.3}, {-0.3, 0.2, -0.1}, {0.5, 0, -0.5}, {1, 1, 1}}, b1[4] = {0, 0.1, -0.1, 0.2};
    const double w2[3][4] = {{1, 0, 0, 1}, {0, 1, 1, 0}, {1, -1, 1, -1}};
    const double w3[2][3] = {{1, 2, 3}, {-1, 0, 1}}, b3[2] = {0.5, -0.5};
    std::vector<double> want;
    for (const auto& row : xs) {
      double h0[3], h1[4], h2[3];
      for (int u = 0; u < 3; ++u) h0[u] = std::max(0.0, w0[u][0] * row[0] + w0[u][1] * row[1] + b0[u]);
      for (int u = 0; u < 4; ++u) h1[u] = std::tanh(w1[u][0] * h0[0] + w1[u][1] * h0[1] + w1[u][2] * h0[2] + b1[u]);
      for (int u = 0; u < 3; ++u) h2[u] = w2[u][0] * h1[0] + w2[u][1] * h1[1] + w2[u][2] * h1[2] + w2[u][3] * h1[3];
      for (int u = 0; u < 2; ++u) want.push_back(w3[u][0] * h2[0] + w3[u][1] * h2[1] + w3[u][2] * h2[2] + b3[u]);
    }
    const nd::NDArray out = outer(x);
    BOOST_TEST(out.context() == ctx);
    BOOST_TEST(out.shape() == (mx::Shape{2, 2}));
    const auto got = out.asvector<double>();
    for (std::size_t i = 0; i < want.size(); ++i) {
      BOOST_TEST(std::abs(got[i] - want[i]) <= 1e-5 * (1 + std::abs(want[i])), "element " << i << ": " << got[i]
                                                                                          << " vs " << want[i]);
    }
    // The inner Sequential alone is the middle of it.
    BOOST_TEST(outer(x).asvector<float>() == last(inner(first(x))).asvector<float>(), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(user_block_with_its_own_parameter) {
  ndg_test::for_each_context([](mx::Context ctx) {
    TwoTower tower;
    tower.initialize(mx::init::One(), ctx);
    BOOST_TEST(tower.scale().data(ctx).asvector<float>() == (std::vector<float>{2, 2}), tt::per_element());
    // All ones, zero biases: hidden = relu(3) = 3 per unit, out = 4 * 3 = 12, times scale 2.
    BOOST_TEST(tower(nd::ones({2, 3}, ctx)).asvector<float>() == std::vector<float>(4, 24.0f), tt::per_element());
    tower.scale().set_data(nd::array({0.5, -1}));
    BOOST_TEST(tower(nd::ones({1, 3}, ctx)).asvector<float>() == (std::vector<float>{6, -12}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(registered_parameters_are_handles_that_stay_valid) {
  ndg_test::for_each_context([](mx::Context ctx) {
    Affine affine;
    affine.initialize(mx::init::Zero(), ctx);
    BOOST_TEST(affine.collect_params().size() == 10u);
    // w = 3, b = 1 through the handles taken before eight more registrations.
    BOOST_TEST(affine(nd::array({1, 2}, ctx)).asvector<float>() == (std::vector<float>{4, 7}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(a_block_passed_as_its_base_class_is_refused) {
  DoubledDense doubled(2, "", true, 2);
  const nn::Dense& as_base = doubled;
  nn::Sequential net;
  NDG_CHECK_THROWS_WITH(net.add(as_base), mx::ValueError, "DoubledDense", "mx::gluon::nn::Dense", "own type");
  BOOST_TEST(net.num_children() == 0u);
  // Passed as itself, it keeps its forward.
  net.add(doubled);
  net.initialize(mx::init::One(), mx::cpu());
  BOOST_TEST(net(nd::ones({1, 2})).asvector<float>() == (std::vector<float>{4, 4}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(two_parameters_with_one_name_are_an_error) {
  // Two blocks given the same explicit prefix: different parameters, one name.
  nn::Sequential net;
  net.add(nn::Dense(2, "", true, 2, {}, mx::init::Zero(), "same_"), nn::Dense(2, "", true, 2, {}, mx::init::Zero(), "same_"));
  NDG_CHECK_THROWS_WITH(net.collect_params(), mx::ValueError, "same_weight");
  // One block added twice is one set of parameters.
  nn::Dense shared(2, "", true, 2);
  nn::Sequential twice;
  twice.add(shared, shared);
  BOOST_TEST(twice.collect_params().size() == 2u);
  BOOST_TEST(structural_keys(twice) == (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}),
             tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
