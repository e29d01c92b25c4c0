// Trainer and optimizers: SGD (momentum, weight decay, rescaling, clipping) and Adam against updates
// computed here in double precision, on every context; the errors; a regression that converges;
// the same step on cpu(0) and each GPU; and data parallelism: a parameter on several contexts
// (summed gradients through NCCL and through peer copies, identical copies, the same result as one
// GPU on the whole batch).
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
#include <gluon/utils.hpp>
#include <ndarray/dist/collective.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

// Values as float32 holds them, so that the references start from the arrays' values.
Values as_float(Values v) {
  for (double& x : v) x = static_cast<float>(x);
  return v;
}

// n values uniform in [low, high], the same on every run.
Values draw(std::mt19937& engine, std::int64_t n, double low, double high) {
  std::uniform_real_distribution<double> uniform(low, high);
  Values v(static_cast<std::size_t>(n));
  for (double& x : v) x = static_cast<float>(uniform(engine));
  return v;
}

nd::NDArray float32(const Values& v, const mx::Shape& shape, mx::Context ctx) {
  return nd::array(v, shape, ctx, DType::float32);
}

// A parameter on ctxs holding `values`.
gluon::Parameter make_parameter(const std::string& name, const mx::Shape& shape, const Values& values,
                                const std::vector<mx::Context>& ctxs) {
  gluon::Parameter p(name, shape);
  p.initialize(mx::init::Zero(), ctxs);
  p.set_data(float32(values, shape, mx::cpu()));
  return p;
}

// Writes g into the parameter's gradient on ctx, as backward would.
void set_grad(const gluon::Parameter& p, mx::Context ctx, const Values& g) {
  nd::NDArray dst = p.grad(ctx);
  float32(g, p.shape(), mx::cpu()).copyto(dst);
}

// MXNet's SGD: g' = clip(rescale * g) + wd * w; mom = momentum * mom - lr * g'; w += mom
// (without momentum: w -= lr * g').
struct SgdReference {
  double lr = 0, wd = 0, momentum = 0, rescale = 1, clip = -1;
  Values mom{};  // the momentum state
  void step(Values& w, const Values& g) {
    mom.resize(w.size(), 0.0);
    for (std::size_t i = 0; i < w.size(); ++i) {
      double gi = rescale * g[i];
      if (clip > 0) gi = std::clamp(gi, -clip, clip);
      gi += wd * w[i];
      mom[i] = momentum * mom[i] - lr * gi;
      w[i] += mom[i];
    }
  }
};

// MXNet's Adam: g' = clip(rescale * g) + wd * w; m = b1 m + (1 - b1) g'; v = b2 v + (1 - b2) g'²;
// lr_t = lr sqrt(1 - b2^t) / (1 - b1^t); w -= lr_t m / (sqrt(v) + eps).
struct AdamReference {
  double lr = 0, wd = 0, rescale = 1, clip = -1, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  Values m{}, v{};  // the moment estimates
  int t = 0;
  void step(Values& w, const Values& g) {
    m.resize(w.size(), 0.0);
    v.resize(w.size(), 0.0);
    ++t;
    const double lr_t = lr * std::sqrt(1 - std::pow(beta2, t)) / (1 - std::pow(beta1, t));
    for (std::size_t i = 0; i < w.size(); ++i) {
      double gi = rescale * g[i];
      if (clip > 0) gi = std::clamp(gi, -clip, clip);
      gi += wd * w[i];
      m[i] = beta1 * m[i] + (1 - beta1) * gi;
      v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
      w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
    }
  }
};

// Weights and three steps of gradients for a (2, 3) weight and a (3,) bias.
const Values kWeight0 = as_float({0.5, -1.25, 2.0, 0.75, -0.1, 1.5});
const Values kBias0 = as_float({0.2, -0.3, 0.05});
const std::vector<Values> kWeightGrads = {as_float({1.0, -2.0, 0.5, 3.0, -0.25, 0.0}),
                                          as_float({-0.5, 1.5, 2.5, -1.0, 0.75, 4.0}),
                                          as_float({2.0, 0.25, -3.0, 0.5, -1.5, -2.0})};
const std::vector<Values> kBiasGrads = {as_float({0.3, -0.6, 1.2}), as_float({-2.0, 0.1, 0.4}),
                                        as_float({0.9, 0.9, -0.7})};

// Runs three steps of `optimizer` on a weight and a bias on ctx, checking both against the
// references after every step.
template <class Reference>
void check_three_steps(mx::Context ctx, const std::string& optimizer, const gluon::HyperParams& params,
                       std::int64_t batch_size, Reference weight_ref, Reference bias_ref) {
  gluon::Parameter weight = make_parameter("weight", {2, 3}, kWeight0, {ctx});
  gluon::Parameter bias = make_parameter("bias", {3}, kBias0, {ctx});
  gluon::ParameterDict dict;
  dict.add(weight);
  dict.add(bias);
  gluon::Trainer trainer(dict, optimizer, params);
  Values w = kWeight0, b = kBias0;
  for (std::size_t t = 0; t < 3; ++t) {
    BOOST_TEST_CONTEXT("step " << t + 1) {
      set_grad(weight, ctx, kWeightGrads[t]);
      set_grad(bias, ctx, kBiasGrads[t]);
      trainer.step(batch_size);
      weight_ref.step(w, kWeightGrads[t]);
      bias_ref.step(b, kBiasGrads[t]);
      BOOST_TEST(weight.data(ctx).context() == ctx);
      check_close(weight.data(ctx), w);
      check_close(bias.data(ctx), b);
      // The step reads the gradients and leaves them as they were.
      check_close(weight.grad(ctx), kWeightGrads[t], 0, 0);
    }
  }
  // Not trivially right: the weights moved.
  Values moved = weight.data(ctx).asvector<double>();
  double distance = 0;
  for (std::size_t i = 0; i < moved.size(); ++i) distance += std::abs(moved[i] - kWeight0[i]);
  BOOST_TEST(distance > 1e-2);
}

// y = X · true_w + true_b for a fixed X (batch, 3) with values in [-1, 1].
struct Regression {
  static constexpr std::int64_t batch = 32, features = 3;
  Values x, y;
  Values true_w{2.0, -3.4, 1.7};
  double true_b = 4.2;
  Regression() {
    std::mt19937 engine(42);
    x = draw(engine, batch * features, -1, 1);
    for (std::int64_t i = 0; i < batch; ++i) {
      double yi = true_b;
      for (std::int64_t k = 0; k < features; ++k) {
        yi += x[static_cast<std::size_t>(i * features + k)] * true_w[static_cast<std::size_t>(k)];
      }
      y.push_back(yi);
    }
  }
};

// A small classifier with fixed parameter values.
nn::Sequential make_mlp(const std::vector<mx::Context>& ctxs) {
  nn::Sequential net;
  net.add(nn::Dense(8, "tanh", true, 4), nn::Dense(3, "", true, 8));
  net.initialize(mx::init::Zero(), ctxs);
  std::mt19937 engine(5);
  for (auto& [name, param] : net.collect_params()) {
    param.set_data(float32(draw(engine, param.shape().numel(), -0.7, 0.7), param.shape(), mx::cpu()));
  }
  return net;
}

struct Batch {
  Values x, labels;
  std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
};

Batch make_batch(std::int64_t n, unsigned seed) {
  std::mt19937 engine(seed);
  Batch b;
  b.x = draw(engine, n * 4, -2, 2);
  for (std::int64_t i = 0; i < n; ++i) b.labels.push_back(static_cast<double>((i * 7 + seed) % 3));
  return b;
}

// Rows [begin, end) of the batch.
Batch rows(const Batch& b, std::int64_t begin, std::int64_t end) {
  Batch part;
  part.x.assign(b.x.begin() + begin * 4, b.x.begin() + end * 4);
  part.labels.assign(b.labels.begin() + begin, b.labels.begin() + end);
  return part;
}

// Forward and backward of the summed cross-entropy of the batch on ctx; returns the loss sum.
double forward_backward(nn::Sequential& net, const Batch& b, mx::Context ctx) {
  const gluon::loss::SoftmaxCrossEntropyLoss loss;
  nd::NDArray l;
  {
    auto scope = ag::record();
    l = loss(net(float32(b.x, {b.size(), 4}, ctx)), float32(b.labels, {b.size()}, ctx));
    l.backward();
  }
  return l.sum().asscalar<double>();
}

// The values of every parameter of net on ctx, in order.
std::vector<Values> parameter_values(const nn::Sequential& net, mx::Context ctx) {
  std::vector<Values> values;
  for (const auto& [name, param] : net.collect_params()) values.push_back(param.data(ctx).asvector<double>());
  return values;
}

// A parameter initialised on every context of ctxs, each context getting part of a batch: after
// allreduce_grads every copy holds the sum of the gradients, and after the update every copy holds
// the same values, those of one context trained on the whole batch.
// Data-parallel steps over ctxs (each context one share of the batch, gradients summed through
// `kvstore`) against the same steps on the whole batch on reference_ctx alone.
void check_data_parallel_steps(const std::vector<mx::Context>& ctxs, const std::string& kvstore = "device",
                               mx::Context reference_ctx = mx::cpu()) {
  const std::int64_t per_context = 3, n = per_context * static_cast<std::int64_t>(ctxs.size());
  nn::Sequential net = make_mlp(ctxs), reference = make_mlp({reference_ctx});
  const gluon::HyperParams sgd{{"learning_rate", 0.5}, {"momentum", 0.9}, {"wd", 0.01}};
  gluon::Trainer trainer(net.collect_params(), "sgd", sgd, kvstore);
  gluon::Trainer reference_trainer(reference.collect_params(), "sgd", sgd);
  const bool all_gpus = std::none_of(ctxs.begin(), ctxs.end(), [](mx::Context c) { return c == mx::cpu(); });
  for (unsigned step = 0; step < 3; ++step) {
    BOOST_TEST_CONTEXT("step " << step + 1) {
      const Batch batch = make_batch(n, 100 + step);
      // Each context's share, all recorded before any reduction (as a training loop does).
      for (std::size_t k = 0; k < ctxs.size(); ++k) {
        const auto begin = static_cast<std::int64_t>(k) * per_context;
        forward_backward(net, rows(batch, begin, begin + per_context), ctxs[k]);
      }
      // With gradient buckets (one process's GPUs whose sums run on the copy engines: Note [gradient
      // buckets]) backward has summed the gradients already; else each context holds its own.
      const bool summed_in_backward = !trainer.bucket_layout().empty();
      std::vector<std::vector<Values>> local;  // [parameter][context]
      for (const auto& [name, param] : net.collect_params()) {
        local.emplace_back();
        for (const nd::NDArray& g : param.list_grad()) local.back().push_back(g.asvector<double>());
      }
      forward_backward(reference, batch, reference_ctx);
      trainer.allreduce_grads();
      // The reference net has other global names: pair parameters by position.
      std::vector<gluon::Parameter> reference_params;
      for (const auto& [ref_name, ref_param] : reference.collect_params()) reference_params.push_back(ref_param);
      std::size_t p = 0;
      for (const auto& [name, param] : net.collect_params()) {
        BOOST_TEST_CONTEXT(name) {
          Values sum = local[p][0];
          for (std::size_t k = 1; k < local[p].size() && !summed_in_backward; ++k) {
            for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += local[p][k][i];
          }
          const Values whole = reference_params[p].grad(reference_ctx).asvector<double>();
          BOOST_TEST(ndg_test::relative_error(sum, whole) < 1e-5);
          for (mx::Context ctx : ctxs) {
            BOOST_TEST_CONTEXT("on " << ctx.str()) {
              const Values reduced = param.grad(ctx).asvector<double>();
              BOOST_TEST(ndg_test::relative_error(reduced, sum) < 1e-6);
              // Every copy gets the one sum.
              BOOST_TEST(reduced == param.grad(ctxs[0]).asvector<double>(), tt::per_element());
            }
          }
        }
        ++p;
      }
      trainer.update(n);
      reference_trainer.step(n);
      const auto want = parameter_values(reference, reference_ctx);
      const auto first = parameter_values(net, ctxs[0]);
      for (mx::Context ctx : ctxs) {
        BOOST_TEST_CONTEXT("on " << ctx.str()) {
          const auto got = parameter_values(net, ctx);
          for (std::size_t q = 0; q < got.size(); ++q) {
            BOOST_TEST(ndg_test::relative_error(got[q], want[q]) < 1e-5, "parameter " << q);
            // The copies are the same: bit for bit on one kind of device (CPU and GPU arithmetic
            // may round the update differently).
            if (all_gpus) {
              BOOST_TEST(got[q] == first[q], tt::per_element());
            } else {
              BOOST_TEST(ndg_test::relative_error(got[q], first[q]) < 1e-6, "parameter " << q);
            }
          }
        }
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trainer)

// ---- updates against hand-computed values --------------------------------------------------------

BOOST_AUTO_TEST_CASE(sgd_with_momentum_and_weight_decay_matches_the_reference) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // rescale = 1 / batch_size = 1/4.
    SgdReference ref{.lr = 0.1, .wd = 0.01, .momentum = 0.9, .rescale = 0.25};
    check_three_steps(ctx, "sgd", {{"learning_rate", 0.1}, {"wd", 0.01}, {"momentum", 0.9}}, 4, ref, ref);
  });
}

BOOST_AUTO_TEST_CASE(sgd_step_by_hand) {
  // One weight of 1 with gradient 8, batch 4, lr 0.5, wd 0.1, momentum 0.5:
  //   g' = 8/4 + 0.1·1 = 2.1; mom = -0.5·2.1 = -1.05; w = -0.05.
  //   then gradient 4: g' = 1 + 0.1·(-0.05) = 0.995; mom = 0.5·(-1.05) - 0.5·0.995 = -1.0225; w = -1.0725.
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter w = make_parameter("w", {1}, {1.0}, {ctx});
    gluon::ParameterDict dict;
    dict.add(w);
    gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 0.5}, {"wd", 0.1}, {"momentum", 0.5}});
    set_grad(w, ctx, {8.0});
    trainer.step(4);
    check_close(w.data(ctx), {-0.05});
    set_grad(w, ctx, {4.0});
    trainer.step(4);
    check_close(w.data(ctx), {-1.0725});
  });
}

BOOST_AUTO_TEST_CASE(sgd_without_momentum_matches_the_reference) {
  ndg_test::for_each_context([](mx::Context ctx) {
    SgdReference ref{.lr = 0.2, .wd = 0.05, .rescale = 0.5};
    check_three_steps(ctx, "sgd", {{"learning_rate", 0.2}, {"wd", 0.05}}, 2, ref, ref);
    // rescale_grad multiplies 1 / batch_size: 3 / 6 = 0.5 again.
    SgdReference same{.lr = 0.2, .wd = 0.05, .rescale = 0.5};
    check_three_steps(ctx, "sgd", {{"learning_rate", 0.2}, {"wd", 0.05}, {"rescale_grad", 3.0}}, 6, same, same);
  });
}

BOOST_AUTO_TEST_CASE(adam_matches_mxnet_formula_with_bias_correction) {
  ndg_test::for_each_context([](mx::Context ctx) {
    AdamReference ref{.lr = 0.01, .wd = 0.001, .rescale = 0.25};
    check_three_steps(ctx, "adam", {{"learning_rate", 0.01}, {"wd", 0.001}, {"rescale_grad", 0.5}}, 2, ref, ref);
    AdamReference other{.lr = 0.05, .rescale = 1.0 / 3, .beta1 = 0.8, .beta2 = 0.99, .epsilon = 1e-3};
    check_three_steps(ctx, "adam",
                      {{"learning_rate", 0.05}, {"beta1", 0.8}, {"beta2", 0.99}, {"epsilon", 1e-3}}, 3, other, other);
  });
}

BOOST_AUTO_TEST_CASE(adam_first_step_moves_each_weight_by_the_learning_rate) {
  // At t = 1: m = (1-b1) g, v = (1-b2) g², lr_t = lr sqrt(1-b2) / (1-b1), so the step is
  // lr g / (|g| + eps / sqrt(1-b2)) ≈ lr sign(g).
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter w = make_parameter("w", {4}, {1, 1, 1, 1}, {ctx});
    gluon::ParameterDict dict;
    dict.add(w);
    gluon::Trainer trainer(dict, "adam", {{"learning_rate", 0.1}});
    BOOST_TEST(trainer.learning_rate() == 0.1);
    set_grad(w, ctx, {3, -0.5, 20, -1e-2});
    trainer.step(1);
    check_close(w.data(ctx), {0.9, 1.1, 0.9, 1.1}, 1e-5, 1e-5);
  });
}

BOOST_AUTO_TEST_CASE(clip_gradient_bounds_the_rescaled_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    // Gradients [4, -0.6, 0.2, -3] rescaled by 1/2: [2, -0.3, 0.1, -1.5]; clipped to ±0.5:
    // [0.5, -0.3, 0.1, -0.5]; then weight decay 0.1 · 1 is added after clipping.
    gluon::Parameter w = make_parameter("w", {4}, {1, 1, 1, 1}, {ctx});
    gluon::ParameterDict dict;
    dict.add(w);
    gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 1.0}, {"clip_gradient", 0.5}, {"wd", 0.1}});
    set_grad(w, ctx, {4, -0.6, 0.2, -3});
    trainer.step(2);
    check_close(w.data(ctx), {0.4, 1.2, 0.8, 1.4});
    // Three steps of each optimizer with clipping against the references.
    SgdReference sgd{.lr = 0.1, .wd = 0.01, .momentum = 0.9, .rescale = 0.5, .clip = 0.6};
    check_three_steps(ctx, "sgd", {{"learning_rate", 0.1}, {"wd", 0.01}, {"momentum", 0.9}, {"clip_gradient", 0.6}}, 2,
                      sgd, sgd);
    AdamReference adam{.lr = 0.01, .rescale = 0.5, .clip = 0.4};
    check_three_steps(ctx, "adam", {{"learning_rate", 0.01}, {"clip_gradient", 0.4}}, 2, adam, adam);
  });
}

BOOST_AUTO_TEST_CASE(set_learning_rate_applies_to_the_next_step) {
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter w = make_parameter("w", {2}, {1, -1}, {ctx});
    gluon::ParameterDict dict;
    dict.add(w);
    gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 0.1}});
    BOOST_TEST(trainer.learning_rate() == 0.1);
    set_grad(w, ctx, {1, 2});
    trainer.step(1);
    check_close(w.data(ctx), {0.9, -1.2});
    trainer.set_learning_rate(0.5);
    BOOST_TEST(trainer.learning_rate() == 0.5);
    BOOST_TEST(trainer.optimizer().learning_rate() == 0.5);
    trainer.step(1);
    check_close(w.data(ctx), {0.4, -2.2});
  });
}

BOOST_AUTO_TEST_CASE(parameters_with_grad_req_null_are_not_updated) {
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter frozen("frozen", {2}, DType::float32, "null");
    frozen.initialize(mx::init::Constant(3), {ctx});
    gluon::Parameter w = make_parameter("w", {2}, {1, 1}, {ctx});
    gluon::ParameterDict dict;
    dict.add(frozen);
    dict.add(w);
    gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 1.0}, {"momentum", 0.9}});
    set_grad(w, ctx, {0.5, -0.5});
    trainer.step(1);
    check_close(frozen.data(ctx), {3, 3}, 0, 0);
    check_close(w.data(ctx), {0.5, 1.5});
  });
}

BOOST_AUTO_TEST_CASE(freezing_a_parameter_keeps_the_others_momentum) {
  // Momentum state belongs to its parameter: freezing `a` (before `b` in the dict) must not hand
  // `b` a's state. lr 1, momentum 0.5, batch 1:
  //   step 1: b grad 1 -> mom -1, b = 1 - 1 = 0; a grad 2 -> mom_a -2, a = -1.
  //   a frozen; step 2: b grad 1 -> mom 0.5·(-1) - 1 = -1.5, b = -1.5.
  //   a trainable again; step 3: a grad 0 -> mom_a 0.5·(-2) = -1, a = -2; b grad 0 -> -0.75, b = -2.25.
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter a = make_parameter("a", {2}, {1, 1}, {ctx});
    gluon::Parameter b = make_parameter("b", {3}, {1, 1, 1}, {ctx});
    gluon::ParameterDict dict;
    dict.add(a);
    dict.add(b);
    gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 1.0}, {"momentum", 0.5}});
    set_grad(a, ctx, {2, 2});
    set_grad(b, ctx, {1, 1, 1});
    trainer.step(1);
    check_close(a.data(ctx), {-1, -1});
    check_close(b.data(ctx), {0, 0, 0});
    a.set_grad_req("null");
    trainer.step(1);
    check_close(a.data(ctx), {-1, -1});
    check_close(b.data(ctx), {-1.5, -1.5, -1.5});
    a.set_grad_req("write");
    set_grad(a, ctx, {0, 0});
    set_grad(b, ctx, {0, 0, 0});
    trainer.step(1);
    check_close(a.data(ctx), {-2, -2});
    check_close(b.data(ctx), {-2.25, -2.25, -2.25});
  });
}

BOOST_AUTO_TEST_CASE(momentum_follows_a_parameter_moved_with_reset_ctx,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  // As sgd_step_by_hand, with the parameter moved from gpu(0) to cpu(0) between the two steps:
  // the momentum moves with it, and the second step gives -1.0725 as before.
  gluon::Parameter w = make_parameter("w", {1}, {1.0}, {mx::gpu(0)});
  gluon::ParameterDict dict;
  dict.add(w);
  gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 0.5}, {"wd", 0.1}, {"momentum", 0.5}});
  set_grad(w, mx::gpu(0), {8.0});
  trainer.step(4);
  check_close(w.data(mx::gpu(0)), {-0.05});
  w.reset_ctx({mx::cpu()});
  set_grad(w, mx::cpu(), {4.0});
  trainer.step(4);
  check_close(w.data(mx::cpu()), {-1.0725});
}

// ---- errors --------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(unknown_optimizer_and_hyper_parameter_list_the_valid_names) {
  gluon::Parameter w = make_parameter("w", {2}, {1, 1}, {mx::cpu()});
  gluon::ParameterDict dict;
  dict.add(w);
  NDG_CHECK_THROWS_WITH(gluon::Trainer(dict, "rmsprob"), mx::ValueError, "rmsprob", "adam", "rmsprop", "sgd");
  BOOST_CHECK_NO_THROW(gluon::Trainer(dict, "SGD"));  // MXNet's registry ignores case
  NDG_CHECK_THROWS_WITH(gluon::Trainer(dict, "sgd", {{"beta1", 0.9}}), mx::ValueError, "beta1", "learning_rate", "wd",
                        "momentum", "clip_gradient", "rescale_grad");
  NDG_CHECK_THROWS_WITH(gluon::Trainer(dict, "sgd", {{"lr", 0.1}}), mx::ValueError, "'lr'", "learning_rate");
  NDG_CHECK_THROWS_WITH(gluon::Trainer(dict, "adam", {{"momentum", 0.9}}), mx::ValueError, "momentum", "beta1", "beta2",
                        "epsilon", "learning_rate", "wd", "clip_gradient", "rescale_grad");
  NDG_CHECK_THROWS_WITH(gluon::Optimizer::create("adagradd", {}), mx::ValueError, "adagradd", "adagrad, adam");
  gluon::Trainer trainer(dict, "sgd");
  NDG_CHECK_THROWS_WITH(trainer.step(0), mx::ValueError, "batch_size", "0");
  NDG_CHECK_THROWS_WITH(trainer.update(-2), mx::ValueError, "Trainer::update", "batch_size", "-2");
  // The weights were left alone.
  check_close(w.data(mx::cpu()), {1, 1}, 0, 0);
}

BOOST_AUTO_TEST_CASE(hyper_parameters_out_of_range_are_value_errors_naming_the_value) {
  gluon::Parameter w = make_parameter("w", {2}, {1, -1}, {mx::cpu()});
  gluon::ParameterDict dict;
  dict.add(w);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::string optimizer;
    gluon::HyperParams params;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"sgd", {{"learning_rate", -1}}, {"sgd", "Invalid learning rate: -1", "learning_rate", ">= 0"}},
      {"sgd", {{"learning_rate", nan}}, {"Invalid learning rate: nan"}},
      {"adam", {{"learning_rate", inf}}, {"adam", "Invalid learning rate: inf"}},
      {"sgd", {{"wd", -0.5}}, {"Invalid weight decay: -0.5", "wd"}},
      {"adam", {{"wd", nan}}, {"Invalid weight decay: nan"}},
      {"sgd", {{"momentum", 1}}, {"Invalid momentum value: 1", "[0, 1)"}},
      {"sgd", {{"momentum", -0.1}}, {"Invalid momentum value: -0.1"}},
      {"sgd", {{"momentum", nan}}, {"Invalid momentum value: nan"}},
      {"adam", {{"beta1", 1}}, {"adam", "Invalid beta1 value: 1", "[0, 1)"}},
      {"adam", {{"beta1", -0.25}}, {"Invalid beta1 value: -0.25"}},
      {"adam", {{"beta2", 1.5}}, {"Invalid beta2 value: 1.5"}},
      {"adam", {{"beta2", nan}}, {"Invalid beta2 value: nan"}},
      {"adam", {{"epsilon", -1e-08}}, {"Invalid epsilon value: -1e-08", "epsilon"}},
      {"sgd", {{"clip_gradient", nan}}, {"Invalid clip_gradient value: nan", "turns clipping off"}},
      {"adam", {{"rescale_grad", inf}}, {"Invalid rescale_grad value: inf"}},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.optimizer << " with " << c.params.begin()->first << " = " << c.params.begin()->second) {
      BOOST_CHECK_EXCEPTION(gluon::Trainer(dict, c.optimizer, c.params), mx::ValueError, ndg_test::message_has{c.parts});
      BOOST_CHECK_EXCEPTION(gluon::Optimizer::create(c.optimizer, c.params), mx::ValueError,
                            ndg_test::message_has{c.parts});
    }
  }
  // The edges of each range are accepted; a negative clip_gradient turns clipping off, as in MXNet.
  BOOST_CHECK_NO_THROW(gluon::Trainer(dict, "sgd", {{"learning_rate", 0}, {"wd", 0}, {"momentum", 0}}));
  BOOST_CHECK_NO_THROW(gluon::Trainer(dict, "sgd", {{"momentum", 0.999}, {"clip_gradient", -1}}));
  BOOST_CHECK_NO_THROW(gluon::Trainer(dict, "adam", {{"beta1", 0}, {"beta2", 0}, {"epsilon", 0}, {"clip_gradient", inf}}));
  gluon::Trainer unclipped(dict, "sgd", {{"learning_rate", 1.0}, {"clip_gradient", -1}});
  set_grad(w, mx::cpu(), {4, -6});
  unclipped.step(2);
  check_close(w.data(mx::cpu()), {-1, 2}, 0, 0);
  // A bad rate set later is refused and the old one kept.
  gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 0.1}});
  BOOST_CHECK_EXCEPTION(trainer.set_learning_rate(-0.5), mx::ValueError,
                        ndg_test::message_has({"Invalid learning rate: -0.5"}));
  BOOST_CHECK_EXCEPTION(trainer.set_learning_rate(nan), mx::ValueError, ndg_test::message_has({"nan"}));
  BOOST_TEST(trainer.learning_rate() == 0.1);
  // The refused Trainers changed nothing: the weight is where the one step above left it.
  check_close(w.data(mx::cpu()), {-1, 2}, 0, 0);
  check_close(w.grad(mx::cpu()), {4, -6}, 0, 0);
}

BOOST_AUTO_TEST_CASE(a_failed_step_changes_no_parameter) {
  // Every parameter is checked before the first is summed or updated: an uninitialised parameter
  // after `w` in the dict leaves `w` and its gradients as they were.
  const auto ctxs = ndg_test::all_contexts();
  gluon::Parameter w = make_parameter("w", {2}, {1, 1}, ctxs);
  gluon::Parameter late("late", {2});
  gluon::ParameterDict dict;
  dict.add(w);
  dict.add(late);
  gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 1.0}});
  for (mx::Context ctx : ctxs) set_grad(w, ctx, {1, 2});
  NDG_CHECK_THROWS_WITH(trainer.step(1), mx::Error, "late", "not been initialized");
  NDG_CHECK_THROWS_WITH(trainer.step(0), mx::ValueError, "batch_size");
  for (mx::Context ctx : ctxs) {
    BOOST_TEST_CONTEXT("on " << ctx.str()) {
      check_close(w.data(ctx), {1, 1}, 0, 0);
      check_close(w.grad(ctx), {1, 2}, 0, 0);  // not summed over the contexts
    }
  }
  // With `late` ready, the same step runs: the gradients are summed over the copies.
  late.initialize(mx::init::Zero(), ctxs);
  trainer.step(1);
  const double n = static_cast<double>(ctxs.size());
  for (mx::Context ctx : ctxs) check_close(w.data(ctx), {1 - n, 1 - 2 * n});
}

// ---- training ------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(linear_regression_loss_decreases_and_weights_approach_the_truth) {
  const Regression data;
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::Dense layer(1, "", true, Regression::features);
    layer.initialize(mx::init::Zero(), ctx);
    gluon::Trainer trainer(layer.collect_params(), "sgd", {{"learning_rate", 0.5}, {"momentum", 0.5}});
    const gluon::loss::L2Loss loss;
    const nd::NDArray x = float32(data.x, {Regression::batch, Regression::features}, ctx);
    const nd::NDArray y = float32(data.y, {Regression::batch, 1}, ctx);
    std::vector<double> losses;
    for (int step = 0; step < 20; ++step) {
      nd::NDArray l;
      {
        auto scope = ag::record();
        l = loss(layer(x), y);
        l.backward();
      }
      losses.push_back(l.mean().asscalar<double>());
      trainer.step(Regression::batch);
    }
    const double final_loss = loss(layer(x), y).mean().asscalar<double>();
    BOOST_TEST_MESSAGE("on " << ctx.str() << ": loss " << losses.front() << " -> " << final_loss);
    // With zero weights the loss is half the mean square of y (about 10 here).
    BOOST_TEST(losses.front() > 5.0);
    BOOST_TEST(final_loss < losses.front() * 1e-3);
    const Values w = layer.weight().data(ctx).asvector<double>();
    for (std::size_t k = 0; k < w.size(); ++k) {
      BOOST_TEST(std::abs(w[k] - data.true_w[k]) < 0.1, "weight " << k << ": " << w[k] << " vs " << data.true_w[k]);
    }
    const double b = layer.bias().data(ctx).asscalar<double>();
    BOOST_TEST(std::abs(b - data.true_b) < 0.1, "bias " << b << " vs " << data.true_b);
  });
}

BOOST_AUTO_TEST_CASE(same_training_steps_on_cpu_and_gpu_give_the_same_parameters,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  for (int i = 0; i < mx::num_gpus(); ++i) {
    const mx::Context gpu = mx::gpu(i);
    for (const std::string optimizer : {"sgd", "adam"}) {
      BOOST_TEST_CONTEXT("on " << gpu.str() << " with " << optimizer) {
        const gluon::HyperParams params = optimizer == "sgd"
            ? gluon::HyperParams{{"learning_rate", 0.2}, {"momentum", 0.9}, {"wd", 0.01}}
            : gluon::HyperParams{{"learning_rate", 0.01}, {"wd", 0.01}};
        nn::Sequential on_cpu = make_mlp({mx::cpu()}), on_gpu = make_mlp({gpu});
        gluon::Trainer cpu_trainer(on_cpu.collect_params(), optimizer, params);
        gluon::Trainer gpu_trainer(on_gpu.collect_params(), optimizer, params);
        const auto initial = parameter_values(on_cpu, mx::cpu());
        for (unsigned step = 0; step < 3; ++step) {
          const Batch batch = make_batch(6, 200 + step);
          const double cpu_loss = forward_backward(on_cpu, batch, mx::cpu());
          const double gpu_loss = forward_backward(on_gpu, batch, gpu);
          BOOST_TEST(std::abs(cpu_loss - gpu_loss) <= 1e-5 * std::abs(cpu_loss));
          cpu_trainer.step(batch.size());
          gpu_trainer.step(batch.size());
        }
        const auto want = parameter_values(on_cpu, mx::cpu());
        const auto got = parameter_values(on_gpu, gpu);
        for (std::size_t q = 0; q < want.size(); ++q) {
          BOOST_TEST(ndg_test::relative_error(got[q], want[q]) < 1e-5, "parameter " << q);
          BOOST_TEST(ndg_test::relative_error(want[q], initial[q]) > 1e-4, "parameter " << q << " did not move");
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(parameter_on_cpu_and_gpu_gets_summed_gradients_and_identical_copies,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  check_data_parallel_steps({mx::cpu(), mx::gpu(0)});
}

BOOST_AUTO_TEST_CASE(data_parallel_steps_over_every_gpu_equal_one_gpu_on_the_whole_batch,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  std::vector<std::string> kvstores = {"p2p", "device"};
  // "device" is NCCL (its buckets on the copy engines where the GPUs have peer access) when the
  // build has NCCL; "p2p" the fallback.
  if (nd::built_with_nccl()) kvstores.push_back("nccl");
  for (const std::string& kvstore : kvstores) {
    BOOST_TEST_CONTEXT("kvstore " << kvstore) {
      check_data_parallel_steps(mx::try_all_gpus(), kvstore, mx::gpu(0));
      check_data_parallel_steps({mx::gpu(0), mx::gpu(1)}, kvstore, mx::gpu(1));
    }
  }
}

BOOST_AUTO_TEST_CASE(copies_stay_identical_over_many_data_parallel_steps,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{2})) {
  // 100 steps of a split batch through split_and_load: every GPU's copy of every parameter is the
  // same bit for bit, and close to the same training on one GPU.
  const std::vector<mx::Context> gpus = mx::try_all_gpus();
  const auto n = static_cast<std::int64_t>(4 * gpus.size());
  nn::Sequential net = make_mlp(gpus), single = make_mlp({mx::gpu(0)});
  const gluon::HyperParams sgd{{"learning_rate", 0.2}, {"momentum", 0.9}, {"wd", 0.001}};
  gluon::Trainer trainer(net.collect_params(), "sgd", sgd);
  gluon::Trainer single_trainer(single.collect_params(), "sgd", sgd);
  const gluon::loss::SoftmaxCrossEntropyLoss loss;
  for (unsigned step = 0; step < 100; ++step) {
    const Batch batch = make_batch(n, 300 + step);
    const nd::NDArray x = float32(batch.x, {n, 4}, mx::cpu()), y = float32(batch.labels, {n}, mx::cpu());
    const std::vector<nd::NDArray> xs = gluon::utils::split_and_load(x, gpus);
    const std::vector<nd::NDArray> ys = gluon::utils::split_and_load(y, gpus);
    {
      auto scope = ag::record();
      std::vector<nd::NDArray> losses;
      for (std::size_t k = 0; k < gpus.size(); ++k) losses.push_back(loss(net(xs[k]), ys[k]));
      for (const nd::NDArray& l : losses) l.backward();
    }
    trainer.step(n);
    forward_backward(single, batch, mx::gpu(0));
    single_trainer.step(n);
  }
  const auto want = parameter_values(single, mx::gpu(0));
  const auto first = parameter_values(net, gpus[0]);
  for (mx::Context gpu : gpus) {
    BOOST_TEST_CONTEXT("on " << gpu.str()) {
      const auto got = parameter_values(net, gpu);
      for (std::size_t q = 0; q < got.size(); ++q) {
        BOOST_TEST(got[q] == first[q], tt::per_element());
        BOOST_TEST(ndg_test::relative_error(got[q], want[q]) < 1e-3, "parameter " << q);
      }
    }
  }
}

// Gradient accumulation, as in Gluon: grad_req "add" sums the gradients of every backward until
// collect_params().zero_grad(); two half batches accumulated, then one step, equal one step on the
// whole batch (to rounding: the sums are added in another order), step after step, for SGD with
// momentum and Adam.
BOOST_AUTO_TEST_CASE(two_accumulated_half_batches_equal_one_whole_batch) {
  for (const std::string optimizer : {"sgd", "adam"}) {
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT(optimizer) {
        nn::Sequential accumulating = make_mlp({ctx}), whole = make_mlp({ctx});
        accumulating.collect_params().setattr("grad_req", "add");
        const gluon::HyperParams params{{"learning_rate", 0.1}, {"momentum", 0.9}};
        gluon::Trainer trainer(accumulating.collect_params(), optimizer,
                               optimizer == "sgd" ? params : gluon::HyperParams{{"learning_rate", 0.1}});
        gluon::Trainer whole_trainer(whole.collect_params(), optimizer,
                                     optimizer == "sgd" ? params : gluon::HyperParams{{"learning_rate", 0.1}});
        for (unsigned step = 0; step < 3; ++step) {
          BOOST_TEST_CONTEXT("step " << step + 1) {
            const Batch batch = make_batch(8, 40 + step);
            accumulating.collect_params().zero_grad();
            forward_backward(accumulating, rows(batch, 0, 4), ctx);
            forward_backward(accumulating, rows(batch, 4, 8), ctx);
            forward_backward(whole, batch, ctx);
            const std::vector<gluon::Parameter> whole_params = [&] {
              std::vector<gluon::Parameter> ps;
              for (const auto& [name, p] : whole.collect_params()) ps.push_back(p);
              return ps;
            }();
            std::size_t q = 0;
            for (const auto& [name, param] : accumulating.collect_params()) {
              BOOST_TEST(ndg_test::relative_error(param.grad(ctx).asvector<double>(),
                                                  whole_params[q++].grad(ctx).asvector<double>()) < 1e-6, name);
            }
            trainer.step(8);
            whole_trainer.step(8);
            const auto got = parameter_values(accumulating, ctx), want = parameter_values(whole, ctx);
            for (std::size_t p = 0; p < got.size(); ++p) {
              BOOST_TEST(ndg_test::relative_error(got[p], want[p]) < 1e-6, "parameter " << p);
            }
          }
        }
        // The step leaves the sums; without zero_grad the next backward adds to them.
        const gluon::Parameter first = accumulating.collect_params().begin()->second;
        const Values kept = first.grad(ctx).asvector<double>();
        forward_backward(accumulating, make_batch(4, 7), ctx);
        const Values more = first.grad(ctx).asvector<double>();
        accumulating.collect_params().zero_grad();
        forward_backward(accumulating, make_batch(4, 7), ctx);
        const Values alone = first.grad(ctx).asvector<double>();
        Values sum = kept;
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += alone[i];
        BOOST_TEST(ndg_test::relative_error(more, sum) < 1e-6);
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(unknown_kvstore_lists_the_valid_ones) {
  gluon::Parameter w = make_parameter("w", {2}, {1, 2}, {mx::cpu()});
  gluon::ParameterDict dict;
  dict.add(w);
  NDG_CHECK_THROWS_WITH(gluon::Trainer(dict, "sgd", {}, "dist_device_sync"), mx::ValueError, "dist_device_sync",
                        "device", "nccl", "p2p", "dist_sync");
}

BOOST_AUTO_TEST_CASE(kvstore_nccl_needs_a_build_with_nccl_and_every_copy_on_a_gpu) {
  gluon::Parameter w = make_parameter("w", {2}, {1, 2}, {mx::cpu()});
  gluon::ParameterDict dict;
  dict.add(w);
  if (!mx::built_with_cuda()) {
    BOOST_CHECK_EXCEPTION(gluon::Trainer(dict, "sgd", {}, "nccl"), mx::ValueError,
                          ndg_test::message_has({"kvstore 'nccl'", "built without CUDA", "-Dcuda=disabled", "'device'"}));
    return;
  }
  if (!nd::built_with_nccl()) {
    BOOST_CHECK_EXCEPTION(gluon::Trainer(dict, "sgd", {}, "nccl"), mx::ValueError,
                          ndg_test::message_has({"kvstore 'nccl'", "CUDA build", "has none", "-Dnccl=enabled"}));
    return;
  }
  // A parameter on cpu(0): refused at once, naming it and its contexts.
  BOOST_CHECK_EXCEPTION(gluon::Trainer(dict, "sgd", {{"learning_rate", 1.0}}, "nccl"), mx::ValueError,
                        ndg_test::message_has({"kvstore 'nccl'", "every copy on a GPU", "parameter 'w'", "[cpu(0)]",
                                               "'device'"}));
  // A frozen one is not summed, and may stay there.
  gluon::Parameter frozen("frozen", {2}, DType::float32, "null");
  frozen.initialize(mx::init::Zero(), {mx::cpu()});
  gluon::ParameterDict frozen_only;
  frozen_only.add(frozen);
  BOOST_CHECK_NO_THROW(gluon::Trainer(frozen_only, "sgd", {}, "nccl"));
  // One initialised after the Trainer was made is refused by the step, which changes nothing.
  gluon::Parameter late("late", {2});
  gluon::ParameterDict later;
  later.add(late);
  gluon::Trainer trainer(later, "sgd", {{"learning_rate", 1.0}}, "nccl");
  late.initialize(mx::init::One(), {mx::cpu()});
  set_grad(late, mx::cpu(), {1, 2});
  BOOST_CHECK_EXCEPTION(trainer.step(1), mx::ValueError,
                        ndg_test::message_has({"Trainer::step", "kvstore 'nccl'", "parameter 'late'", "[cpu(0)]"}));
  check_close(late.data(mx::cpu()), {1, 1}, 0, 0);
  check_close(late.grad(mx::cpu()), {1, 2}, 0, 0);
}

BOOST_AUTO_TEST_CASE(kvstore_nccl_refuses_a_parameter_on_cpu_and_gpu,
                     *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  if (!nd::built_with_nccl()) return;  // the build check has its own case
  gluon::Parameter w = make_parameter("w", {2}, {1, 2}, {mx::gpu(0), mx::cpu()});
  gluon::ParameterDict dict;
  dict.add(w);
  BOOST_CHECK_EXCEPTION(gluon::Trainer(dict, "sgd", {}, "nccl"), mx::ValueError,
                        ndg_test::message_has({"parameter 'w'", "[gpu(0), cpu(0)]"}));
  // On the GPU alone it is accepted and steps.
  w.reset_ctx({mx::gpu(0)});
  gluon::Trainer trainer(dict, "sgd", {{"learning_rate", 1.0}}, "nccl");
  set_grad(w, mx::gpu(0), {0.5, 0.5});
  trainer.step(1);
  check_close(w.data(mx::gpu(0)), {0.5, 1.5});
}

// check_finite: a step whose gradient holds a nan throws mx::NonFiniteError naming the parameter,
// and changes neither the parameters nor the optimizer's state; the next step trains.
// dist_sync needs a job to sum over: without mx::dist::init() the Trainer is refused, naming it.
BOOST_AUTO_TEST_CASE(dist_sync_without_dist_init_is_a_value_error) {
  gluon::Parameter p = make_parameter("w", {2}, {0, 0}, {mx::cpu()});
  gluon::ParameterDict params;
  params.add(p);
  NDG_CHECK_THROWS_WITH(gluon::Trainer(params, "sgd", {}, "dist_sync"), mx::ValueError, "dist_sync",
                        "mx::dist::init()");
  NDG_CHECK_THROWS_WITH(gluon::Trainer(params, "sgd", {}, "dist_async"), mx::ValueError, "dist_async",
                        "dist_sync");
  // In a job of one process, dist_sync is the local Trainer.
  mx::dist::init();
  gluon::Trainer trainer(params, "sgd", {{"learning_rate", 1.0}}, "dist_sync");
  set_grad(p, mx::cpu(), {4, 0});
  trainer.step(2);
  BOOST_TEST(p.data(mx::cpu()).asvector() == (std::vector<float>{-2, 0}), tt::per_element());
  mx::dist::shutdown();
}

BOOST_AUTO_TEST_CASE(check_finite_stops_a_step_with_a_nan_gradient) {
  ndg_test::for_each_context([](mx::Context ctx) {
    gluon::Parameter w = make_parameter("w", {3}, {1, 2, 3}, {ctx}), b = make_parameter("b", {2}, {0.5, -0.5}, {ctx});
    gluon::ParameterDict params;
    params.add(w);
    params.add(b);
    gluon::Trainer trainer(params, "sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"check_finite", 1}});
    const auto set_grads = [&](const Values& gw, const Values& gb) {
      set_grad(w, ctx, gw);
      set_grad(b, ctx, gb);
    };
    set_grads({1, 1, 1}, {1, 1});
    trainer.step(1);  // momentum is now -0.1
    const Values w1 = ndg_test::values(w.data(ctx)), b1 = ndg_test::values(b.data(ctx));
    set_grads({1, std::nan(""), 1}, {1, 1});
    NDG_CHECK_THROWS_WITH(trainer.step(1), mx::NonFiniteError, "Trainer::step", "w on " + ctx.str(), "nan");
    BOOST_TEST(ndg_test::values(w.data(ctx)) == w1, tt::per_element());
    BOOST_TEST(ndg_test::values(b.data(ctx)) == b1, tt::per_element());
    BOOST_TEST(trainer.num_update() == 1);
    set_grads({0, 0, 0}, {0, 0});
    trainer.step(1);  // the momentum of the first step alone: w -= 0.1 * 0.9
    check_close(w.data(ctx), {1 - 0.1 - 0.09, 2 - 0.1 - 0.09, 3 - 0.1 - 0.09});
  });
}

BOOST_AUTO_TEST_SUITE_END()
