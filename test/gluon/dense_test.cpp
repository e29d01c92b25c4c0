#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace tt = boost::test_tools;
using ndg_test::check_close;

// nn::Dense, nn::Activation, nn::Flatten and nn::Sequential against outputs computed here in
// double precision, on every context; a user-defined block; and the errors.

namespace {

// Float32 products against double references: 1e-5 relative, 1e-5 absolute (near-zero outputs).
constexpr double kRtol = 1e-5, kAtol = 1e-5;

using Act = std::function<double(double)>;

double identity(double x) { return x; }
double relu(double x) { return x > 0 ? x : 0; }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double tanh_ref(double x) { return std::tanh(x); }
double softrelu(double x) { return std::log1p(std::exp(x)); }

// Values start, start + step, ... as a (shape) float32 array.
std::vector<float> ramp(std::size_t n, double start, double step) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(start + step * static_cast<double>(i));
  return v;
}

// Deterministic values of both signs, not a ramp: i-th value of a small "random" table.
std::vector<float> mixed(std::size_t n, double scale, int salt = 0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = static_cast<int>((i * 7 + static_cast<std::size_t>(salt) * 5 + 3) % 17) - 8;  // -8 .. 8
    v[i] = static_cast<float>(scale * k / 8.0);
  }
  return v;
}

// act(x · wᵀ + b): x (batch, in), w (units, in), b (units,) or empty.
std::vector<double> dense_reference(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                                    std::size_t batch, std::size_t in, std::size_t units, const Act& act) {
  std::vector<double> out(batch * units);
  for (std::size_t r = 0; r < batch; ++r) {
    for (std::size_t u = 0; u < units; ++u) {
      double acc = b.empty() ? 0.0 : b[u];
      for (std::size_t k = 0; k < in; ++k) acc += static_cast<double>(x[r * in + k]) * w[u * in + k];
      out[r * units + u] = act(acc);
    }
  }
  return out;
}

std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

}  // namespace

BOOST_AUTO_TEST_SUITE(dense)

BOOST_AUTO_TEST_CASE(output_is_x_times_weight_transposed_plus_bias) {
  const std::size_t batch = 3, in = 4, units = 5;
  const auto x = mixed(batch * in, 1.5);
  const auto w = mixed(units * in, 0.75, 1);
  const auto b = ramp(units, -0.5, 0.25);
  const auto want = dense_reference(x, w, b, batch, in, units, identity);
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Dense layer(5, "", true, 4);
    layer.initialize(mx::init::Uniform(), ctx);
    layer.weight().set_data(nd::array(w, {5, 4}));
    layer.bias().set_data(nd::array(b, {5}));
    const nd::NDArray out = layer(nd::array(x, {3, 4}, ctx));
    BOOST_TEST(out.context() == ctx);
    BOOST_TEST(out.shape() == (mx::Shape{3, 5}));
    check_close(out, want, kRtol, kAtol);
  });
  // One case small enough to check by eye: x = [[1, 2]], W = [[1, 0], [0, 1], [1, 1]], b = [0.5, -1, 2].
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Dense layer(3, "", true, 2);
    layer.initialize(mx::init::Zero(), ctx);
    layer.weight().set_data(nd::array({{1, 0}, {0, 1}, {1, 1}}));
    layer.bias().set_data(nd::array({0.5, -1, 2}));
    BOOST_TEST(layer(nd::array({{1, 2}}, ctx)).asvector<float>() == (std::vector<float>{1.5f, 1.0f, 5.0f}),
               tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(activations_match_their_reference) {
  const std::size_t batch = 4, in = 6, units = 3;
  const auto x = mixed(batch * in, 2.0, 2);
  const auto w = mixed(units * in, 0.5, 3);
  const auto b = ramp(units, -0.25, 0.25);
  // The pre-activations have both signs, so that relu and the others are exercised on both sides.
  const auto linear = dense_reference(x, w, b, batch, in, units, identity);
  BOOST_TEST_REQUIRE(*std::min_element(linear.begin(), linear.end()) < -0.5);
  BOOST_TEST_REQUIRE(*std::max_element(linear.begin(), linear.end()) > 0.5);
  const std::vector<std::pair<std::string, Act>> activations = {
      {"relu", relu}, {"sigmoid", sigmoid}, {"tanh", tanh_ref}, {"softrelu", softrelu}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const auto& [name, act] : activations) {
      BOOST_TEST_CONTEXT("activation " << name) {
        nn::Dense layer(3, name, true, 6);
        layer.initialize(mx::init::Uniform(), ctx);
        layer.weight().set_data(nd::array(w, {3, 6}));
        layer.bias().set_data(nd::array(b, {3}));
        const nd::NDArray out = layer(nd::array(x, {4, 6}, ctx));
        BOOST_TEST(out.context() == ctx);
        check_close(out, dense_reference(x, w, b, batch, in, units, act), kRtol, kAtol);
        // The same as the linear layer followed by nn::Activation.
        nn::Dense plain(3, "", true, 6);
        plain.initialize(mx::init::Uniform(), ctx);
        plain.weight().set_data(nd::array(w, {3, 6}));
        plain.bias().set_data(nd::array(b, {3}));
        nn::Activation activation(name);
        check_close(activation(plain(nd::array(x, {4, 6}, ctx))), dense_reference(x, w, b, batch, in, units, act), kRtol, kAtol);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(without_bias) {
  const auto x = mixed(2 * 5, 1.0, 4);
  const auto w = mixed(3 * 5, 1.0, 5);
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Dense layer(3, "tanh", false, 5);
    BOOST_TEST(layer.collect_params().size() == 1u);
    BOOST_CHECK_THROW(layer.bias(), mx::ValueError);
    layer.initialize(mx::init::Uniform(), ctx);
    layer.weight().set_data(nd::array(w, {3, 5}));
    check_close(layer(nd::array(x, {2, 5}, ctx)), dense_reference(x, w, {}, 2, 5, 3, tanh_ref), kRtol, kAtol);
    nn::Dense linear(3, "", false, 5);
    linear.initialize(mx::init::Uniform(), ctx);
    linear.weight().set_data(nd::array(w, {3, 5}));
    check_close(linear(nd::array(x, {2, 5}, ctx)), dense_reference(x, w, {}, 2, 5, 3, identity), kRtol, kAtol);
  });
}

BOOST_AUTO_TEST_CASE(input_is_flattened) {
  // (2, 3, 4) is used as (2, 12).
  const auto x = mixed(2 * 3 * 4, 1.0, 6);
  const auto w = mixed(5 * 12, 0.5, 7);
  const auto b = ramp(5, 1.0, -0.5);
  const auto want = dense_reference(x, w, b, 2, 12, 5, identity);
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Dense layer(5, "", true, 12);
    layer.initialize(mx::init::Uniform(), ctx);
    layer.weight().set_data(nd::array(w, {5, 12}));
    layer.bias().set_data(nd::array(b, {5}));
    const nd::NDArray out = layer(nd::array(x, {2, 3, 4}, ctx));
    BOOST_TEST(out.shape() == (mx::Shape{2, 5}));
    check_close(out, want, kRtol, kAtol);
    // Deferred: in_units inferred as 3 * 4.
    nn::Dense deferred(5);
    deferred.initialize(mx::init::Uniform(), ctx);
    deferred(nd::array(x, {2, 3, 4}, ctx)).wait_to_read();
    BOOST_TEST(deferred.weight().shape() == (mx::Shape{5, 12}));
  });
}

BOOST_AUTO_TEST_CASE(deferred_initialization_infers_in_units) {
  const auto ctxs = ndg_test::all_contexts();
  nn::Dense layer(5);
  layer.initialize(mx::init::Constant(0.5), ctxs);
  BOOST_TEST(layer.weight().is_deferred());
  BOOST_TEST(layer.weight().shape() == (mx::Shape{5, 0}));
  BOOST_TEST(layer.bias().is_initialized());  // (5,) is known at once
  NDG_CHECK_THROWS_WITH(layer.weight().data(mx::cpu()), mx::Error, layer.prefix() + "weight", "deferred");
  // The first forward, on the last context, fixes (5, 7) and initialises every context.
  const auto x = mixed(3 * 7, 1.0, 8);
  const nd::NDArray out = layer(nd::array(x, {3, 7}, ctxs.back()));
  BOOST_TEST(out.shape() == (mx::Shape{3, 5}));
  BOOST_TEST(layer.weight().shape() == (mx::Shape{5, 7}));
  BOOST_TEST(!layer.weight().is_deferred());
  BOOST_TEST(layer.weight().list_ctx() == ctxs, tt::per_element());
  const std::vector<float> w(35, 0.5f), b(5, 0.0f);
  const auto want = dense_reference(x, w, b, 3, 7, 5, identity);
  check_close(out, want, kRtol, kAtol);
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(layer.weight().data(ctx).context() == ctx);
    BOOST_TEST(layer.weight().data(ctx).asvector<float>() == w, tt::per_element());
    check_close(layer(nd::array(x, {3, 7}, ctx)), want, kRtol, kAtol);
  });
  // Now the shape is fixed: another feature count is an error.
  NDG_CHECK_THROWS_WITH(layer(nd::ones({3, 8})), mx::ShapeError, "8", "7");
  // Random initial values come out the same on every context after a deferred initialisation.
  nn::Dense random_layer(4);
  random_layer.initialize(mx::init::Xavier(), ctxs);
  random_layer(nd::ones({1, 9}, ctxs.front())).wait_to_read();
  const auto reference = random_layer.weight().data(mx::cpu()).asvector<float>();
  BOOST_TEST(*std::max_element(reference.begin(), reference.end()) > 0.0f);
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(random_layer.weight().data(ctx).asvector<float>() == reference, tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(sequential_equals_composing_the_layers) {
  const std::size_t batch = 5, in = 6;
  const auto x = mixed(batch * in, 1.0, 9);
  const auto w1 = mixed(8 * 6, 0.6, 10), b1 = ramp(8, -0.4, 0.1);
  const auto w2 = mixed(8 * 8, 0.4, 11), b2 = ramp(8, 0.3, -0.1);
  const auto w3 = mixed(2 * 8, 0.7, 12), b3 = ramp(2, 0.1, 0.2);
  const auto h1 = dense_reference(x, w1, b1, batch, 6, 8, relu);
  const auto h2 = dense_reference(to_float(h1), w2, b2, batch, 8, 8, tanh_ref);
  const auto want = dense_reference(to_float(h2), w3, b3, batch, 8, 2, identity);
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Dense l1(8, "relu"), l2(8, "tanh"), l3(2);
    nn::Sequential net;
    net.add(l1, l2, l3);
    BOOST_TEST(net.size() == 3u);
    net.initialize(mx::init::Uniform(), ctx);
    const nd::NDArray input = nd::array(x, {5, 6}, ctx);
    net(input).wait_to_read();  // completes the deferred shapes
    l1.weight().set_data(nd::array(w1, {8, 6}));
    l1.bias().set_data(nd::array(b1, {8}));
    l2.weight().set_data(nd::array(w2, {8, 8}));
    l2.bias().set_data(nd::array(b2, {8}));
    l3.weight().set_data(nd::array(w3, {2, 8}));
    l3.bias().set_data(nd::array(b3, {2}));
    const nd::NDArray out = net(input);
    BOOST_TEST(out.context() == ctx);
    BOOST_TEST(out.shape() == (mx::Shape{5, 2}));
    check_close(out, want, kRtol, kAtol);
    // Exactly the layers applied by hand.
    BOOST_TEST(out.asvector<float>() == l3(l2(l1(input))).asvector<float>(), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(outputs_agree_across_contexts) {
  const auto ctxs = ndg_test::all_contexts();
  mx::random::seed(3);
  nn::Sequential net;
  net.add(nn::Dense(64, "relu"), nn::Dense(32, "sigmoid"), nn::Dense(16, "softrelu"), nn::Dense(10));
  net.initialize(mx::init::Xavier(), ctxs);
  const nd::NDArray x = nd::random::uniform(-1, 1, {32, 3, 10}, mx::cpu());
  const nd::NDArray reference = net(x);
  BOOST_TEST(reference.shape() == (mx::Shape{32, 10}));
  const auto ref = reference.asvector<double>();
  BOOST_TEST(*std::max_element(ref.begin(), ref.end()) > *std::min_element(ref.begin(), ref.end()));
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray out = net(x.copyto(ctx));
    BOOST_TEST(out.context() == ctx);
    BOOST_TEST(ndg_test::relative_error(out.asvector<double>(), ref) < 1e-5);
  });
  // The CPU output itself against a double-precision reference of the whole net.
  std::vector<float> h = x.asvector<float>();
  std::size_t in = 30;
  const std::vector<Act> acts = {relu, sigmoid, softrelu, identity};
  for (std::size_t i = 0; i < net.size(); ++i) {
    const auto& layer = net.at<nn::Dense>(i);
    const auto units = static_cast<std::size_t>(layer.units());
    h = to_float(dense_reference(h, layer.weight().data(mx::cpu()).asvector<float>(),
                                 layer.bias().data(mx::cpu()).asvector<float>(), 32, in, units, acts[i]));
    in = units;
  }
  BOOST_TEST(ndg_test::relative_error(ref, std::vector<double>(h.begin(), h.end())) < 1e-5);
}

BOOST_AUTO_TEST_CASE(input_on_a_context_without_parameters, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  nn::Dense layer(3, "", true, 4);
  layer.initialize(mx::init::Uniform(), mx::cpu());
  NDG_CHECK_THROWS_WITH(layer(nd::ones({2, 4}, mx::gpu(0))), mx::Error, layer.prefix() + "weight", "gpu(0)",
                        "[cpu(0)]");
  // On a GPU only: a cpu(0) input fails the same way.
  nn::Dense on_gpu(3, "", true, 4);
  on_gpu.initialize(mx::init::Uniform(), mx::gpu(0));
  NDG_CHECK_THROWS_WITH(on_gpu(nd::ones({2, 4})), mx::Error, on_gpu.prefix() + "weight", "cpu(0)", "[gpu(0)]");
}

BOOST_AUTO_TEST_CASE(input_on_a_second_gpu_without_parameters, *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  nn::Sequential net;
  net.add(nn::Dense(3, "", true, 4));
  net.initialize(mx::init::Uniform(), std::vector<mx::Context>{mx::cpu(), mx::gpu(0)});
  NDG_CHECK_THROWS_WITH(net(nd::ones({2, 4}, mx::gpu(1))), mx::Error, net.at<nn::Dense>(0).prefix() + "weight",
                        "gpu(1)", "[cpu(0), gpu(0)]");
}

BOOST_AUTO_TEST_CASE(forward_before_initialize_names_the_parameter_and_initialize) {
  // A net run before initialize(): an mx::Error (not a shape error about the unknown in_units)
  // naming the weight and what to call, and the net is left as it was.
  const nd::NDArray x = nd::ones({1, 3});
  nn::Sequential net;
  net.add(nn::Dense(2));
  const gluon::Parameter weight = net.at<nn::Dense>(0).weight();
  const auto not_initialized = [&](const std::string& name) {
    return [name](const mx::Error& e) {
      BOOST_TEST(!dynamic_cast<const mx::ShapeError*>(&e), "a ShapeError: " << e.what());
      return ndg_test::message_has({"Parameter '" + name + "' has not been initialized", "initialize()",
                                    "collect_params()"})(e);
    };
  };
  BOOST_CHECK_EXCEPTION(net(x), mx::Error, not_initialized(weight.name()));
  BOOST_TEST(!weight.is_initialized());
  BOOST_TEST(!weight.is_deferred());
  BOOST_TEST(weight.shape() == (mx::Shape{2, 0}));
  // A layer given its input size says the same, also for an input of another size.
  nn::Dense sized(2, "", true, 5);
  BOOST_CHECK_EXCEPTION(sized(x), mx::Error, not_initialized(sized.weight().name()));
  BOOST_CHECK_EXCEPTION(sized(nd::ones({1, 5})), mx::Error, not_initialized(sized.weight().name()));
  // Initialised, the same calls run.
  net.initialize(mx::init::Uniform(), mx::cpu());
  BOOST_TEST(net(x).shape() == (mx::Shape{1, 2}));
  BOOST_TEST(weight.shape() == (mx::Shape{2, 3}));
  sized.initialize(mx::init::Uniform(), mx::cpu());
  BOOST_TEST(sized(nd::ones({1, 5})).shape() == (mx::Shape{1, 2}));
}

BOOST_AUTO_TEST_CASE(wrong_feature_count_is_a_shape_error) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Dense layer(4, "", true, 3);
    layer.initialize(mx::init::Uniform(), ctx);
    NDG_CHECK_THROWS_WITH(layer(nd::ones({2, 5}, ctx)), mx::ShapeError, layer.name(), "5 features",
                          "(4, 3)", "expects 3");
    NDG_CHECK_THROWS_WITH(layer(nd::ones({2, 2, 2}, ctx)), mx::ShapeError, "4 features", "expects 3");
    NDG_CHECK_THROWS_WITH(layer(nd::ones({3}, ctx)), mx::ShapeError, layer.name(), "(3,)");
    // The layer still works afterwards.
    BOOST_TEST(layer(nd::ones({2, 3}, ctx)).shape() == (mx::Shape{2, 4}));
  });
}

BOOST_AUTO_TEST_CASE(bad_constructor_arguments_are_value_errors) {
  NDG_CHECK_THROWS_WITH(nn::Dense(0), mx::ValueError, "units", "0");
  NDG_CHECK_THROWS_WITH(nn::Dense(-1, "relu"), mx::ValueError, "units", "-1");
  NDG_CHECK_THROWS_WITH(nn::Dense(3, "", true, -2), mx::ValueError, "in_units", "-2");
  NDG_CHECK_THROWS_WITH(nn::Dense(3, "gelu"), mx::ValueError, "\"gelu\"", "relu", "sigmoid", "tanh", "softrelu");
  NDG_CHECK_THROWS_WITH(nn::Dense(3, "Relu"), mx::ValueError, "\"Relu\"");
  NDG_CHECK_THROWS_WITH(nn::Activation("swish"), mx::ValueError, "\"swish\"", "relu");
  NDG_CHECK_THROWS_WITH(nn::Activation(""), mx::ValueError, "relu");
}

BOOST_AUTO_TEST_CASE(activation_block) {
  const auto values = ramp(12, -3.0, 0.55);  // -3 .. 3.05, both signs
  const std::vector<std::pair<std::string, Act>> activations = {
      {"relu", relu}, {"sigmoid", sigmoid}, {"tanh", tanh_ref}, {"softrelu", softrelu}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const auto& [name, act] : activations) {
      BOOST_TEST_CONTEXT("activation " << name) {
        nn::Activation block(name);
        BOOST_TEST(block.activation() == name);
        BOOST_TEST(block.collect_params().size() == 0u);
        const nd::NDArray out = block(nd::array(values, {3, 2, 2}, ctx));
        BOOST_TEST(out.context() == ctx);
        BOOST_TEST(out.shape() == (mx::Shape{3, 2, 2}));  // shape kept, not flattened
        std::vector<double> want;
        for (float v : values) want.push_back(act(v));
        check_close(out, want, kRtol, kAtol);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(flatten_block) {
  const auto values = ramp(24, 0.0, 1.0);
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Flatten flatten;
    BOOST_TEST(flatten.collect_params().size() == 0u);
    const nd::NDArray out = flatten(nd::array(values, {2, 3, 4}, ctx));
    BOOST_TEST(out.context() == ctx);
    BOOST_TEST(out.shape() == (mx::Shape{2, 12}));
    BOOST_TEST(out.asvector<float>() == values, tt::per_element());
    BOOST_TEST(flatten(nd::array(values, {4, 6}, ctx)).shape() == (mx::Shape{4, 6}));
    BOOST_TEST(flatten(nd::array(values, {2, 2, 3, 2}, ctx)).shape() == (mx::Shape{2, 12}));
    // In a Sequential before a Dense.
    nn::Sequential net;
    nn::Dense layer(2, "", true, 12);
    net.add(nn::Flatten(), layer);
    net.initialize(mx::init::One(), ctx);
    check_close(net(nd::array(values, {2, 3, 4}, ctx)), {66, 66, 210, 210}, kRtol, kAtol);  // row sums 0..11, 12..23
  });
}

namespace {

// The user-defined block of the comment in gluon/block.hpp.
class Mlp : public gluon::Block {
 public:
  Mlp()
      : Block("mlp"),
        hidden_(register_child(nn::Dense(16, "relu"), "hidden")),
        out_(register_child(nn::Dense(3), "out")) {}
  nd::NDArray forward(const nd::NDArray& x) override { return out_(hidden_(x)); }
  nn::Dense& hidden() { return hidden_; }
  nn::Dense& out() { return out_; }

 private:
  nn::Dense hidden_, out_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(user_defined_block) {
  const auto x = mixed(4 * 5, 1.0, 13);
  const auto w1 = mixed(16 * 5, 0.5, 14), b1 = ramp(16, -0.3, 0.05);
  const auto w2 = mixed(3 * 16, 0.3, 15), b2 = ramp(3, 0.2, -0.2);
  const auto want = dense_reference(to_float(dense_reference(x, w1, b1, 4, 5, 16, relu)), w2, b2, 4, 16, 3, identity);
  ndg_test::for_each_context([&](mx::Context ctx) {
    Mlp mlp;
    BOOST_TEST(mlp.name().rfind("mlp", 0) == 0u);
    BOOST_TEST(mlp.num_children() == 2u);
    const gluon::ParameterDict params = mlp.collect_params();
    BOOST_TEST(params.size() == 4u);
    const std::vector<std::string> keys = {mlp.hidden().prefix() + "weight", mlp.hidden().prefix() + "bias",
                                           mlp.out().prefix() + "weight", mlp.out().prefix() + "bias"};
    BOOST_TEST(params.keys() == keys, tt::per_element());
    mlp.initialize(mx::init::Uniform(), ctx);
    mlp(nd::array(x, {4, 5}, ctx)).wait_to_read();
    mlp.hidden().weight().set_data(nd::array(w1, {16, 5}));
    mlp.hidden().bias().set_data(nd::array(b1, {16}));
    mlp.out().weight().set_data(nd::array(w2, {3, 16}));
    mlp.out().bias().set_data(nd::array(b2, {3}));
    check_close(mlp(nd::array(x, {4, 5}, ctx)), want, kRtol, kAtol);
    // Inside a Sequential, after a Flatten: the same block, the same output.
    nn::Sequential net;
    net.add(nn::Flatten(), mlp);
    BOOST_TEST(net.collect_params().size() == 4u);
    check_close(net(nd::array(x, {4, 5, 1}, ctx)), want, kRtol, kAtol);
    BOOST_TEST(net.at<Mlp>(1).hidden().weight().is(mlp.hidden().weight()));
  });
}

BOOST_AUTO_TEST_CASE(sequential_keeps_the_block_the_caller_holds) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Dense d(2, "", true, 3);
    nn::Sequential net;
    net.add(d);
    net.initialize(mx::init::Uniform(), ctx);
    BOOST_TEST(d.weight().is(net.at<nn::Dense>(0).weight()));
    BOOST_TEST(d.bias().is(net.at<nn::Dense>(0).bias()));
    BOOST_TEST(d.weight().is_initialized());  // initialised through the net
    // Data set through one is seen through the other.
    d.weight().set_data(nd::array({{1, 2, 3}, {4, 5, 6}}));
    BOOST_TEST(net.at<nn::Dense>(0).weight().data(ctx).asvector<float>() ==
                   (std::vector<float>{1, 2, 3, 4, 5, 6}),
               tt::per_element());
    net.at<nn::Dense>(0).bias().set_data(nd::array({10, 20}));
    BOOST_TEST(d.bias().data(ctx).asvector<float>() == (std::vector<float>{10, 20}), tt::per_element());
    // Both compute with those values: [1, 1, 1] -> [6 + 10, 15 + 20].
    const std::vector<float> want = {16, 35};
    BOOST_TEST(net(nd::ones({1, 3}, ctx)).asvector<float>() == want, tt::per_element());
    BOOST_TEST(d(nd::ones({1, 3}, ctx)).asvector<float>() == want, tt::per_element());
    // net[0] is a Block& to the same block.
    static_assert(std::is_same_v<decltype(net[0]), gluon::Block&>);
    gluon::Block& first = net[0];
    BOOST_TEST(first.prefix() == d.prefix());
    BOOST_TEST(first(nd::ones({1, 3}, ctx)).asvector<float>() == want, tt::per_element());
    // Adding the same block twice runs it twice, with one set of parameters.
    nn::Sequential twice;
    nn::Dense square(3, "", false, 3);
    twice.add(square, square);
    twice.initialize(mx::init::One(), ctx);
    BOOST_TEST(twice(nd::ones({1, 3}, ctx)).asvector<float>() == (std::vector<float>{9, 9, 9}), tt::per_element());
  });
}

BOOST_AUTO_TEST_CASE(at_with_the_wrong_type_is_a_value_error) {
  nn::Sequential net;
  net.add(nn::Dense(2), nn::Activation("relu"));
  BOOST_TEST(net.at<nn::Activation>(1).activation() == "relu");
  BOOST_TEST(net.at<nn::Dense>(0).units() == 2);
  NDG_CHECK_THROWS_WITH(net.at<nn::Activation>(0), mx::ValueError, "block 0", net[0].name(), "not of the requested type");
  NDG_CHECK_THROWS_WITH(net.at<nn::Dense>(1), mx::ValueError, "block 1", net[1].name());
  NDG_CHECK_THROWS_WITH(net[2], mx::IndexError, "2");
  NDG_CHECK_THROWS_WITH(net.at<nn::Dense>(5), mx::IndexError, "5");
}

BOOST_AUTO_TEST_CASE(collect_params_keys_in_order) {
  nn::Dense a(4, "relu"), b(3, "", false), c(2);
  nn::Sequential net;
  net.add(a, nn::Activation("tanh"), b, c);
  const std::vector<std::string> keys = {a.prefix() + "weight", a.prefix() + "bias", b.prefix() + "weight",
                                         c.prefix() + "weight", c.prefix() + "bias"};
  BOOST_TEST(net.collect_params().keys() == keys, tt::per_element());
  // Keys are the parameters' own names, and the dict holds the parameters themselves.
  gluon::ParameterDict params = net.collect_params();
  BOOST_TEST(params.contains(a.prefix() + "bias"));
  BOOST_TEST(!params.contains(b.prefix() + "bias"));
  BOOST_TEST(params[c.prefix() + "weight"].is(c.weight()));
  NDG_CHECK_THROWS_WITH(params["nothing"], mx::ValueError, "nothing", a.prefix() + "weight");
  std::size_t i = 0;
  for (const auto& [name, param] : params) BOOST_TEST(name == keys[i++]);
  BOOST_TEST(i == keys.size());
}

BOOST_AUTO_TEST_CASE(collect_params_bulk_operations) {
  const auto ctxs = ndg_test::all_contexts();
  nn::Sequential net;
  nn::Dense a(3, "", true, 2), b(2, "", true, 3);
  net.add(a, b);
  // initialize through the dict initialises the net's parameters.
  net.collect_params().initialize(mx::init::Constant(0.5), ctxs);
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST(a.weight().data(ctx).asvector<float>() == std::vector<float>(6, 0.5f), tt::per_element());
    BOOST_TEST(b.bias().data(ctx).asvector<float>() == std::vector<float>(2, 0.0f), tt::per_element());  // Zero()
  });
  // zero_grad through the dict.
  for (auto& [name, param] : net.collect_params()) {
    for (nd::NDArray g : param.list_grad()) g.fill(2.0);
  }
  BOOST_TEST(b.weight().grad(ctxs.back()).sum().asscalar<float>() == 12.0f);
  net.collect_params().zero_grad();
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (auto& [name, param] : net.collect_params()) {
      BOOST_TEST_CONTEXT(name) {
        const auto g = param.grad(ctx).asvector<float>();
        BOOST_TEST(g == std::vector<float>(g.size(), 0.0f), tt::per_element());
      }
    }
  });
  // setattr("grad_req", "null") drops every gradient.
  net.collect_params().setattr("grad_req", "null");
  for (auto& [name, param] : net.collect_params()) {
    BOOST_TEST(param.grad_req() == "null");
    BOOST_TEST(param.list_grad().empty());
    NDG_CHECK_THROWS_WITH(param.grad(mx::cpu()), mx::Error, name, "null");
  }
  NDG_CHECK_THROWS_WITH(net.collect_params().setattr("lr_mul", "2"), mx::ValueError, "lr_mul", "grad_req", "lr_mult");
  NDG_CHECK_THROWS_WITH(net.collect_params().setattr("lr_mult", "two"), mx::ValueError, "lr_mult", "'two'");
  NDG_CHECK_THROWS_WITH(net.collect_params().setattr("wd_mult", "-1"), mx::ValueError, "wd_mult");
  net.collect_params().setattr("lr_mult", "2");
  for (auto& [name, param] : net.collect_params()) BOOST_TEST((param.lr_mult() == 2 && param.wd_mult() == 1));
  NDG_CHECK_THROWS_WITH(net.collect_params().setattr("grad_req", "always"), mx::ValueError, "always");
  // The forward pass does not need gradients.
  ndg_test::for_each_context([&](mx::Context ctx) {
    // [1, 1] -> 0.5 * 2 = 1 per unit -> 3 * 0.5 * 1 = 1.5 per unit.
    BOOST_TEST(net(nd::ones({1, 2}, ctx)).asvector<float>() == (std::vector<float>{1.5f, 1.5f}), tt::per_element());
  });
  // reset_ctx through the dict.
  net.collect_params().reset_ctx({ctxs.back()});
  BOOST_TEST(a.weight().list_ctx() == std::vector<mx::Context>{ctxs.back()}, tt::per_element());
  BOOST_TEST(net(nd::ones({1, 2}, ctxs.back())).asvector<float>() == (std::vector<float>{1.5f, 1.5f}),
             tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
