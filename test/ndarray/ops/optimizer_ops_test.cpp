// nd::sgd_update, sgd_mom_update and adam_update against hand-written CPU references of MXNet's
// formulas (wd, rescale_grad, clip_gradient on and off), on every context and floating dtype, and
// their argument errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;
using mx::DType;
using ndg_test::Values;
using ndg_test::values;

namespace {

const Values kWeight{0.5, -1.0, 2.0, -0.25, 1.5, 0.0};
const Values kGrad{4.0, -6.0, 0.5, 10.0, -0.1, 3.0};
const Values kMom{0.1, -0.2, 0.0, 0.3, 0.05, -0.4};
const Values kMean{0.2, 0.1, -0.3, 0.0, 0.4, -0.1};
const Values kVar{0.01, 0.5, 0.2, 0.0, 1.0, 0.3};

struct Hyper {
  double wd, rescale, clip;
};
// Off, each one on its own, and all together (clip 1 cuts most of the rescaled gradients).
const Hyper kHypers[] = {{0, 1, -1}, {0.1, 1, -1}, {0, 0.5, -1}, {0, 1, 1.0}, {0.05, 0.5, 1.0}, {0, 1, 0}};

// MXNet's gradient: clip(rescale * grad, clip) + wd * weight; clip <= 0 is off.
double gradient(const Hyper& h, double grad, double weight) {
  double g = h.rescale * grad;
  if (h.clip > 0) g = std::clamp(g, -h.clip, h.clip);
  return g + h.wd * weight;
}

template <class Body>
void for_each_case(Body&& body) {
  for (const Hyper& h : kHypers) {
    BOOST_TEST_CONTEXT("wd " << h.wd << ", rescale_grad " << h.rescale << ", clip_gradient " << h.clip) {
      ndg_test::for_each_context([&](mx::Context ctx) {
        for (const DType dt : ndg_test::kFloatDTypes) {
          BOOST_TEST_CONTEXT(mx::dtype_name(dt)) { body(h, ctx, dt); }
        }
      });
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizer_ops)

BOOST_AUTO_TEST_CASE(sgd_update_against_reference) {
  const double lr = 0.1;
  for_each_case([&](const Hyper& h, mx::Context ctx, DType dt) {
    nd::NDArray weight = nd::array(kWeight, {2, 3}, ctx, dt);
    const nd::NDArray grad = nd::array(kGrad, {2, 3}, ctx, dt);
    nd::sgd_update(weight, grad, lr, h.wd, h.rescale, h.clip);
    Values want(kWeight.size());
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = kWeight[i] - lr * gradient(h, kGrad[i], kWeight[i]);
    ndg_test::check_close(weight, want, 1e-6, 1e-7);
    ndg_test::check_close(grad, kGrad, 1e-7, 0);  // the gradient is left alone
  });
}

BOOST_AUTO_TEST_CASE(updates_through_strided_views_write_the_base) {
  // The weight and the momentum are transposed views, the gradient a stepped slice: the update
  // lands in the bases' elements, as for contiguous arrays.
  const double lr = 0.1, momentum = 0.9;
  ndg_test::for_each_context([&](mx::Context ctx) {
    nd::NDArray weight_base = nd::array(kWeight, {3, 2}, ctx, DType::float64);
    nd::NDArray mom_base = nd::array(kMom, {3, 2}, ctx, DType::float64);
    nd::NDArray weight = weight_base.T(), mom = mom_base.T();
    Values grad_rows;  // rows 0 and 2 of a (4, 3) array hold the gradient of the (2, 3) view
    for (std::size_t i = 0; i < 12; ++i) grad_rows.push_back(i / 3 % 2 == 0 ? kGrad[(i / 6) * 3 + i % 3] : 99.0);
    const nd::NDArray grad = nd::array(grad_rows, {4, 3}, ctx, DType::float64).slice(0, 4, 2);
    const Values w0 = values(weight), m0 = values(mom), g = values(grad);
    nd::sgd_mom_update(weight, grad, mom, lr, momentum);
    Values want_weight(6), want_mom(6);
    for (std::size_t i = 0; i < 6; ++i) {
      want_mom[i] = momentum * m0[i] - lr * g[i];
      want_weight[i] = w0[i] + want_mom[i];
    }
    ndg_test::check_close(weight, want_weight, 1e-12, 1e-12);
    ndg_test::check_close(mom, want_mom, 1e-12, 1e-12);
    ndg_test::check_close(weight_base.T().copy(), want_weight, 1e-12, 1e-12);
  });
}

BOOST_AUTO_TEST_CASE(sgd_mom_update_against_reference) {
  const double lr = 0.1, momentum = 0.9;
  for_each_case([&](const Hyper& h, mx::Context ctx, DType dt) {
    nd::NDArray weight = nd::array(kWeight, {6}, ctx, dt);
    nd::NDArray mom = nd::array(kMom, {6}, ctx, dt);
    const nd::NDArray grad = nd::array(kGrad, {6}, ctx, dt);
    nd::sgd_mom_update(weight, grad, mom, lr, momentum, h.wd, h.rescale, h.clip);
    Values want_mom(kMom.size()), want_weight(kWeight.size());
    for (std::size_t i = 0; i < kWeight.size(); ++i) {
      want_mom[i] = momentum * kMom[i] - lr * gradient(h, kGrad[i], kWeight[i]);
      want_weight[i] = kWeight[i] + want_mom[i];
    }
    ndg_test::check_close(mom, want_mom, 1e-6, 1e-7);
    ndg_test::check_close(weight, want_weight, 1e-6, 1e-7);
  });
}

BOOST_AUTO_TEST_CASE(adam_update_against_reference) {
  const double lr = 0.01, beta1 = 0.8, beta2 = 0.95, epsilon = 1e-6;
  for_each_case([&](const Hyper& h, mx::Context ctx, DType dt) {
    nd::NDArray weight = nd::array(kWeight, {3, 2}, ctx, dt);
    nd::NDArray mean = nd::array(kMean, {3, 2}, ctx, dt);
    nd::NDArray var = nd::array(kVar, {3, 2}, ctx, dt);
    const nd::NDArray grad = nd::array(kGrad, {3, 2}, ctx, dt);
    nd::adam_update(weight, grad, mean, var, lr, beta1, beta2, epsilon, h.wd, h.rescale, h.clip);
    Values want_mean(6), want_var(6), want_weight(6);
    for (std::size_t i = 0; i < 6; ++i) {
      const double g = gradient(h, kGrad[i], kWeight[i]);
      want_mean[i] = beta1 * kMean[i] + (1 - beta1) * g;
      want_var[i] = beta2 * kVar[i] + (1 - beta2) * g * g;
      want_weight[i] = kWeight[i] - lr * want_mean[i] / (std::sqrt(want_var[i]) + epsilon);
    }
    ndg_test::check_close(mean, want_mean, 1e-6, 1e-7);
    ndg_test::check_close(var, want_var, 1e-6, 1e-7);
    ndg_test::check_close(weight, want_weight, 1e-5, 1e-7);
  });
}

BOOST_AUTO_TEST_CASE(updates_of_empty_arrays_do_nothing) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray w = nd::zeros({0, 3}, ctx), g = nd::zeros({0, 3}, ctx), m = nd::zeros({0, 3}, ctx),
                v = nd::zeros({0, 3}, ctx);
    nd::sgd_update(w, g, 0.1);
    nd::sgd_mom_update(w, g, m, 0.1, 0.9);
    nd::adam_update(w, g, m, v, 0.1);
    BOOST_TEST(w.size() == 0);
  });
}

BOOST_AUTO_TEST_CASE(shape_errors) {
  nd::NDArray w = nd::ones({2, 3}), mom = nd::zeros({3, 2}), mean = nd::zeros({2, 3}), var = nd::zeros({6});
  NDG_CHECK_THROWS_WITH(nd::sgd_update(w, nd::ones({3, 2}), 0.1), mx::ShapeError, "sgd_update",
                        "grad (3, 2) float32 @cpu(0)", "weight (2, 3) float32 @cpu(0)");
  NDG_CHECK_THROWS_WITH(nd::sgd_mom_update(w, nd::ones({2, 3}), mom, 0.1, 0.9), mx::ShapeError, "sgd_mom_update",
                        "mom (3, 2) float32 @cpu(0)", "weight (2, 3)");
  NDG_CHECK_THROWS_WITH(nd::adam_update(w, nd::ones({2, 3}), mean, var, 0.1), mx::ShapeError, "adam_update",
                        "var (6,) float32 @cpu(0)", "weight (2, 3)");
  BOOST_TEST(values(w) == Values(6, 1.0), tt::per_element());  // nothing was updated
}

BOOST_AUTO_TEST_CASE(dtype_errors) {
  nd::NDArray w = nd::ones({2, 3});
  NDG_CHECK_THROWS_WITH(nd::sgd_update(w, nd::ones({2, 3}, mx::cpu(), DType::float64), 0.1), mx::DTypeError,
                        "sgd_update", "grad (2, 3) float64 @cpu(0)", "weight (2, 3) float32");
  nd::NDArray mean = nd::zeros({2, 3}, mx::cpu(), DType::float64), var = nd::zeros({2, 3});
  NDG_CHECK_THROWS_WITH(nd::adam_update(w, nd::ones({2, 3}), mean, var, 0.1), mx::DTypeError, "adam_update",
                        "mean (2, 3) float64");
  nd::NDArray wi = nd::ones({2, 3}, mx::cpu(), DType::int32);
  NDG_CHECK_THROWS_WITH(nd::sgd_update(wi, nd::ones({2, 3}, mx::cpu(), DType::int32), 0.1), mx::DTypeError,
                        "sgd_update", "int32", "float32 and float64");
  NDG_CHECK_THROWS_WITH(nd::sgd_update(w, nd::NDArray(), 0.1), mx::ValueError, "sgd_update", "empty");
}

BOOST_AUTO_TEST_CASE(context_errors, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  nd::NDArray w = nd::ones({2, 3}, mx::gpu(0));
  NDG_CHECK_THROWS_WITH(nd::sgd_update(w, nd::ones({2, 3}), 0.1), mx::ContextMismatch, "sgd_update",
                        "grad (2, 3) float32 @cpu(0)", "weight (2, 3) float32 @gpu(0)", "as_in_context(gpu(0))");
  nd::NDArray mom = nd::zeros({2, 3});
  NDG_CHECK_THROWS_WITH(nd::sgd_mom_update(w, nd::ones({2, 3}, mx::gpu(0)), mom, 0.1, 0.9), mx::ContextMismatch,
                        "sgd_mom_update", "mom (2, 3) float32 @cpu(0)");
}

// 40 weights of assorted sizes (one launch holds 32 on a GPU, so the list takes two; one is empty):
// the multi-tensor update equals the single one, bit for bit, with and without momentum.
BOOST_AUTO_TEST_CASE(multi_sgd_updates_equal_the_single_ones) {
  for_each_case([](const Hyper& h, mx::Context ctx, DType dt) {
    for (const double momentum : {0.0, 0.9}) {
      BOOST_TEST_CONTEXT("momentum " << momentum) {
        std::vector<nd::NDArray> weights, grads, moms, single_w, single_m;
        for (std::size_t i = 0; i < 40; ++i) {
          const std::int64_t n = i == 7 ? 0 : static_cast<std::int64_t>(1 + (i * 37) % 300);
          const auto make = [&](unsigned seed) {
            return nd::array(ndg_test::uniform_values(static_cast<std::size_t>(n), seed), {n}, ctx, dt);
          };
          weights.push_back(make(3 * static_cast<unsigned>(i)));
          grads.push_back(make(3 * static_cast<unsigned>(i) + 1));
          moms.push_back(make(3 * static_cast<unsigned>(i) + 2));
          single_w.push_back(weights.back().copy());
          single_m.push_back(moms.back().copy());
        }
        if (momentum == 0) nd::multi_sgd_update(weights, grads, 0.1, h.wd, h.rescale, h.clip);
        else nd::multi_sgd_mom_update(weights, grads, moms, 0.1, momentum, h.wd, h.rescale, h.clip);
        for (std::size_t i = 0; i < weights.size(); ++i) {
          if (momentum == 0) nd::sgd_update(single_w[i], grads[i], 0.1, h.wd, h.rescale, h.clip);
          else nd::sgd_mom_update(single_w[i], grads[i], single_m[i], 0.1, momentum, h.wd, h.rescale, h.clip);
          BOOST_TEST_CONTEXT("weight " << i) {
            BOOST_TEST(values(weights[i]) == values(single_w[i]), tt::per_element());
            BOOST_TEST(values(moms[i]) == values(single_m[i]), tt::per_element());
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(multi_sgd_errors_change_nothing) {
  std::vector<nd::NDArray> weights{nd::ones({2}), nd::ones({3})}, moms{nd::zeros({2}), nd::zeros({3})};
  NDG_CHECK_THROWS_WITH(nd::multi_sgd_update(weights, {nd::ones({2})}, 0.1), mx::ValueError, "multi_sgd_update",
                        "2 weights, 1 gradients");
  NDG_CHECK_THROWS_WITH(nd::multi_sgd_update(weights, {nd::ones({2}), nd::ones({4})}, 0.1), mx::ShapeError,
                        "multi_sgd_update", "grad (4,) float32", "weight (3,) float32");
  NDG_CHECK_THROWS_WITH(
      nd::multi_sgd_update(weights, {nd::ones({2}), nd::ones({3}, mx::cpu(), DType::float64)}, 0.1), mx::DTypeError,
      "multi_sgd_update", "grad (3,) float64");
  std::vector<nd::NDArray> mixed{nd::ones({2}), nd::ones({3}, mx::cpu(), DType::float64)};
  NDG_CHECK_THROWS_WITH(
      nd::multi_sgd_update(mixed, {nd::ones({2}), nd::ones({3}, mx::cpu(), DType::float64)}, 0.1), mx::DTypeError,
      "multi_sgd_update", "float32", "float64");
  std::vector<nd::NDArray> short_moms{nd::zeros({2})};
  NDG_CHECK_THROWS_WITH(nd::multi_sgd_mom_update(weights, {nd::ones({2}), nd::ones({3})}, short_moms, 0.1, 0.9),
                        mx::ValueError, "multi_sgd_mom_update", "1 momenta");
  for (const nd::NDArray& w : weights) BOOST_TEST(values(w) == Values(static_cast<std::size_t>(w.size()), 1.0), tt::per_element());
  std::vector<nd::NDArray> none;
  nd::multi_sgd_update(none, {}, 0.1);  // an empty list does nothing
}

// 300 weights (a GPU launch holds 256, so the list takes two), sizes from 0 to beyond two of the
// GPU kernel's chunks: the fused rules sgd and adam (ndarray/ops/update_rules.hpp, through
// _multi_update) equal sgd_mom_update, sgd_update and adam_update, bit for bit.
BOOST_AUTO_TEST_CASE(fused_sgd_and_adam_rules_equal_the_single_ops) {
  const Hyper h{0.05, 0.5, 1.0};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : ndg_test::kFloatDTypes) {
      for (const mx::op::UpdateRule rule : {mx::op::UpdateRule::sgd, mx::op::UpdateRule::adam}) {
        for (const double momentum : {0.0, 0.9}) {
          if (rule == mx::op::UpdateRule::adam && momentum == 0) continue;
          BOOST_TEST_CONTEXT(mx::dtype_name(dt) << (rule == mx::op::UpdateRule::adam ? " adam" : " sgd, momentum ")
                                                << momentum) {
            const std::size_t num_states = rule == mx::op::UpdateRule::adam ? 2 : (momentum == 0 ? 0 : 1);
            std::vector<nd::NDArray> weights, grads, single_w;
            std::vector<std::vector<nd::NDArray>> states, single_s;
            std::vector<mx::op::TensorScalars> scalars;
            for (std::size_t i = 0; i < 300; ++i) {
              // Most weights small, every 25th beyond two GPU chunks (8,192 elements).
              const std::uint64_t hash = i * 2654435761u;
              const std::int64_t n = i % 50 == 7    ? 0
                                     : i % 25 == 11 ? static_cast<std::int64_t>(8193 + hash % 800)
                                                    : static_cast<std::int64_t>(1 + hash % 300);
              const auto make = [&](unsigned seed, double scale) {
                Values v = ndg_test::uniform_values(static_cast<std::size_t>(n), seed);
                for (double& x : v) x = scale * (x + 1) / 2;  // variances must not be negative
                return nd::array(v, {n}, ctx, dt);
              };
              weights.push_back(make(4 * static_cast<unsigned>(i), 2));
              grads.push_back(make(4 * static_cast<unsigned>(i) + 1, 4));
              states.emplace_back();
              for (std::size_t k = 0; k < num_states; ++k) states.back().push_back(make(4 * static_cast<unsigned>(i) + 2 + k, 1));
              single_w.push_back(weights.back().copy());
              single_s.emplace_back();
              for (const nd::NDArray& x : states.back()) single_s.back().push_back(x.copy());
              mx::op::TensorScalars t;
              t.lr = 0.01 * static_cast<double>(1 + i % 3);
              t.wd = h.wd;
              scalars.push_back(t);
            }
            mx::op::RuleParams p;
            p.rule = rule;
            p.num_states = static_cast<std::int32_t>(num_states);
            p.rescale = h.rescale;
            p.clip = h.clip;
            p.h0 = rule == mx::op::UpdateRule::adam ? 0.9 : momentum;
            p.h1 = 0.999;
            p.h2 = 1e-8;
            nd::multi_rule_update(p, weights, grads, states, nullptr, scalars);
            for (std::size_t i = 0; i < weights.size(); ++i) {
              const double lr = scalars[i].lr;
              if (rule == mx::op::UpdateRule::adam) {
                nd::adam_update(single_w[i], grads[i], single_s[i][0], single_s[i][1], lr, 0.9, 0.999, 1e-8, h.wd,
                                h.rescale, h.clip);
              } else if (momentum == 0) {
                nd::sgd_update(single_w[i], grads[i], lr, h.wd, h.rescale, h.clip);
              } else {
                nd::sgd_mom_update(single_w[i], grads[i], single_s[i][0], lr, momentum, h.wd, h.rescale, h.clip);
              }
              BOOST_TEST_CONTEXT("weight " << i << " " << nd::describe(weights[i])) {
                BOOST_TEST(values(weights[i]) == values(single_w[i]), tt::per_element());
                for (std::size_t k = 0; k < num_states; ++k) {
                  BOOST_TEST(values(states[i][k]) == values(single_s[i][k]), tt::per_element());
                }
              }
            }
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(a_master_copy_is_for_16_bit_weights) {
  std::vector<nd::NDArray> weights{nd::ones({3})}, grads{nd::ones({3})}, masters{nd::ones({3})};
  std::vector<std::vector<nd::NDArray>> states(1);
  mx::op::RuleParams p;
  p.rule = mx::op::UpdateRule::sgd;
  NDG_CHECK_THROWS_WITH(nd::multi_rule_update(p, weights, grads, states, &masters, {mx::op::TensorScalars{0.1}}),
                        mx::DTypeError, "_multi_update", "float16 and bfloat16", "(3,) float32");
  BOOST_TEST(values(weights[0]) == Values(3, 1.0), tt::per_element());
}

// multi_sum_sq against float64 sums: 300 arrays (two GPU launches), one empty, several beyond one
// chunk of 8192, in every floating dtype (the reference sums the values the array holds).
BOOST_AUTO_TEST_CASE(multi_sum_sq_against_float64_sums) {
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : {DType::float32, DType::float64, DType::float16, DType::bfloat16}) {
      BOOST_TEST_CONTEXT(mx::dtype_name(dt)) {
        std::vector<nd::NDArray> arrays;
        Values want;
        for (std::size_t i = 0; i < 300; ++i) {
          const std::int64_t n = i == 5 ? 0 : (i % 60 == 1 ? 20000 : static_cast<std::int64_t>(1 + (i * 131) % 700));
          arrays.push_back(nd::array(ndg_test::uniform_values(static_cast<std::size_t>(n), static_cast<unsigned>(i)),
                                     {n}, ctx, dt));
          double sum = 0;
          for (const double x : values(arrays.back())) sum += x * x;
          want.push_back(sum);
        }
        const nd::NDArray got = nd::multi_sum_sq(arrays);
        BOOST_TEST(got.shape() == mx::Shape{300});
        BOOST_TEST(ndg_test::dtype_of(got) == "float32");
        BOOST_TEST(got.context() == ctx);
        ndg_test::check_close(got, want, 1e-6, 0);
        BOOST_TEST(values(got)[5] == 0.0);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(multi_sum_sq_errors) {
  NDG_CHECK_THROWS_WITH(nd::multi_sum_sq({}), mx::ValueError, "multi_sum_sq", "no input array");
  NDG_CHECK_THROWS_WITH(nd::multi_sum_sq({nd::ones({2}), nd::ones({2}, mx::cpu(), DType::float64)}), mx::DTypeError,
                        "multi_sum_sq", "float32", "float64");
  NDG_CHECK_THROWS_WITH(nd::multi_sum_sq({nd::ones({2}, mx::cpu(), DType::int32)}), mx::DTypeError, "multi_sum_sq",
                        "int32");
  if (mx::num_gpus() > 0) {
    NDG_CHECK_THROWS_WITH(nd::multi_sum_sq({nd::ones({2}), nd::ones({2}, mx::gpu(0))}), mx::ContextMismatch,
                          "multi_sum_sq", "cpu(0)", "gpu(0)");
  }
}

BOOST_AUTO_TEST_SUITE_END()
