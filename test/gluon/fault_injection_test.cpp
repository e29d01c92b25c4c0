// Fault injection: an allocation that fails in the middle of a training step (forward, backward,
// Trainer::step) ends the step with mx::OutOfMemory and leaves the parameters and the optimizer's
// state as they were, so that training goes on as if the failed step had never been tried. Every
// allocation a step makes is failed in turn, on every context, for SGD with momentum and Adam
// (whose state is made at the first step), eager and hybridized.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/core/memory.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace gluon = mx::gluon;
namespace tt = boost::test_tools;

namespace {

struct Model {
  nn::Sequential net;
  std::unique_ptr<gluon::Trainer> trainer;
};

// The same network, weights and optimizer each time.
Model make_model(mx::Context ctx, const std::string& optimizer, bool hybridize) {
  Model m;
  m.net.add(nn::Dense(8, "relu", true, 5), nn::Dense(3, "", true, 8));
  mx::random::seed(11);
  m.net.initialize(mx::init::Normal(0.5), ctx);
  if (hybridize) m.net.hybridize();
  const gluon::HyperParams params = optimizer == "sgd" ? gluon::HyperParams{{"learning_rate", 0.1}, {"momentum", 0.9}}
                                                       : gluon::HyperParams{{"learning_rate", 0.01}};
  m.trainer = std::make_unique<gluon::Trainer>(m.net.collect_params(), optimizer, params);
  return m;
}

void train_step(Model& m, const nd::NDArray& x, const nd::NDArray& y) {
  gluon::loss::SoftmaxCrossEntropyLoss loss;
  nd::NDArray l;
  {
    auto recording = mx::autograd::record();
    l = loss(m.net(x), y);
  }
  l.backward();
  m.trainer->step(x.shape()[0]);
}

std::vector<std::vector<std::uint32_t>> weights(Model& m) {
  std::vector<std::vector<std::uint32_t>> out;
  for (auto& [name, param] : m.net.collect_params()) out.push_back(ndg_test::bits_of(param.data()));
  return out;
}

void check_every_failure(mx::Context ctx, const std::string& optimizer, bool hybridize) {
  const nd::NDArray x = ndg_test::random_array({4, 5}, ctx, 5);
  const nd::NDArray y = nd::array(std::vector<float>{0, 2, 1, 2}, {4}, ctx);
  // The reference: three steps that all succeed.
  Model reference = make_model(ctx, optimizer, hybridize);
  const std::int64_t before = mx::testing::allocation_count();
  train_step(reference, x, y);
  const std::int64_t first_step = mx::testing::allocation_count() - before;
  train_step(reference, x, y);
  train_step(reference, x, y);
  const std::vector<std::vector<std::uint32_t>> want = weights(reference);
  BOOST_TEST_REQUIRE(first_step > 3);

  // Fail each allocation of the first step (the one that makes the optimizer's state), then train.
  for (std::int64_t nth = 1; nth <= first_step; ++nth) {
    BOOST_TEST_CONTEXT(ctx.str() << ", " << optimizer << (hybridize ? ", hybridized" : "") << ", allocation " << nth
                                 << " of " << first_step) {
      Model m = make_model(ctx, optimizer, hybridize);
      const std::vector<std::vector<std::uint32_t>> start = weights(m);
      mx::testing::fail_nth_allocation(nth);
      BOOST_CHECK_THROW(train_step(m, x, y), mx::OutOfMemory);
      mx::testing::fail_nth_allocation(0);
      const std::vector<std::vector<std::uint32_t>> after = weights(m);
      for (std::size_t i = 0; i < start.size(); ++i) BOOST_TEST(after[i] == start[i], tt::per_element());
      BOOST_TEST(m.trainer->num_update() == 0);
      for (int step = 0; step < 3; ++step) train_step(m, x, y);
      const std::vector<std::vector<std::uint32_t>> got = weights(m);
      for (std::size_t i = 0; i < want.size(); ++i) BOOST_TEST(got[i] == want[i], tt::per_element());
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fault_injection)

BOOST_AUTO_TEST_CASE(the_nth_allocation_fails_once_with_out_of_memory) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray a = nd::ones({3}, ctx);
    mx::testing::fail_nth_allocation(2);
    const nd::NDArray b = a + 1;  // the first allocation succeeds
    NDG_CHECK_THROWS_WITH(a * 2, mx::OutOfMemory, ctx.str(), "out of memory", "fail_nth_allocation");
    ndg_test::check_close(a * 3, {3, 3, 3});  // and the failure is spent
    mx::testing::fail_nth_allocation(1);
    mx::testing::fail_nth_allocation(0);  // cancelled before it is hit
    ndg_test::check_close(b, {2, 2, 2});
    ndg_test::check_close(a + b, {3, 3, 3});
  });
}

BOOST_AUTO_TEST_CASE(a_failed_step_changes_nothing_sgd) {
  ndg_test::for_each_context([](mx::Context ctx) { check_every_failure(ctx, "sgd", false); });
}

BOOST_AUTO_TEST_CASE(a_failed_step_changes_nothing_adam) {
  ndg_test::for_each_context([](mx::Context ctx) { check_every_failure(ctx, "adam", false); });
}

BOOST_AUTO_TEST_CASE(a_failed_hybridized_step_changes_nothing) {
  ndg_test::for_each_context([](mx::Context ctx) { check_every_failure(ctx, "adam", true); });
}

BOOST_AUTO_TEST_SUITE_END()
