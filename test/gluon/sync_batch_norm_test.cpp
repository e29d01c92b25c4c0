// contrib::nn::SyncBatchNorm: on one context it trains as BatchNorm does (eagerly and hybridized),
// exports as MXNet's _contrib_SyncBatchNorm with its running statistics as auxiliary states and
// imports back; data-parallel over the GPUs, steps of the Trainer give what one context gives on
// the whole batch (parameters and every GPU's running statistics), eagerly and hybridized (the
// exchange inside a replayed CUDA graph).
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gluon/contrib/nn.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <gluon/utils.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
using ndg_test::check_close;

namespace {

// Conv2D(4, 3x3) -> Norm -> relu -> Dense(3), for input (batch, 2, 5, 5).
template <class Norm>
nn::Sequential make_net() {
  nn::Sequential net;
  net.add(nn::Conv2D(4, 3, {.in_channels = 2}), Norm(gluon::nn::BatchNormOptions{.in_channels = 4}),
          nn::Activation("relu"), nn::Dense(3, "", true, 4 * 3 * 3));
  return net;
}

// Every parameter of `from` copied into `to` on ctxs, through a parameter file (structural names).
void copy_parameters(const nn::Sequential& from, nn::Sequential& to, const std::vector<mx::Context>& ctxs) {
  const ndg_test::TempDir dir;
  from.save_parameters(dir.file("net.params"));
  to.load_parameters(dir.file("net.params"), ctxs);
}

nd::NDArray random_array(const mx::Shape& shape, unsigned seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(1.0f, 2.0f);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = normal(engine);
  return nd::array(v, shape, mx::cpu());
}

// One SGD step on ctxs: the batch split over them, loss Σ net(x) · r on each.
void train_step(nn::Sequential& net, gluon::Trainer& trainer, const nd::NDArray& x, const nd::NDArray& r,
                const std::vector<mx::Context>& ctxs) {
  const auto xs = gluon::utils::split_and_load(x, ctxs), rs = gluon::utils::split_and_load(r, ctxs);
  std::vector<nd::NDArray> heads;
  {
    auto scope = ag::record();
    for (std::size_t k = 0; k < ctxs.size(); ++k) heads.push_back((net(xs[k]) * rs[k]).sum());
  }
  for (const nd::NDArray& h : heads) h.backward();
  trainer.step(x.shape()[0]);
}

// Every parameter of `got` on ctx against `want`'s on cpu(0).
void check_same_parameters(const nn::Sequential& got, const nn::Sequential& want, mx::Context ctx, double tol) {
  const auto want_params = want.collect_params(), got_params = got.collect_params();
  const std::vector<std::string> want_keys = want_params.keys(), got_keys = got_params.keys();
  BOOST_REQUIRE_EQUAL(want_keys.size(), got_keys.size());
  for (std::size_t i = 0; i < want_keys.size(); ++i) {
    BOOST_TEST_CONTEXT(got_keys[i] << " on " << ctx.str()) {
      check_close(got_params[got_keys[i]].data(ctx), ndg_test::values(want_params[want_keys[i]].data(mx::cpu())),
                  tol, tol);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sync_batch_norm_layer)

BOOST_AUTO_TEST_CASE(trains_as_batch_norm_on_one_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const bool hybridized : {false, true}) {
      BOOST_TEST_CONTEXT((hybridized ? "hybridized" : "eager")) {
        nn::Sequential bn = make_net<nn::BatchNorm>(), sync = make_net<gluon::contrib::nn::SyncBatchNorm>();
        bn.initialize(mx::init::Xavier(), {mx::cpu()});
        copy_parameters(bn, sync, {ctx});
        if (hybridized) sync.hybridize();
        gluon::Trainer bn_trainer(bn.collect_params(), "sgd", {{"learning_rate", 0.1}});
        gluon::Trainer sync_trainer(sync.collect_params(), "sgd", {{"learning_rate", 0.1}});
        for (unsigned step = 0; step < 3; ++step) {
          const nd::NDArray x = random_array({6, 2, 5, 5}, 10 + step), r = random_array({6, 3}, 20 + step);
          train_step(bn, bn_trainer, x, r, {mx::cpu()});
          train_step(sync, sync_trainer, x, r, {ctx});
        }
        check_same_parameters(sync, bn, ctx, 1e-4);
        const nd::NDArray x = random_array({4, 2, 5, 5}, 30);
        check_close(sync(x.copyto(ctx)), ndg_test::values(bn(x)), 1e-4, 1e-5);  // prediction: running statistics
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(exports_as_mxnet_contrib_sync_batch_norm_and_imports) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net = make_net<gluon::contrib::nn::SyncBatchNorm>();
    net.initialize(mx::init::Xavier(), {ctx});
    net.hybridize();
    const nd::NDArray x = random_array({2, 2, 5, 5}, 40).copyto(ctx);
    const nd::NDArray y = net(x);
    const ndg_test::TempDir dir;
    net.export_model(dir.file("net"));
    const std::string json = ndg_test::read_bytes(dir.file("net-symbol.json"));
    const std::string layer = net.at<gluon::contrib::nn::SyncBatchNorm>(1).prefix();
    for (const std::string& part : {std::string("\"op\": \"_contrib_SyncBatchNorm\""), std::string("\"ndev\": \"1\""),
                                    "\"key\": \"" + layer + "\""}) {
      BOOST_TEST(json.find(part) != std::string::npos, "symbol JSON lacks " << part);
    }
    const auto saved = nd::load(dir.file("net-0000.params")).as_map();
    BOOST_TEST(saved.count("aux:" + layer + "running_mean") == 1u);
    BOOST_TEST(saved.count("arg:" + layer + "gamma") == 1u);
    auto imported = nn::SymbolBlock::imports(dir.file("net-symbol.json"), {"data"}, dir.file("net-0000.params"), ctx);
    check_close(imported(x), ndg_test::values(y), 1e-6, 1e-7);
  });
}

BOOST_AUTO_TEST_CASE(data_parallel_steps_equal_one_context_on_the_whole_batch,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  const std::vector<mx::Context> gpus = mx::try_all_gpus();
  for (const bool hybridized : {false, true}) {
    BOOST_TEST_CONTEXT((hybridized ? "hybridized" : "eager") << " on " << gpus.size() << " GPUs") {
      nn::Sequential one = make_net<gluon::contrib::nn::SyncBatchNorm>();
      nn::Sequential parallel = make_net<gluon::contrib::nn::SyncBatchNorm>();
      one.initialize(mx::init::Xavier(), {mx::cpu()});
      copy_parameters(one, parallel, gpus);
      if (hybridized) parallel.hybridize();
      gluon::Trainer one_trainer(one.collect_params(), "sgd", {{"learning_rate", 0.1}});
      gluon::Trainer parallel_trainer(parallel.collect_params(), "sgd", {{"learning_rate", 0.1}});
      const std::int64_t batch = 3 * static_cast<std::int64_t>(gpus.size());
      for (unsigned step = 0; step < 3; ++step) {
        const nd::NDArray x = random_array({batch, 2, 5, 5}, 50 + step), r = random_array({batch, 3}, 60 + step);
        train_step(one, one_trainer, x, r, {mx::cpu()});
        train_step(parallel, parallel_trainer, x, r, gpus);
      }
      // Parameters and the running statistics, the same on every GPU as on the one context.
      for (mx::Context gpu : gpus) check_same_parameters(parallel, one, gpu, 1e-4);
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_options_are_value_errors) {
  NDG_CHECK_THROWS_WITH(gluon::contrib::nn::SyncBatchNorm({.axis = 3}), mx::ValueError, "SyncBatchNorm", "axis 3");
  NDG_CHECK_THROWS_WITH(gluon::contrib::nn::SyncBatchNorm({}, -1), mx::ValueError, "SyncBatchNorm", "num_devices");
  NDG_CHECK_THROWS_WITH(gluon::contrib::nn::SyncBatchNorm({.epsilon = 0}), mx::ValueError, "SyncBatchNorm", "epsilon");
}

BOOST_AUTO_TEST_SUITE_END()
