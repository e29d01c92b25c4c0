// The Trainer's gradient buckets (Note [gradient buckets] in gluon/trainer.hpp): the all-reduce of
// data-parallel gradients started during backward gives, bit for bit, what the sum after backward
// gives, and the gradients are the sums once the last context's backward has returned.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/dist/collective.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;

namespace {

constexpr std::int64_t kIn = 32;

// Dense 32->64->16->4 (weights 8 KiB, 4 KiB, 256 B), the same values on every context; or
// in->hidden->16->4.
nn::Sequential make_net(const std::vector<mx::Context>& ctxs, unsigned seed = 7, std::int64_t in = kIn,
                        std::int64_t hidden = 64) {
  nn::Sequential net;
  net.add(nn::Dense(hidden, "relu", true, in), nn::Dense(16, "tanh", true, hidden), nn::Dense(4, "", true, 16));
  net.initialize(mx::init::Zero(), ctxs);
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> u(-0.4f, 0.4f);
  for (auto& [name, param] : net.collect_params()) {
    std::vector<float> v(static_cast<std::size_t>(param.shape().numel()));
    for (float& x : v) x = u(engine);
    param.set_data(nd::array(v, param.shape(), mx::cpu()));
  }
  return net;
}

struct Batch {
  nd::NDArray x, y;  // on cpu(0)
};

Batch make_batch(std::int64_t n, unsigned seed, std::int64_t in = kIn) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n * in)), y(static_cast<std::size_t>(n));
  for (float& v : x) v = normal(engine);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 5 + seed) % 4);
  return {nd::array(x, {n, in}, mx::cpu()), nd::array(y, {n}, mx::cpu())};
}

// One backward per context, each on its own rows of the batch (as the README's loop).
void backward_on_each(nn::Sequential& net, const Batch& b, const std::vector<mx::Context>& ctxs) {
  const gluon::loss::SoftmaxCrossEntropyLoss loss;
  const std::int64_t per = b.x.shape()[0] / static_cast<std::int64_t>(ctxs.size());
  auto scope = ag::record();
  for (std::size_t k = 0; k < ctxs.size(); ++k) {
    const std::int64_t r = static_cast<std::int64_t>(k) * per;
    nd::NDArray l = loss(net(b.x.slice(r, r + per).copyto(ctxs[k])), b.y.slice(r, r + per).copyto(ctxs[k]));
    l.backward();
  }
}

std::vector<std::vector<float>> values(const gluon::ParameterDict& params, mx::Context ctx, bool grads = false) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, param] : params) out.push_back((grads ? param.grad(ctx) : param.data(ctx)).asvector<float>());
  return out;
}

gluon::HyperParams sgd_with_buckets(double cap_mb) {
  return {{"learning_rate", 0.3}, {"momentum", 0.9}, {"wd", 0.001}, {"bucket_cap_mb", cap_mb}};
}

bool nccl_gpus() { return nd::built_with_nccl() && mx::num_gpus() >= 2; }

// Parameters of bucketed and unbucketed training: equal bit for bit over two GPUs, where every
// sum is a + b whatever NCCL's grouping; over more, NCCL may add in another order when the tensors
// are grouped otherwise, so within float rounding.
void check_same(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b, std::size_t gpus) {
  for (std::size_t q = 0; q < a.size(); ++q) {
    if (gpus == 2) {
      BOOST_TEST(a[q] == b[q], tt::per_element());
      continue;
    }
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < a[q].size(); ++i) {
      diff += (double(a[q][i]) - b[q][i]) * (double(a[q][i]) - b[q][i]);
      norm += double(b[q][i]) * b[q][i];
    }
    BOOST_TEST(std::sqrt(diff) <= 1e-5 * std::sqrt(norm), "parameter " << q);
  }
}

// {gpu(0), gpu(1)}, {gpu(1), gpu(0)}, and every GPU when there are more.
std::vector<std::vector<mx::Context>> gpu_sets() {
  std::vector<std::vector<mx::Context>> sets = {{mx::gpu(0), mx::gpu(1)}, {mx::gpu(1), mx::gpu(0)}};
  if (mx::num_gpus() > 2) sets.push_back(mx::try_all_gpus());
  return sets;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gradient_buckets)

BOOST_AUTO_TEST_CASE(bucket_cap_mb_must_be_a_size) {
  nn::Sequential net = make_net({mx::cpu()});
  for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    NDG_CHECK_THROWS_WITH(gluon::Trainer(net.collect_params(), "sgd", {{"bucket_cap_mb", bad}}), mx::ValueError,
                          "bucket_cap_mb", "MiB");
  }
  // The Trainer's own setting: not handed to the optimizer (which would refuse an unknown one).
  BOOST_CHECK_NO_THROW(gluon::Trainer(net.collect_params(), "adam", {{"bucket_cap_mb", 0}}));
}

BOOST_AUTO_TEST_CASE(one_copy_per_parameter_has_no_buckets) {
  // Nothing to sum across contexts: every step is the plain update, on every context.
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net = make_net({ctx});
    gluon::Trainer trainer(net.collect_params(), "sgd", sgd_with_buckets(25));
    BOOST_TEST(trainer.bucket_layout().empty());
    backward_on_each(net, make_batch(8, 1), {ctx});
    trainer.step(8);
    BOOST_TEST(trainer.bucket_layout().empty());
  });
}

BOOST_AUTO_TEST_CASE(cpu_and_gpu_copies_are_summed_in_step, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  nn::Sequential net = make_net({mx::cpu(), mx::gpu(0)});
  gluon::Trainer trainer(net.collect_params(), "sgd", sgd_with_buckets(25));
  BOOST_TEST(trainer.bucket_layout().empty());  // NCCL sums GPU copies only
}

BOOST_AUTO_TEST_CASE(buckets_take_the_parameters_in_reverse_order_up_to_the_cap,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  if (!nd::built_with_nccl()) return;  // summed in step through peer copies: no buckets
  nn::Sequential net = make_net({mx::gpu(0), mx::gpu(1)});
  const std::vector<std::string> n = net.collect_params().keys();  // w0 b0 w1 b1 w2 b2
  BOOST_REQUIRE_EQUAL(n.size(), 6u);
  // 4194 bytes: b2 (16) + w2 (256) + b1 (64) = 336 < 4194, then w1 (4096) closes the first bucket.
  gluon::Trainer trainer(net.collect_params(), "sgd", sgd_with_buckets(0.004));
  const std::vector<std::vector<std::string>> want = {{n[5], n[4], n[3], n[2]}, {n[1], n[0]}};
  const std::vector<std::vector<std::string>> got = trainer.bucket_layout();
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (std::size_t b = 0; b < want.size(); ++b) BOOST_TEST(got[b] == want[b], tt::per_element());
  // 25 MiB: one bucket of everything (the first closes at 1 MiB; all of this is 13 KiB).
  gluon::Trainer big(net.collect_params(), "sgd", sgd_with_buckets(25));
  BOOST_REQUIRE_EQUAL(big.bucket_layout().size(), 1u);
  BOOST_TEST(big.bucket_layout()[0].size() == 6u);
  // Without bucket_cap_mb, a process driving several GPUs buckets where its sums run on the copy
  // engines (kvstore "device", peer access), and else sums after backward (Note [gradient buckets]).
  const gluon::HyperParams plain = {{"learning_rate", 0.1}};
  BOOST_TEST(gluon::Trainer(net.collect_params(), "sgd", plain).bucket_layout().empty() ==
             !nd::overlap::copy_engines({mx::gpu(0), mx::gpu(1)}));
  BOOST_TEST(gluon::Trainer(net.collect_params(), "sgd", plain, "nccl").bucket_layout().empty());
  // No buckets with 0, nor with peer copies.
  BOOST_TEST(gluon::Trainer(net.collect_params(), "sgd", sgd_with_buckets(0)).bucket_layout().empty());
  BOOST_TEST(gluon::Trainer(net.collect_params(), "sgd", sgd_with_buckets(25), "p2p").bucket_layout().empty());
}

BOOST_AUTO_TEST_CASE(gradients_are_the_sums_once_the_last_backward_returns,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  if (!nccl_gpus()) return;
  const std::vector<mx::Context> gpus = mx::try_all_gpus();
  nn::Sequential net = make_net(gpus), plain = make_net(gpus);
  gluon::Trainer trainer(net.collect_params(), "sgd", sgd_with_buckets(0.004));
  gluon::Trainer plain_trainer(plain.collect_params(), "sgd", sgd_with_buckets(0));
  const Batch batch = make_batch(8 * static_cast<std::int64_t>(gpus.size()), 3);
  backward_on_each(net, batch, gpus);
  // Copies queued on each GPU as soon as backward returns: they come after the sums.
  std::vector<std::vector<nd::NDArray>> copies;
  for (mx::Context gpu : gpus) {
    copies.emplace_back();
    for (const auto& [name, param] : net.collect_params()) copies.back().push_back(param.grad(gpu).copy());
  }
  backward_on_each(plain, batch, gpus);
  // The local gradients of the plain net, summed here on the host.
  const gluon::ParameterDict p = plain.collect_params();
  std::vector<std::vector<float>> sums = values(p, gpus[0], true);
  for (std::size_t k = 1; k < gpus.size(); ++k) {
    const auto local = values(p, gpus[k], true);
    for (std::size_t q = 0; q < sums.size(); ++q) {
      for (std::size_t i = 0; i < sums[q].size(); ++i) sums[q][i] += local[q][i];
    }
  }
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    BOOST_TEST_CONTEXT("gradients on " << gpus[k].str() << " after every context's backward") {
      const auto got = values(net.collect_params(), gpus[k], true);
      for (std::size_t q = 0; q < got.size(); ++q) {
        const std::vector<float> copied = copies[k][q].asvector<float>();
        double worst = 0;
        for (std::size_t i = 0; i < got[q].size(); ++i) {
          worst = std::max({worst, double(std::abs(got[q][i] - sums[q][i])), double(std::abs(copied[i] - sums[q][i]))});
        }
        BOOST_TEST(worst <= 1e-6, "parameter " << q << ": worst difference " << worst);
      }
    }
  }
  // step sums nothing twice: both nets end equal.
  trainer.step(batch.x.shape()[0]);
  plain_trainer.step(batch.x.shape()[0]);
  for (mx::Context gpu : gpus) check_same(values(net.collect_params(), gpu), values(plain.collect_params(), gpu), gpus.size());
}

// Steps through buckets and steps that sum everything after backward, side by side: equal (see
// check_same), also for a backward run twice per context in a step (the second pass's gradients), for
// parameters a step's backward does not reach (summed in step as they stand), and after the
// parameters are re-initialised (the buckets are made again).
BOOST_AUTO_TEST_CASE(bucketed_steps_equal_steps_summed_after_backward_bit_for_bit,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  if (!nccl_gpus()) return;
  for (const std::vector<mx::Context>& gpus : gpu_sets()) {
    BOOST_TEST_CONTEXT("on " << mx::to_string(gpus)) {
      nn::Sequential net = make_net(gpus), plain = make_net(gpus);
      nn::Sequential extra = make_net(gpus, 9), plain_extra = make_net(gpus, 9);  // trained in some steps only
      gluon::ParameterDict params = net.collect_params(), plain_params = plain.collect_params();
      for (const auto& [name, param] : extra.collect_params()) params.add(param);
      for (const auto& [name, param] : plain_extra.collect_params()) plain_params.add(param);
      gluon::Trainer trainer(params, "sgd", sgd_with_buckets(0.004));
      gluon::Trainer plain_trainer(plain_params, "sgd", sgd_with_buckets(0));
      BOOST_TEST(trainer.bucket_layout().size() >= 3u);
      const std::int64_t n = 6 * static_cast<std::int64_t>(gpus.size());
      for (unsigned step = 0; step < 12; ++step) {
        if (step == 8) {  // new variables and gradient buffers: the Trainer buckets them again
          for (auto* p : {&params, &plain_params}) p->initialize(mx::init::Constant(0.05), gpus, true);
        }
        const Batch batch = make_batch(n, 40 + step);
        for (auto [model, other] : {std::pair{&net, &extra}, std::pair{&plain, &plain_extra}}) {
          backward_on_each(*model, batch, gpus);
          if (step % 3 == 1) backward_on_each(*model, make_batch(n, 90 + step), gpus);  // written again
          if (step % 2 == 0) backward_on_each(*other, batch, gpus);  // else not reached this step
        }
        trainer.step(n);
        plain_trainer.step(n);
      }
      for (mx::Context gpu : gpus) {
        BOOST_TEST_CONTEXT("parameters on " << gpu.str()) {
          check_same(values(params, gpu), values(plain_params, gpu), gpus.size());
        }
      }
    }
  }
}

// Note [updates in turn]: the first bucket's parameters (the last two layers) are updated while
// the last bucket (the first layer's 8 MiB weight) is still summed, and that bucket's update waits
// for its sum: the parameters equal those of steps that sum everything after backward.
BOOST_AUTO_TEST_CASE(each_bucket_is_updated_after_its_own_sum,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  if (!nccl_gpus()) return;
  constexpr std::int64_t kWide = 1024, kHidden = 2048;
  for (const std::vector<mx::Context>& gpus : gpu_sets()) {
    BOOST_TEST_CONTEXT("on " << mx::to_string(gpus)) {
      nn::Sequential net = make_net(gpus, 11, kWide, kHidden), plain = make_net(gpus, 11, kWide, kHidden);
      gluon::Trainer trainer(net.collect_params(), "sgd", sgd_with_buckets(0.1));
      gluon::Trainer plain_trainer(plain.collect_params(), "sgd", sgd_with_buckets(0));
      BOOST_TEST(trainer.bucket_layout().size() == 2u);
      const std::int64_t n = 4 * static_cast<std::int64_t>(gpus.size());
      for (unsigned step = 0; step < 3; ++step) {
        const Batch batch = make_batch(n, 20 + step, kWide);
        backward_on_each(net, batch, gpus);
        backward_on_each(plain, batch, gpus);
        trainer.step(n);
        plain_trainer.step(n);
      }
      for (mx::Context gpu : gpus) {
        BOOST_TEST_CONTEXT("parameters on " << gpu.str()) {
          check_same(values(net.collect_params(), gpu), values(plain.collect_params(), gpu), gpus.size());
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(allreduce_grads_then_update_equals_step,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  if (!nccl_gpus()) return;
  for (const std::vector<mx::Context>& gpus : gpu_sets()) {
    BOOST_TEST_CONTEXT("on " << mx::to_string(gpus)) {
      nn::Sequential a = make_net(gpus), b = make_net(gpus);
      gluon::Trainer split(a.collect_params(), "sgd", sgd_with_buckets(0.004));
      gluon::Trainer whole(b.collect_params(), "sgd", sgd_with_buckets(0));
      const std::int64_t n = 4 * static_cast<std::int64_t>(gpus.size());
      for (unsigned step = 0; step < 4; ++step) {
        const Batch batch = make_batch(n, 70 + step);
        backward_on_each(a, batch, gpus);
        backward_on_each(b, batch, gpus);
        split.allreduce_grads();
        split.update(n);
        whole.step(n);
      }
      for (mx::Context gpu : gpus) check_same(values(a.collect_params(), gpu), values(b.collect_params(), gpu), gpus.size());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
