// The convolution-family layers: Conv1D/2D/3D (deferred in_channels, groups, activation), the
// pooling layers, BatchNorm (training and prediction, running statistics as grad_req "null"
// parameters, one copy per context updated by its own slice), save/load of a conv net across
// contexts, a small conv net that learns, and the typed errors that name the layer and the shapes.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
namespace gluon = mx::gluon;
using ndg_test::check_close;
using ndg_test::random_array;
using ndg_test::Values;

BOOST_AUTO_TEST_SUITE(conv_layers)

BOOST_AUTO_TEST_CASE(conv2d_defers_in_channels_and_matches_the_op) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Conv2D conv(8, 3, {.padding = 1, .activation = "relu"});
    conv.initialize(mx::init::Xavier(), ctx);
    BOOST_TEST(conv.weight().shape() == (mx::Shape{8, 0, 3, 3}));
    const nd::NDArray x = random_array({2, 4, 6, 5}, ctx, 1);
    const nd::NDArray y = conv(x);
    BOOST_TEST(conv.weight().shape() == (mx::Shape{8, 4, 3, 3}));
    BOOST_TEST(y.shape() == (mx::Shape{2, 8, 6, 5}));
    const nd::NDArray want = nd::relu(nd::Convolution(x, conv.weight().data(ctx), conv.bias().data(ctx),
                                                      {.kernel = {3, 3}, .pad = {1, 1}, .num_filter = 8}));
    check_close(y, want.asvector<double>());
  });
}

// layout "NHWC": in_channels deferred from the last axis, the weight (channels, kh, kw, in), and
// the output the channels-first layer's, permuted. Transposed layers refuse it.
BOOST_AUTO_TEST_CASE(conv2d_channels_last_defers_in_channels_from_the_last_axis) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Conv2D conv(8, 3, {.padding = 1, .activation = "relu", .layout = "NHWC"});
    conv.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = random_array({2, 6, 5, 4}, ctx, 1);
    const nd::NDArray y = conv(x);
    BOOST_TEST(conv.weight().shape() == (mx::Shape{8, 3, 3, 4}));
    BOOST_TEST(y.shape() == (mx::Shape{2, 6, 5, 8}));
    const nd::NDArray want =
        nd::relu(nd::Convolution(x.transpose({0, 3, 1, 2}).copy(), conv.weight().data(ctx).transpose({0, 3, 1, 2}).copy(),
                                 conv.bias().data(ctx), {.kernel = {3, 3}, .pad = {1, 1}, .num_filter = 8}));
    check_close(y, want.transpose({0, 2, 3, 1}).copy().asvector<double>(), 1e-5, 1e-6);
    NDG_CHECK_THROWS_WITH(conv(nd::ones({2, 6, 5, 3}, ctx)), mx::ShapeError, "3 channels", "expects 4");
  });
  NDG_CHECK_THROWS_WITH(nn::Conv2D(8, 3, {.layout = "NWC"}), mx::ValueError, "Conv2D", "\"NCHW\" or \"NHWC\"");
  NDG_CHECK_THROWS_WITH(nn::Conv2DTranspose(8, 3, {.layout = "NHWC"}), mx::ValueError, "not supported");
}

BOOST_AUTO_TEST_CASE(conv1d_conv3d_groups_and_strides_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Conv1D c1(4, 3, {.strides = 2, .in_channels = 2});
    nn::Conv3D c3(6, {1, 3, 3}, {.padding = {0, 1, 1}, .groups = 3, .use_bias = false});
    c1.initialize(mx::init::Xavier(), ctx);
    c3.initialize(mx::init::Xavier(), ctx);
    BOOST_TEST(c1(nd::ones({5, 2, 11}, ctx)).shape() == (mx::Shape{5, 4, 5}));
    BOOST_TEST(c3(nd::ones({2, 3, 4, 5, 5}, ctx)).shape() == (mx::Shape{2, 6, 4, 5, 5}));
    BOOST_TEST(c3.weight().shape() == (mx::Shape{6, 1, 1, 3, 3}));
    BOOST_CHECK_THROW(c3.bias(), mx::ValueError);
  });
}

// The transposed layers: weight (in_channels, channels / groups, kernel...), deferred, with
// output_padding and the activation; the output is the op's, and its shape undoes a strided Conv2D.
BOOST_AUTO_TEST_CASE(transposed_convolutions_defer_in_channels_and_match_the_op) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Conv2DTranspose up(6, 3, {.strides = 2, .padding = 1, .output_padding = 1, .groups = 2, .activation = "tanh"});
    up.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = random_array({2, 4, 5, 3}, ctx, 7);
    const nd::NDArray y = up(x);
    BOOST_TEST(up.weight().shape() == (mx::Shape{4, 3, 3, 3}));
    BOOST_TEST(y.shape() == (mx::Shape{2, 6, 10, 6}));  // (5 - 1) 2 - 2 + 3 + 1
    const nd::NDArray want = nd::tanh(nd::Deconvolution(
        x, up.weight().data(ctx), up.bias().data(ctx),
        {.kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1}, .adj = {1, 1}, .num_filter = 6, .num_group = 2, .no_bias = false}));
    check_close(y, want.asvector<double>());
    nn::Conv2D down(4, 3, {.strides = 2, .padding = 1});
    down.initialize(mx::init::Xavier(), ctx);
    BOOST_TEST(down(y).shape() == x.shape());

    nn::Conv1DTranspose c1(3, 4, {.strides = 3, .use_bias = false, .in_channels = 2});
    nn::Conv3DTranspose c3(2, {1, 2, 2}, {.strides = {1, 2, 2}});
    c1.initialize(mx::init::Xavier(), ctx);
    c3.initialize(mx::init::Xavier(), ctx);
    BOOST_TEST(c1(nd::ones({5, 2, 7}, ctx)).shape() == (mx::Shape{5, 3, 22}));  // 6·3 + 4
    BOOST_TEST(c3(nd::ones({1, 3, 2, 4, 4}, ctx)).shape() == (mx::Shape{1, 2, 2, 8, 8}));
    BOOST_TEST(c3.weight().shape() == (mx::Shape{3, 2, 1, 2, 2}));
    NDG_CHECK_THROWS_WITH(c1(nd::ones({5, 3, 7}, ctx)), mx::ShapeError, "Conv1DTranspose", "(5, 3, 7)",
                          "expects 2");
  });
  NDG_CHECK_THROWS_WITH(nn::Conv2D(4, 3, {.output_padding = 1}), mx::ValueError, "Conv2D", "output_padding");
  NDG_CHECK_THROWS_WITH(nn::Conv2DTranspose(4, 3, {.strides = 2, .output_padding = 2}), mx::ValueError,
                        "Conv2DTranspose", "output_padding (2, 2)", "strides (2, 2)");
}

BOOST_AUTO_TEST_CASE(pooling_layers) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = nd::arange(0, 32, 1, ctx).reshape({1, 2, 4, 4});
    // Default strides are the pool size.
    check_close(nn::MaxPool2D(2)(x), {5, 7, 13, 15, 21, 23, 29, 31});
    check_close(nn::AvgPool2D(2)(x), {2.5, 4.5, 10.5, 12.5, 18.5, 20.5, 26.5, 28.5});
    BOOST_TEST(nn::MaxPool2D(3, {.strides = 1})(x).shape() == (mx::Shape{1, 2, 2, 2}));
    BOOST_TEST(nn::MaxPool2D(3, {.strides = 2, .ceil_mode = true})(x).shape() == (mx::Shape{1, 2, 2, 2}));
    BOOST_TEST(nn::MaxPool2D(3, {.strides = 2})(x).shape() == (mx::Shape{1, 2, 1, 1}));
    check_close(nn::GlobalAvgPool2D()(x), {7.5, 23.5});
    check_close(nn::GlobalMaxPool2D()(x), {15, 31});
    check_close(nn::MaxPool1D(2)(x.reshape({2, 2, 8})), Values{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31});
    check_close(nn::AvgPool3D(2)(x.reshape({1, 1, 2, 4, 4})), {10.5, 12.5, 18.5, 20.5});
  });
}

BOOST_AUTO_TEST_CASE(batch_norm_trains_on_batch_statistics_and_predicts_with_running_ones) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::BatchNorm bn({.momentum = 0.5});
    bn.initialize(mx::init::Uniform(), ctx);
    BOOST_TEST(bn.running_mean().grad_req() == "null");
    BOOST_TEST(bn.running_var().grad_req() == "null");
    BOOST_TEST(bn.gamma().grad_req() == "write");
    // Channel c of (2, 2, 2) holds 2c + {0, 1, 4, 5}... values: channel 0 {0, 1, 4, 5}, channel 1 {2, 3, 6, 7}.
    const nd::NDArray x = nd::arange(0, 8, 1, ctx).reshape({2, 2, 2});
    nd::NDArray y;
    {
      auto scope = ag::record();
      y = bn(x);
    }
    // Mean 2.5 and 4.5, variance 4.25 (unbiased 17/3); gamma 1 and beta 0 from their initialisers.
    const double s = 1 / std::sqrt(4.25 + 1e-5);
    check_close(y, {-2.5 * s, -1.5 * s, -2.5 * s, -1.5 * s, 1.5 * s, 2.5 * s, 1.5 * s, 2.5 * s}, 1e-5);
    check_close(bn.running_mean().data(ctx), {1.25, 2.25});
    check_close(bn.running_var().data(ctx), {0.5 + 0.5 * 17 / 3.0, 0.5 + 0.5 * 17 / 3.0}, 1e-6);
    // Prediction: normalised by the running statistics, which stay as they are.
    const nd::NDArray p = bn(x);
    const double m0 = 1.25, v0 = 0.5 + 0.5 * 17 / 3.0;
    BOOST_TEST(p.asvector<double>()[0] == (0 - m0) / std::sqrt(v0 + 1e-5), boost::test_tools::tolerance(1e-5));
    check_close(bn.running_mean().data(ctx), {1.25, 2.25});
  });
}

BOOST_AUTO_TEST_CASE(trainer_leaves_running_statistics_to_the_forward_pass) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    nn::BatchNorm bn;
    net.add(nn::Conv2D(3, 1), bn);
    net.initialize(mx::init::Xavier(), ctx);
    gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.1}});
    const nd::NDArray x = random_array({4, 2, 3, 3}, ctx, 5);
    {
      auto scope = ag::record();
      nd::sum(net(x) * net(x)).backward();
    }
    const std::vector<double> before = bn.running_mean().data(ctx).asvector<double>();
    trainer.step(4);
    BOOST_TEST(bn.running_mean().data(ctx).asvector<double>() == before,
               boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_CASE(each_context_updates_its_own_running_statistics) {
  const std::vector<mx::Context> ctxs = ndg_test::all_contexts();
  nn::BatchNorm bn({.momentum = 0});  // running = the last batch's statistics
  bn.initialize(mx::init::Uniform(), ctxs);
  const nd::NDArray x = nd::arange(0, 8.0 * static_cast<double>(ctxs.size()), 1, mx::cpu()).reshape(
      {2 * static_cast<std::int64_t>(ctxs.size()), 2, 2});
  const auto slices = gluon::utils::split_and_load(x, ctxs);
  {
    auto scope = ag::record();
    for (const nd::NDArray& s : slices) bn(s);
  }
  for (std::size_t i = 0; i < ctxs.size(); ++i) {
    BOOST_TEST_CONTEXT(ctxs[i].str()) {
      // Slice i holds 8i .. 8i + 7: channel means 8i + 2.5 and 8i + 4.5.
      const double base = 8.0 * static_cast<double>(i);
      check_close(bn.running_mean().data(ctxs[i]), {base + 2.5, base + 4.5});
    }
  }
}

BOOST_AUTO_TEST_CASE(a_conv_net_saves_and_loads_across_contexts) {
  ndg_test::TempDir dir;
  const auto make = [] {
    nn::Sequential net;
    net.add(nn::Conv2D(4, 3, {.activation = "relu"}), nn::BatchNorm(), nn::MaxPool2D(2), nn::Dense(3));
    return net;
  };
  for (mx::Context from : ndg_test::all_contexts()) {
    nn::Sequential source = make();
    source.initialize(mx::init::Xavier(), from);
    const nd::NDArray x = random_array({2, 1, 6, 6}, from, 9);
    {
      auto scope = ag::record();  // updates the running statistics, which are saved too
      source(x);
    }
    const std::vector<double> want = source(x).asvector<double>();
    const std::string path = dir.file("net_" + from.str() + ".params");
    source.save_parameters(path);
    for (mx::Context to : ndg_test::all_contexts()) {
      BOOST_TEST_CONTEXT(from.str() << " -> " << to.str()) {
        nn::Sequential target = make();
        target.load_parameters(path, to);
        check_close(target(x.as_in_context(to)), want, 1e-5, 1e-6);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_small_conv_net_learns) {
  // Two classes: a bright top half or a bright bottom half, plus noise.
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    net.add(nn::Conv2D(4, 3, {.padding = 1}), nn::BatchNorm(), nn::Activation("relu"), nn::AvgPool2D(2),
            nn::Dropout(0.1), nn::Dense(2));
    net.initialize(mx::init::Xavier(), ctx);
    gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.2}});
    gluon::loss::SoftmaxCrossEntropyLoss loss_fn;
    Values pixels, labels;
    for (int n = 0; n < 32; ++n) {
      const Values noise = ndg_test::uniform_values(64, 100 + static_cast<unsigned>(n));
      for (int i = 0; i < 64; ++i) pixels.push_back(((i < 32) == (n % 2 == 0) ? 1.0 : 0.0) + 0.3 * noise[static_cast<std::size_t>(i)]);
      labels.push_back(n % 2);
    }
    const nd::NDArray x = nd::array(pixels.data(), mx::DType::float64, {32, 1, 8, 8}, ctx, mx::DType::float32);
    const nd::NDArray y = nd::array(labels.data(), mx::DType::float64, {32}, ctx, mx::DType::float32);
    double first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      nd::NDArray l;
      {
        auto scope = ag::record();
        l = loss_fn(net(x), y);
        l.backward();
      }
      trainer.step(32);
      (step == 0 ? first : last) = nd::mean(l).asscalar<double>();
    }
    BOOST_TEST(last < 0.2 * first);
    BOOST_TEST(nd::mean(nd::argmax(net(x), 1) == y).asscalar<double>() == 1.0);
  });
}

BOOST_AUTO_TEST_CASE(bad_input_names_the_layer_and_the_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Conv2D conv(6, 3, {.in_channels = 4});
    conv.initialize(mx::init::Xavier(), ctx);
    NDG_CHECK_THROWS_WITH(conv(nd::ones({2, 3, 8, 8}, ctx)), mx::ShapeError, "Conv2D 'conv", "(2, 3, 8, 8)",
                          "3 channels", "(6, 4, 3, 3)");
    NDG_CHECK_THROWS_WITH(conv(nd::ones({4, 8, 8}, ctx)), mx::ShapeError, "Conv2D 'conv", "2 spatial axes", "(4, 8, 8)");
    NDG_CHECK_THROWS_WITH(conv(nd::ones({1, 4, 2, 2}, ctx)), mx::ShapeError, "Conv2D 'conv", "(1, 4, 2, 2)",
                          "larger than the padded input");
    NDG_CHECK_THROWS_WITH(nn::Conv2D(6, 3, {.groups = 4}), mx::ValueError, "Conv2D", "groups 4", "channels 6");
    nn::Conv2D grouped(6, 3, {.groups = 3});
    grouped.initialize(mx::init::Xavier(), ctx);
    NDG_CHECK_THROWS_WITH(grouped(nd::ones({1, 4, 5, 5}, ctx)), mx::ShapeError, "Conv2D 'conv", "4 channels",
                          "groups 3");
    NDG_CHECK_THROWS_WITH(nn::Conv2D(6, 3, {.strides = 0}), mx::ValueError, "Conv2D", "strides (0,)", "positive");
    NDG_CHECK_THROWS_WITH(nn::Conv2D(6, 3, {.padding = -1}), mx::ValueError, "Conv2D", "padding (-1,)", "non-negative");
    NDG_CHECK_THROWS_WITH(nn::Conv2D(6, {3, 3, 3}), mx::ValueError, "Conv2D", "kernel_size (3, 3, 3)", "1 or 2");
    NDG_CHECK_THROWS_WITH(nn::MaxPool2D(2)(nd::ones({1, 1, 1, 1}, ctx)), mx::ShapeError, "MaxPool2D 'pool",
                          "(1, 1, 1, 1)");
    NDG_CHECK_THROWS_WITH(nn::AvgPool2D(2, {.padding = 2}), mx::ValueError, "AvgPool2D", "padding (2, 2)");
    NDG_CHECK_THROWS_WITH(nn::Dropout(1.0), mx::ValueError, "Dropout", "[0, 1)");
    nn::BatchNorm bn({.in_channels = 3});
    bn.initialize(mx::init::Uniform(), ctx);
    NDG_CHECK_THROWS_WITH(bn(nd::ones({2, 4, 5}, ctx)), mx::ShapeError, "BatchNorm 'batchnorm", "(2, 4, 5)",
                          "4 channels");
    // The parameters are as they were: the layer still runs on what fits.
    BOOST_TEST(conv(nd::ones({2, 4, 8, 8}, ctx)).shape() == (mx::Shape{2, 6, 6, 6}));
  });
}

BOOST_AUTO_TEST_SUITE_END()
