// Concurrent, Identity, Lambda (gluon/nn/containers.hpp) and a residual block written as the
// Block documentation shows: values, gradients, hybridized equal to eager, export of a Concurrent
// as one Concat, and the typed errors. Every case runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <string>
#include <vector>

#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

// D2L 7.6's Residual with the 1x1 convolution on the shortcut when the channels change.
class Residual : public mx::gluon::Block {
 public:
  explicit Residual(std::int64_t channels)
      : Block("residual"),
        conv1_(register_child(nn::Conv2D(channels, 3, {.padding = 1}), "conv1")),
        bn1_(register_child(nn::BatchNorm(), "bn1")),
        conv2_(register_child(nn::Conv2D(channels, 3, {.padding = 1}), "conv2")),
        bn2_(register_child(nn::BatchNorm(), "bn2")) {}
  nd::NDArray forward(const nd::NDArray& x) override {
    const nd::NDArray y = nd::unary(mx::UnaryOp::relu, bn1_(conv1_(x)));
    return nd::unary(mx::UnaryOp::relu, bn2_(conv2_(y)) + x);
  }

 private:
  nn::Conv2D conv1_;
  nn::BatchNorm bn1_;
  nn::Conv2D conv2_;
  nn::BatchNorm bn2_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(containers)

BOOST_AUTO_TEST_CASE(concurrent_concatenates_its_branches) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Concurrent branches(1);
    branches.add(nn::Identity(), nn::Lambda([](const nd::NDArray& x) { return x * 2.0; }),
                 nn::Lambda([](const nd::NDArray& x) { return x.sum(1, true); }));
    BOOST_TEST(branches.size() == 3u);
    nd::NDArray x = nd::array({{1, 2}, {3, 4}}, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      const nd::NDArray y = branches(x);
      BOOST_TEST(y.shape() == mx::Shape({2, 5}));
      check_close(y, {1, 2, 2, 4, 3, 3, 4, 6, 8, 7});
      y.sum().backward();
    }
    check_close(x.grad(), {4, 4, 4, 4});  // 1 (identity) + 2 (doubled) + 1 (the sum)
    // The default axis is the last; one branch is its own output.
    nn::HybridConcurrent last;
    last.add(nn::Identity(), nn::Identity());
    BOOST_TEST(last.axis() == -1);
    check_close(last(nd::array({{1}, {2}}, ctx)), {1, 1, 2, 2});
  });
}

BOOST_AUTO_TEST_CASE(hybridized_concurrent_exports_one_concat) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    nn::Concurrent inception(1);
    inception.add(nn::Conv2D(2, 1), nn::Conv2D(3, 3, {.padding = 1}), nn::Identity());
    net.add(inception, nn::GlobalAvgPool2D(), nn::Dense(2));
    net.initialize(mx::init::Xavier(), {ctx});
    const nd::NDArray x = ndg_test::random_array({2, 4, 5, 5}, ctx, 5);
    const Values eager = ndg_test::values(net(x));
    BOOST_TEST(net(x).shape() == mx::Shape({2, 2}));
    net.hybridize();
    check_close(net(x), eager, 1e-5, 1e-6);
    const ndg_test::TempDir dir;
    net.export_model(dir.file("net"));
    const std::string json = ndg_test::read_bytes(dir.file("net-symbol.json"));
    std::size_t concats = 0;
    for (std::size_t at = json.find("\"op\": \"Concat\""); at != std::string::npos;
         at = json.find("\"op\": \"Concat\"", at + 1)) {
      ++concats;
    }
    BOOST_TEST(concats == 1u);
    auto imported = nn::SymbolBlock::imports(dir.file("net-symbol.json"), {"data"}, dir.file("net-0000.params"), ctx);
    check_close(imported(x), eager, 1e-5, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(residual_block_trains_the_same_hybridized) {
  ndg_test::for_each_context([](mx::Context ctx) {
    std::vector<Values> results;
    for (const bool hybridized : {false, true}) {
      Residual block(3);
      mx::random::seed(7);  // the same initial values for both
      block.initialize(mx::init::Xavier(), {ctx});
      if (hybridized) block.hybridize();
      mx::gluon::Trainer trainer(block.collect_params(), "sgd", {{"learning_rate", 0.1}});
      const nd::NDArray x = ndg_test::random_array({2, 3, 4, 4}, ctx, 9);
      for (int step = 0; step < 2; ++step) {
        {
          auto scope = ag::record();
          block(x).sum().backward();
        }
        trainer.step(2);
      }
      results.push_back(ndg_test::values(block(x)));
      BOOST_TEST(block.collect_params().size() == 12u);  // 2 convolutions (weight, bias), 2 BatchNorm (4 each)
    }
    check_close(nd::array(results[1], {static_cast<std::int64_t>(results[1].size())}, mx::cpu()), results[0], 1e-4,
                1e-5);
  });
}

BOOST_AUTO_TEST_CASE(empty_blocks_are_value_errors) {
  NDG_CHECK_THROWS_WITH(nn::Lambda(nn::Lambda::Function{}), mx::ValueError, "Lambda", "empty");
  nn::Concurrent none;
  NDG_CHECK_THROWS_WITH(none(nd::ones({2})), mx::ValueError, "Concurrent", "no branches");
}

// An error raised inside a block's forward names the innermost block it reached, once, with its
// type, and keeps its type; a layer whose own message names it is not named twice.
BOOST_AUTO_TEST_CASE(errors_name_the_innermost_layer) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential outer;
    nn::Concurrent branches(1);  // (3, 2) and (2, 3) cannot be joined on axis 1
    branches.add(nn::Lambda([](const nd::NDArray& x) { return x.reshape({3, 2}); }), nn::Identity());
    outer.add(branches);
    try {
      outer(nd::ones({2, 3}, ctx));
      BOOST_FAIL("no error");
    } catch (const mx::ShapeError& e) {
      const std::string message = e.what();
      BOOST_TEST(message.find("concat: operand 1 (2, 3)") != std::string::npos, message);
      BOOST_TEST(message.find("[in layer " + branches.name() + ", a mx::gluon::nn::Concurrent]") != std::string::npos,
                 message);
      BOOST_TEST(message.find(outer.name()) == std::string::npos, message);  // named once: the innermost
    }
    // An error type of the caller's own is passed on as it is.
    struct Mine : mx::ValueError {
      using mx::ValueError::ValueError;
    };
    nn::Lambda raises([](const nd::NDArray&) -> nd::NDArray { throw Mine("mine"); });
    try {
      raises(nd::ones({2}, ctx));
      BOOST_FAIL("no error");
    } catch (const Mine& e) {
      BOOST_TEST(std::string(e.what()) == "mine");
    }
    nn::Sequential net;
    nn::Dense dense(4, "", true, 3);
    net.add(dense);
    net.initialize(mx::init::Xavier(), ctx);
    try {
      net(nd::ones({2, 5}, ctx));
      BOOST_FAIL("no error");
    } catch (const mx::ShapeError& e) {
      const std::string message = e.what();
      BOOST_TEST(message.find(dense.name()) != std::string::npos, message);
      BOOST_TEST(message.find("[in layer") == std::string::npos, message);  // Dense names itself
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
