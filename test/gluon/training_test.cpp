// End-to-end: one epoch on a subset of Fashion-MNIST must clearly beat chance (10%), on every
// context. It takes a few seconds on cpu(0).
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <gluon/data.hpp>
#include <gluon/loss.hpp>
#include <gluon/metric.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace gdata = mx::gluon::data;

BOOST_AUTO_TEST_SUITE(training)

BOOST_AUTO_TEST_CASE(one_epoch_on_a_subset_beats_chance) {
  gdata::FashionMNIST train_set(true, "", 6000), test_set(false, "", 1000);
  ndg_test::for_each_context([&](mx::Context ctx) {
    mx::random::seed(3);
    gdata::DataLoader train(train_set, 100, true, "keep", gdata::to_tensor);
    gdata::DataLoader test(test_set, 500, false, "keep", gdata::to_tensor);
    nn::Sequential net;
    net.add(nn::Flatten(), nn::Dense(256, "relu"), nn::Dense(10));
    net.initialize(mx::init::Normal(0.01), ctx);
    mx::gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.5}});
    mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
    double first_loss = -1, last_loss = -1;
    for (auto& [X, y] : train) {
      nd::NDArray l;
      {
        auto recording = mx::autograd::record();
        l = loss(net(X.as_in_context(ctx)), y.as_in_context(ctx));
      }
      l.backward();
      trainer.step(X.shape()[0]);
      last_loss = l.mean().asscalar<double>();
      if (first_loss < 0) first_loss = last_loss;
    }
    mx::metric::Accuracy accuracy;
    for (auto& [X, y] : test) accuracy.update(y, net(X.as_in_context(ctx)));
    BOOST_TEST(last_loss < first_loss * 0.5, "loss " << first_loss << " -> " << last_loss);
    BOOST_TEST(accuracy.get().second > 0.6, "test accuracy " << accuracy.get().second);  // chance: 0.1
  });
}

BOOST_AUTO_TEST_SUITE_END()
