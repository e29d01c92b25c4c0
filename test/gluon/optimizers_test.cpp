// MXNet 1.9's other optimizers (gluon::RuleOptimizer: nag, signum, adagrad, rmsprop, adadelta,
// adamax, nadam, adamw, ftrl, ftml, lamb, lars): several steps of two parameters on every context, with
// rescale_grad, clip_gradient, wd and a learning rate that changes every step, against each
// update rule written out here in double precision (MXNet's Python formulas, not the kernels);
// float16 and bfloat16 weights with multi_precision against the same reference; creation by name
// with MXNet's defaults; typed errors that change nothing; and a training step through the
// Trainer equal, bit for bit, eagerly and hybridized.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/optimizer.hpp>
#include <gluon/parameter_dict.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace gluon = mx::gluon;
namespace nn = mx::gluon::nn;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;

namespace {

struct Case {
  std::string name;
  gluon::HyperParams hyper;  // beside the shared ones of run_case
};

// Each rule with non-default hyper-parameters where it has them, and both forms of those with two.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"nag", {{"momentum", 0.9}}},
      {"nag", {}},
      {"signum", {{"momentum", 0.8}, {"wd_lh", 0.02}}},
      {"signum", {{"momentum", 0.0}}},
      {"adagrad", {{"eps", 1e-6}}},
      {"rmsprop", {{"gamma1", 0.8}, {"clip_weights", 0.9}}},
      {"rmsprop", {{"centered", 1}, {"gamma1", 0.85}, {"gamma2", 0.7}, {"epsilon", 1e-6}}},
      {"adadelta", {{"rho", 0.8}, {"epsilon", 1e-4}}},
      {"adamax", {{"beta1", 0.8}}},
      {"nadam", {{"beta2", 0.99}, {"schedule_decay", 0.01}}},
      {"adamw", {{"eta", 0.5}, {"epsilon", 1e-6}}},
      {"ftrl", {{"lamda1", 0.001}, {"beta", 0.5}}},
      {"ftml", {{"beta1", 0.7}, {"epsilon", 1e-6}}},
      {"lamb", {{"beta1", 0.8}, {"lower_bound", 0.5}, {"upper_bound", 3}}},
      {"lamb", {{"bias_correction", 0}}},
      {"lars", {{"momentum", 0.9}, {"eta", 0.01}, {"eps", 1e-6}}},
      {"lars", {{"eta", 0.02}}},
  };
  return all;
}

double hyper(const Case& c, const std::string& name, double fallback) {
  const auto it = c.hyper.find(name);
  return it == c.hyper.end() ? fallback : it->second;
}

double clip(double v, double c) { return c > 0 ? std::max(-c, std::min(c, v)) : v; }
double sign(double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }

// One parameter's reference: weight, states and update count, in double precision.
struct Reference {
  Values w;
  std::vector<Values> s;  // the states, as the rule names them
  int t = 0;
  double last_lr = 0;  // lars
};

// The shared settings of every case.
constexpr double kWd = 0.01, kRescale = 0.5, kClip = 0.3;

// One step of rule c on r from gradient g at rate lr; nadam's m_schedule is the optimizer's, over
// every update. MXNet 1.9's python/mxnet/optimizer/optimizer.py and the update ops it calls.
void reference_step(const Case& c, Reference& r, const Values& g, double lr, double& m_schedule) {
  const std::string& n = c.name;
  ++r.t;
  const double t = r.t;
  const auto states = [&](std::size_t k) {
    while (r.s.size() < k) r.s.emplace_back(r.w.size(), 0.0);
  };
  const auto l2 = [](const Values& v) {
    double sum = 0;
    for (double x : v) sum += x * x;
    return std::sqrt(sum);
  };
  if (n == "lamb") {  // lamb_update_phase1, the norms, lamb_update_phase2
    states(2);
    const double b1 = hyper(c, "beta1", 0.9), b2 = hyper(c, "beta2", 0.999), eps = hyper(c, "epsilon", 1e-6);
    const bool corrected = hyper(c, "bias_correction", 1) != 0;
    Values direction(r.w.size());
    for (std::size_t i = 0; i < r.w.size(); ++i) {
      const double grad = clip(kRescale * g[i], kClip);
      r.s[0][i] = b1 * r.s[0][i] + (1 - b1) * grad;
      r.s[1][i] = b2 * r.s[1][i] + (1 - b2) * grad * grad;
      const double m = corrected ? r.s[0][i] / (1 - std::pow(b1, t)) : r.s[0][i];
      const double v = corrected ? r.s[1][i] / (1 - std::pow(b2, t)) : r.s[1][i];
      direction[i] = m / (std::sqrt(v) + eps) + kWd * r.w[i];
    }
    double r1 = l2(r.w);
    const double r2 = l2(direction);
    if (hyper(c, "lower_bound", -1) > 0) r1 = std::max(r1, hyper(c, "lower_bound", -1));
    if (hyper(c, "upper_bound", -1) > 0) r1 = std::min(r1, hyper(c, "upper_bound", -1));
    const double ratio = (r1 == 0 || r2 == 0) ? 1 : r1 / r2;
    for (std::size_t i = 0; i < r.w.size(); ++i) r.w[i] -= lr * ratio * direction[i];
    return;
  }
  if (n == "lars") {  // multi_lars, then the (momentum) SGD step at the scaled rate
    const double mom = hyper(c, "momentum", 0), eta = hyper(c, "eta", 0.001), eps = hyper(c, "eps", 0);
    const double w_norm = l2(r.w), g_norm = l2(g);
    const double rate = (w_norm > 0 && g_norm > 0) ? lr * eta * w_norm / (g_norm * kRescale + kWd * w_norm + eps) : lr;
    // momentum_correction: the momentum scaled by the rate's change since the previous step.
    const double momentum = r.t > 1 ? mom * lr / r.last_lr : mom;
    r.last_lr = lr;
    if (mom != 0) states(1);
    for (std::size_t i = 0; i < r.w.size(); ++i) {
      const double grad = clip(kRescale * g[i], kClip);
      if (mom == 0) {
        r.w[i] += -rate * kWd * r.w[i] - rate * grad;
      } else {
        r.s[0][i] = momentum * r.s[0][i] - rate * kWd * r.w[i] - rate * grad;
        r.w[i] += r.s[0][i];
      }
    }
    return;
  }
  for (std::size_t i = 0; i < r.w.size(); ++i) {
    double& w = r.w[i];
    const double g0 = g[i];
    if (n == "nag") {  // nag_mom_update's kernel (the class's docstring differs); sgd_update at momentum 0
      const double mom = hyper(c, "momentum", 0), grad = clip(kRescale * g0, kClip);
      if (mom == 0) {
        w -= lr * (grad + kWd * w);
      } else {
        states(1);
        const double m = mom * r.s[0][i];
        w = w - m + (mom + 1) * (m - lr * (grad + kWd * w));
        r.s[0][i] = m - lr * (grad + kWd * w);  // the new weight: the kernel writes w in place first
      }
    } else if (n == "signum") {
      const double mom = hyper(c, "momentum", 0.9), grad = clip(kRescale * g0, kClip);
      if (mom == 0) {  // signsgd_update: neither rescale_grad nor clip_gradient
        w = (1 - lr * kWd) * w - lr * sign(g0);
      } else {
        states(1);
        r.s[0][i] = mom * r.s[0][i] - (1 - mom) * (kWd * w + grad);
        w = (1 - lr * hyper(c, "wd_lh", 0)) * w + lr * sign(r.s[0][i]);
      }
    } else if (n == "adagrad") {
      states(1);
      const double grad = clip(kRescale * g0, kClip);
      r.s[0][i] += grad * grad;
      w += (grad / std::sqrt(r.s[0][i] + hyper(c, "eps", 1e-7)) + w * kWd) * -lr;
    } else if (n == "rmsprop" && hyper(c, "centered", 0) == 0) {
      states(1);
      const double g1 = hyper(c, "gamma1", 0.9), grad = clip(kRescale * g0 + kWd * w, kClip);
      r.s[0][i] = (1 - g1) * grad * grad + g1 * r.s[0][i];
      w -= lr * grad / std::sqrt(r.s[0][i] + hyper(c, "epsilon", 1e-8));
      if (hyper(c, "clip_weights", -1) > 0) w = clip(w, hyper(c, "clip_weights", -1));
    } else if (n == "rmsprop") {
      states(3);
      const double g1 = hyper(c, "gamma1", 0.9), g2 = hyper(c, "gamma2", 0.9);
      const double grad = clip(kRescale * g0 + kWd * w, kClip);
      r.s[0][i] = (1 - g1) * grad * grad + g1 * r.s[0][i];
      r.s[1][i] = (1 - g1) * grad + g1 * r.s[1][i];
      r.s[2][i] = g2 * r.s[2][i] - lr * grad / std::sqrt(r.s[0][i] - r.s[1][i] * r.s[1][i] + hyper(c, "epsilon", 1e-8));
      w += r.s[2][i];
    } else if (n == "adadelta") {
      states(2);
      const double rho = hyper(c, "rho", 0.9), eps = hyper(c, "epsilon", 1e-5), grad = clip(kRescale * g0, kClip);
      r.s[0][i] = rho * r.s[0][i] + (1 - rho) * grad * grad;
      const double delta = std::sqrt(r.s[1][i] + eps) / std::sqrt(r.s[0][i] + eps) * grad;
      r.s[1][i] = rho * r.s[1][i] + (1 - rho) * delta * delta;
      w -= delta + kWd * w;
    } else if (n == "adamax") {
      states(2);
      const double b1 = hyper(c, "beta1", 0.9), b2 = hyper(c, "beta2", 0.999);
      const double grad = clip(kRescale * g0 + kWd * w, kClip);
      r.s[0][i] = b1 * r.s[0][i] + (1 - b1) * grad;
      r.s[1][i] = std::max(b2 * r.s[1][i], std::abs(grad));
      w -= lr / (1 - std::pow(b1, t)) * r.s[0][i] / r.s[1][i];
    } else if (n == "nadam") {
      states(2);
      const double b1 = hyper(c, "beta1", 0.9), b2 = hyper(c, "beta2", 0.999), sd = hyper(c, "schedule_decay", 0.004);
      const double grad = clip(kRescale * g0 + kWd * w, kClip);
      const double momentum_t = b1 * (1 - 0.5 * std::pow(0.96, t * sd));
      const double momentum_t_1 = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * sd));
      const double schedule = (i == 0 ? (m_schedule *= momentum_t) : m_schedule), schedule_next = schedule * momentum_t_1;
      r.s[0][i] = b1 * r.s[0][i] + (1 - b1) * grad;
      r.s[1][i] = b2 * r.s[1][i] + (1 - b2) * grad * grad;
      const double grad_prime = grad / (1 - schedule), m_prime = r.s[0][i] / (1 - schedule_next);
      const double v_prime = r.s[1][i] / (1 - std::pow(b2, t));
      const double m_bar = (1 - momentum_t) * grad_prime + momentum_t_1 * m_prime;
      w -= lr * m_bar / (std::sqrt(v_prime) + hyper(c, "epsilon", 1e-8));
    } else if (n == "adamw") {
      states(2);
      const double b1 = hyper(c, "beta1", 0.9), b2 = hyper(c, "beta2", 0.999), grad = clip(kRescale * g0, kClip);
      r.s[0][i] = b1 * r.s[0][i] + (1 - b1) * grad;
      r.s[1][i] = b2 * r.s[1][i] + (1 - b2) * grad * grad;
      w -= hyper(c, "eta", 1) * (lr * r.s[0][i] / (std::sqrt(r.s[1][i]) + hyper(c, "epsilon", 1e-8)) + kWd * w);
    } else if (n == "ftrl") {
      states(2);
      const double l1 = hyper(c, "lamda1", 0.01), beta = hyper(c, "beta", 1), grad = clip(kRescale * g0, kClip);
      r.s[0][i] += grad - (std::sqrt(r.s[1][i] + grad * grad) - std::sqrt(r.s[1][i])) * w / lr;
      r.s[1][i] += grad * grad;
      const double z = r.s[0][i];
      w = std::abs(z) > l1 ? (sign(z) * l1 - z) / ((beta + std::sqrt(r.s[1][i])) / lr + kWd) : 0.0;
    } else if (n == "ftml") {
      states(3);
      const double b1 = hyper(c, "beta1", 0.6), b2 = hyper(c, "beta2", 0.999), eps = hyper(c, "epsilon", 1e-8);
      const double grad = clip(kRescale * g0 + kWd * w, kClip);
      r.s[1][i] = b2 * r.s[1][i] + (1 - b2) * grad * grad;
      const double d = (1 - std::pow(b1, t)) / lr * (std::sqrt(r.s[1][i] / (1 - std::pow(b2, t))) + eps);
      r.s[2][i] = b1 * r.s[2][i] + (1 - b1) * grad - (d - b1 * r.s[0][i]) * w;
      r.s[0][i] = d;
      w = -r.s[2][i] / d;
    } else {
      BOOST_FAIL("no reference for " << n);
    }
  }
}

double rounded(double v, DType dtype) {
  return ndg_test::values(nd::array(Values{v}, mx::Shape{1}, mx::cpu(), dtype))[0];
}

// Four steps of c on two weights of `dtype` (multi_precision for 16-bit ones), the rate lowered
// each step as a scheduler would, against the reference; the reference starts from the weights'
// values and reads the gradients as the weights' dtype holds them.
void run_case(const Case& c, mx::Context ctx, DType dtype) {
  gluon::HyperParams params = c.hyper;
  params["learning_rate"] = c.name == "adadelta" ? 1.0 : 0.05;
  params["wd"] = kWd;
  params["rescale_grad"] = kRescale;
  params["clip_gradient"] = kClip;
  if (dtype != DType::float32) params["multi_precision"] = 1;
  auto optimizer = gluon::Optimizer::create(c.name, params);
  const std::vector<mx::Shape> shapes = {{3, 4}, {5}};
  std::mt19937 engine(7);
  std::vector<nd::NDArray> weights;
  std::vector<Reference> refs;
  std::vector<gluon::StateKey> keys;
  for (std::size_t p = 0; p < shapes.size(); ++p) {
    std::uniform_real_distribution<double> uniform(-1, 1);
    Values w(static_cast<std::size_t>(shapes[p].numel()));
    for (double& x : w) x = rounded(uniform(engine), dtype);
    weights.push_back(nd::array(w, shapes[p], ctx, dtype));
    refs.push_back({w, {}, 0, 0});
    keys.push_back({p, 0});
  }
  double m_schedule = 1;
  for (int step = 0; step < 4; ++step) {
    const double lr = params["learning_rate"] * std::pow(0.8, step);
    optimizer->set_learning_rate(lr);
    std::vector<nd::NDArray> grads;
    for (std::size_t p = 0; p < shapes.size(); ++p) {
      std::uniform_real_distribution<double> uniform(-1.5, 1.5);
      Values g(static_cast<std::size_t>(shapes[p].numel()));
      for (double& x : g) {
        x = rounded(uniform(engine), dtype);
        if (std::abs(x) < 0.05) x = 0.25;  // away from sign()'s edge
      }
      grads.push_back(nd::array(g, shapes[p], ctx, dtype));
      reference_step(c, refs[p], g, lr, m_schedule);
    }
    optimizer->update_multi(keys, weights, grads);
  }
  const double tol = dtype == DType::float32 ? 2e-5 : (dtype == DType::float16 ? 2e-3 : 1e-2);
  for (std::size_t p = 0; p < shapes.size(); ++p) {
    BOOST_TEST_CONTEXT("weight " << p) {
      ndg_test::check_close(weights[p], refs[p].w, tol, tol);
      // The states, in the order state_names() gives them, against the reference's.
      const std::map<gluon::StateKey, gluon::CopyState> states = optimizer->states();
      const gluon::CopyState& copy = states.at(keys[p]);
      BOOST_TEST(copy.count == 4);
      BOOST_TEST_REQUIRE(copy.states.size() == refs[p].s.size());
      for (std::size_t k = 0; k < copy.states.size(); ++k) {
        BOOST_TEST_CONTEXT("state " << optimizer->state_names()[k]) {
          BOOST_TEST((copy.states[k].dtype() == (dtype == DType::float32 ? dtype : DType::float32)));
          ndg_test::check_close(copy.states[k], refs[p].s[k], tol, tol);
        }
      }
      if (dtype != DType::float32) ndg_test::check_close(copy.master, refs[p].w, 2e-5, 2e-5);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizers)

BOOST_AUTO_TEST_CASE(every_rule_matches_its_double_precision_reference) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const Case& c : cases()) {
      BOOST_TEST_CONTEXT(c.name << " " << c.hyper.size() << " hyper-parameters") { run_case(c, ctx, DType::float32); }
    }
  });
}

BOOST_AUTO_TEST_CASE(half_weights_with_multi_precision_follow_the_reference) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const DType dtype : {DType::float16, DType::bfloat16}) {
      for (const Case& c : cases()) {
        BOOST_TEST_CONTEXT(c.name << " " << mx::dtype_name(dtype)) { run_case(c, ctx, dtype); }
      }
    }
  });
}

// The update plan (gluon/optimizer.cpp): a step given in parts (a Trainer's gradient buckets),
// the same gradient arrays every step (the plans reused), a state replaced and a weight given a
// new array in the middle (the plans made again), equals the whole list updated at once, bit for
// bit, on every context.
BOOST_AUTO_TEST_CASE(updates_in_parts_with_reused_plans_equal_one_update) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const std::string& name : gluon::RuleOptimizer::names()) {
      BOOST_TEST_CONTEXT(name) {
        gluon::HyperParams params = {{"wd", 0.01}};
        if (name == "sgd" || name == "nag" || name == "signum" || name == "lars") params["momentum"] = 0.9;
        auto whole = gluon::Optimizer::create(name, params), parts = gluon::Optimizer::create(name, params);
        const std::vector<mx::Shape> shapes = {{3, 4}, {5}, {2, 3}};
        std::vector<nd::NDArray> w_whole, w_parts, grads;
        std::vector<gluon::StateKey> keys;
        for (std::size_t p = 0; p < shapes.size(); ++p) {
          w_whole.push_back(nd::array(ndg_test::uniform_values(static_cast<std::size_t>(shapes[p].numel()),
                                                               static_cast<unsigned>(p)), shapes[p], ctx, DType::float32));
          w_parts.push_back(w_whole.back().copy());
          grads.push_back(nd::zeros(shapes[p], ctx));
          keys.push_back({p, 0});
        }
        for (int step = 0; step < 5; ++step) {
          for (std::size_t p = 0; p < shapes.size(); ++p) {  // new values, the same arrays
            nd::array(ndg_test::uniform_values(static_cast<std::size_t>(shapes[p].numel()),
                                               static_cast<unsigned>(10 * step + p + 7)), shapes[p], ctx, DType::float32)
                .copyto(grads[p]);
          }
          if (step == 2) parts->set_states(parts->states());  // the same arrays, a new generation
          if (step == 3) w_parts[1] = w_parts[1].copy();      // a weight that is another array
          whole->update_multi(keys, w_whole, grads);
          std::vector<nd::NDArray> first{w_parts[0]}, rest{w_parts[1], w_parts[2]};
          parts->update_multi({keys[0]}, first, {grads[0]});
          parts->update_multi({keys[1], keys[2]}, rest, {grads[1], grads[2]});
        }
        for (std::size_t p = 0; p < shapes.size(); ++p) {
          BOOST_TEST_CONTEXT("weight " << p) {
            BOOST_TEST(ndg_test::values(w_parts[p]) == ndg_test::values(w_whole[p]), boost::test_tools::per_element());
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(created_by_name_with_mxnet_defaults) {
  for (const auto& [name, lr] : std::vector<std::pair<std::string, double>>{
           {"nag", 0.01}, {"signum", 0.01}, {"adagrad", 0.01}, {"rmsprop", 0.001}, {"adadelta", 1.0},
           {"adamax", 0.002}, {"nadam", 0.001}, {"adamw", 0.001}, {"ftrl", 0.1}, {"ftml", 0.0025}, {"lamb", 0.001},
           {"lars", 0.01}}) {
    BOOST_TEST_CONTEXT(name) {
      const auto optimizer = gluon::Optimizer::create(name, {});
      BOOST_TEST(optimizer->learning_rate() == lr);
      BOOST_TEST(std::string(optimizer->name()) == name);
    }
  }
  BOOST_TEST((gluon::Optimizer::create("rmsprop", {{"centered", 1}})->state_names() ==
              std::vector<std::string>{"n", "g", "delta"}));
  BOOST_TEST(gluon::Optimizer::create("signum", {{"momentum", 0}})->state_names().empty());
  BOOST_TEST(gluon::Optimizer::create("nag", {})->state_names().empty());
}

BOOST_AUTO_TEST_CASE(optimizer_scalars_round_trip) {
  auto nadam = gluon::Optimizer::create("nadam", {});
  BOOST_TEST((nadam->scalars() == std::map<std::string, double>{{"m_schedule", 1.0}}));
  nadam->set_scalars({{"m_schedule", 0.5}});
  BOOST_TEST(nadam->scalars().at("m_schedule") == 0.5);
  NDG_CHECK_THROWS_WITH(nadam->set_scalars({{"last_lr", 1}}), mx::ValueError, "nadam", "'last_lr'", "m_schedule");
  BOOST_TEST(nadam->scalars().at("m_schedule") == 0.5);
  BOOST_TEST(gluon::Optimizer::create("lars", {})->scalars().count("last_lr") == 1);
  NDG_CHECK_THROWS_WITH(gluon::Optimizer::create("sgd", {})->set_scalars({{"x", 1}}), mx::ValueError, "sgd", "'x'");
}

BOOST_AUTO_TEST_CASE(bad_names_and_values_are_typed_errors) {
  NDG_CHECK_THROWS_WITH(gluon::Optimizer::create("adamm", {}), mx::ValueError, "unknown optimizer 'adamm'",
                        "adadelta, adagrad, adam, adamax, adamw, ftml, ftrl, lamb, lars, nadam, nag, rmsprop, sgd, signum");
  NDG_CHECK_THROWS_WITH(gluon::Optimizer::create("rmsprop", {{"gamma3", 1}}), mx::ValueError, "rmsprop",
                        "unknown hyper-parameter 'gamma3'", "gamma1");
  NDG_CHECK_THROWS_WITH(gluon::Optimizer::create("nag", {{"learning_rate", -1}}), mx::ValueError, "nag",
                        "Invalid learning rate: -1");
  NDG_CHECK_THROWS_WITH(gluon::Optimizer::create("nag", {{"momentum", 1}}), mx::ValueError, "nag", "momentum");
  NDG_CHECK_THROWS_WITH(gluon::Optimizer::create("ftml", {{"beta1", -0.5}}), mx::ValueError, "ftml", "beta1");
  NDG_CHECK_THROWS_WITH(gluon::Optimizer::create("adagrad", {{"eps", -1}}), mx::ValueError, "adagrad", "eps");
  // A gradient that does not match its weight: nothing changes, the update count included.
  ndg_test::for_each_context([](mx::Context ctx) {
    auto optimizer = gluon::Optimizer::create("adamax", {});
    std::vector<nd::NDArray> weights{nd::ones({4}, ctx), nd::ones({2}, ctx)};
    NDG_CHECK_THROWS_WITH(optimizer->update_multi({{0, 0}, {1, 0}}, weights, {nd::ones({4}, ctx), nd::ones({3}, ctx)}),
                          mx::ShapeError, "adamax", "(3,)", "(2,)");
    ndg_test::check_close(weights[0], {1, 1, 1, 1});
    BOOST_TEST(optimizer->states().empty());
  });
}

// Parameter::lr_mult and wd_mult: a parameter trained beside another with lr_mult 0.5 and wd_mult
// 0 equals it trained alone at half the rate without decay, bit for bit, for sgd, adam and every
// rule (but nadam, whose momentum schedule is one product over every parameter's update).
BOOST_AUTO_TEST_CASE(lr_mult_and_wd_mult_scale_each_parameter) {
  std::vector<Case> all = cases();
  all.push_back({"sgd", {{"momentum", 0.9}}});
  all.push_back({"adam", {}});
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const Case& c : all) {
      if (c.name == "nadam") continue;
      BOOST_TEST_CONTEXT(c.name) {
        const auto make = [&](const std::string& name, unsigned seed) {
          gluon::Parameter p(name, {3, 2});
          p.initialize(mx::init::Zero(), {ctx});
          p.set_data(ndg_test::random_array({3, 2}, ctx, seed));
          return p;
        };
        gluon::Parameter a = make("a", 1), b = make("b", 2), alone = make("a", 1);
        a.set_lr_mult(0.5);
        a.set_wd_mult(0);
        gluon::ParameterDict both, single;
        both.add(a);
        both.add(b);
        single.add(alone);
        gluon::HyperParams params = c.hyper, half = c.hyper;
        params["learning_rate"] = 0.2;
        params["wd"] = 0.1;
        half["learning_rate"] = 0.1;
        half["wd"] = 0;
        gluon::Trainer together(both, c.name, params), apart(single, c.name, half);
        for (unsigned step = 0; step < 3; ++step) {
          for (gluon::Parameter* p : {&a, &b, &alone}) {
            nd::NDArray g = p->grad(ctx);
            ndg_test::random_array({3, 2}, ctx, 10 + step).copyto(g);
          }
          together.step(1);
          apart.step(1);
        }
        BOOST_TEST(ndg_test::values(a.data(ctx)) == ndg_test::values(alone.data(ctx)), tt::per_element());
      }
    }
  });
  gluon::Parameter p("p", {2});
  NDG_CHECK_THROWS_WITH(p.set_lr_mult(-1), mx::ValueError, "Parameter 'p'", "lr_mult");
  NDG_CHECK_THROWS_WITH(p.set_wd_mult(std::nan("")), mx::ValueError, "Parameter 'p'", "wd_mult");
  BOOST_TEST(p.lr_mult() == 1);
  BOOST_TEST(p.wd_mult() == 1);
}

// A training step of a small network through the Trainer: the same parameters, bit for bit, when
// the network is hybridized.
BOOST_AUTO_TEST_CASE(training_is_the_same_eagerly_and_hybridized) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const Case& c : cases()) {
      BOOST_TEST_CONTEXT(c.name) {
        std::vector<Values> results;
        for (const bool hybridized : {false, true}) {
          mx::random::seed(3);
          nn::Sequential net;
          net.add(nn::Dense(6, "relu", true, 5), nn::Dense(2, "", true, 6));
          net.initialize(mx::init::Xavier(), {ctx});
          if (hybridized) net.hybridize();
          gluon::HyperParams params = c.hyper;
          params["wd"] = 1e-3;
          gluon::Trainer trainer(net.collect_params(), c.name, params);
          gluon::loss::L2Loss loss;
          const nd::NDArray x = ndg_test::random_array({4, 5}, ctx, 11), y = ndg_test::random_array({4, 2}, ctx, 12);
          for (int step = 0; step < 3; ++step) {
            nd::NDArray l;
            {
              auto scope = mx::autograd::record();
              l = loss(net(x), y);
            }
            l.backward();
            trainer.step(4);
          }
          Values all;
          for (const auto& [key, param] : net.structural_params()) {
            const Values v = ndg_test::values(param.data(ctx));
            all.insert(all.end(), v.begin(), v.end());
          }
          results.push_back(all);
        }
        // Bit for bit, NaN included (adamax divides 0 by 0 where a gradient stays 0, as MXNet's).
        const auto bits = [](const Values& v) {
          std::vector<std::uint64_t> b(v.size());
          std::memcpy(b.data(), v.data(), v.size() * sizeof(double));
          return b;
        };
        BOOST_TEST(bits(results[0]) == bits(results[1]), tt::per_element());
      }
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
