// Losses against values computed here in double precision, on every context: L2Loss, L1Loss,
// SoftmaxCrossEntropyLoss (sparse and dense labels, from_logits, extreme logits),
// SigmoidBinaryCrossEntropyLoss (logits and probabilities), loss weights, the shape errors, and the
// gradient of softmax cross-entropy through autograd.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/profile.hpp"

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
using mx::gluon::loss::L1Loss;
using mx::gluon::loss::L2Loss;
using mx::gluon::loss::SigmoidBinaryCrossEntropyLoss;
using mx::gluon::loss::SoftmaxCrossEntropyLoss;
namespace ag = mx::autograd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;
using Rows = std::vector<Values>;

namespace {

// The shape (batch,) on ctx, and every element close to want.
void check_loss(const nd::NDArray& got, mx::Context ctx, const Values& want, double rtol = 1e-5, double atol = 1e-6) {
  BOOST_TEST(got.shape() == (mx::Shape{static_cast<std::int64_t>(want.size())}));
  BOOST_TEST(got.context() == ctx);
  check_close(got, want, rtol, atol);
}

Values flat(const Rows& rows) {
  Values v;
  for (const Values& r : rows) v.insert(v.end(), r.begin(), r.end());
  return v;
}

nd::NDArray matrix(const Rows& rows, mx::Context ctx, DType dtype = DType::float32) {
  return nd::array(flat(rows), {static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows[0].size())}, ctx,
                   dtype);
}

// The values as float32 would hold them, so that references start from the same inputs.
Rows as_float(Rows rows) {
  for (Values& r : rows) {
    for (double& x : r) x = static_cast<float>(x);
  }
  return rows;
}

// log(sum(exp(row))), computed stably.
double log_sum_exp(const Values& row) {
  double m = row[0];
  for (double x : row) m = std::max(m, x);
  double s = 0;
  for (double x : row) s += std::exp(x - m);
  return m + std::log(s);
}

Values softmax(const Values& row) {
  const double lse = log_sum_exp(row);
  Values p;
  for (double x : row) p.push_back(std::exp(x - lse));
  return p;
}

// -log softmax(row)[label] per row.
Values sparse_cross_entropy(const Rows& logits, const std::vector<int>& labels) {
  Values out;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    out.push_back(log_sum_exp(logits[i]) - logits[i][static_cast<std::size_t>(labels[i])]);
  }
  return out;
}

// max(x, 0) - x * z + log(1 + exp(-|x|)): binary cross-entropy of the logit x.
double binary_cross_entropy_of_logit(double x, double z) {
  return std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::abs(x)));
}

const Rows kPred = {{1, 2}, {3, 4}, {-1, 0.5}};
const Rows kLabel = {{0, 2}, {5, 1}, {1, -0.5}};

const Rows kLogits = {{1, 2, 3}, {1, 1, 1}, {0, -1, 2.5}, {-0.5, 4, 0.25}};
const std::vector<int> kClasses = {2, 0, 1, 1};

using ndg_test::profiler_calls;

}  // namespace

BOOST_AUTO_TEST_SUITE(loss)

// ---- L2 and L1 ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(l2_loss_is_half_the_squared_error_averaged_per_sample) {
  // (p - l) = [[1, 0], [-2, 3], [-2, 1]] -> 0.5 (p - l)² = [[0.5, 0], [2, 4.5], [2, 0.5]].
  const Values want{0.25, 3.25, 1.25};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : {DType::float32, DType::float64}) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        const nd::NDArray l = L2Loss()(matrix(kPred, ctx, dt), matrix(kLabel, ctx, dt));
        BOOST_TEST(l.dtype() == dt);
        check_loss(l, ctx, want);
      }
    }
    // The loss weight scales every value.
    check_loss(L2Loss(2.0)(matrix(kPred, ctx), matrix(kLabel, ctx)), ctx, {0.5, 6.5, 2.5});
    // A label of another dtype and of shape (batch,) for (batch, 1) predictions.
    const nd::NDArray pred = nd::array({{1.5}, {-2}, {0}}, ctx);
    const nd::NDArray label = nd::array(std::vector<std::int32_t>{1, 1, -3}, {3}, ctx);
    check_loss(L2Loss()(pred, label), ctx, {0.125, 4.5, 4.5});
    // Averaged over every non-batch axis: (2, 2, 2), element k of sample b is b + k / 4 against 0.
    Values values3;
    for (int b = 0; b < 2; ++b) {
      for (int k = 0; k < 4; ++k) values3.push_back(b + k / 4.0);
    }
    const nd::NDArray pred3 = nd::array(values3, {2, 2, 2}, ctx, DType::float32);
    Values want3(2, 0.0);
    for (int b = 0; b < 2; ++b) {
      for (int k = 0; k < 4; ++k) want3[static_cast<std::size_t>(b)] += 0.5 * std::pow(b + k / 4.0, 2) / 4;
    }
    check_loss(L2Loss()(pred3, nd::zeros({2, 2, 2}, ctx)), ctx, want3);
  });
}

BOOST_AUTO_TEST_CASE(l1_loss_is_the_absolute_error_averaged_per_sample) {
  ndg_test::for_each_context([](mx::Context ctx) {
    check_loss(L1Loss()(matrix(kPred, ctx), matrix(kLabel, ctx)), ctx, {0.5, 2.5, 1.5});
    check_loss(L1Loss(3.0)(matrix(kPred, ctx), matrix(kLabel, ctx)), ctx, {1.5, 7.5, 4.5});
    check_loss(L1Loss()(matrix(kPred, ctx, DType::float64), matrix(kLabel, ctx, DType::float64)), ctx,
               {0.5, 2.5, 1.5}, 1e-12, 0);
  });
}

// ---- softmax cross-entropy ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_with_sparse_labels) {
  const Values want = sparse_cross_entropy(as_float(kLogits), kClasses);
  // By hand for the first two rows: log(e + e² + e³) - 3 and log(3).
  BOOST_TEST_REQUIRE(std::abs(want[0] - (std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3)) < 1e-12);
  BOOST_TEST_REQUIRE(std::abs(want[1] - std::log(3.0)) < 1e-12);
  const std::vector<float> classes_f(kClasses.begin(), kClasses.end());
  const std::vector<std::int32_t> classes_i(kClasses.begin(), kClasses.end());
  ndg_test::for_each_context([&](mx::Context ctx) {
    const SoftmaxCrossEntropyLoss ce;
    const nd::NDArray logits = matrix(kLogits, ctx);
    BOOST_TEST_CONTEXT("float32 labels") { check_loss(ce(logits, nd::array(classes_f, {4}, ctx)), ctx, want); }
    BOOST_TEST_CONTEXT("int32 labels") { check_loss(ce(logits, nd::array(classes_i, {4}, ctx)), ctx, want); }
    BOOST_TEST_CONTEXT("(batch, 1) labels") { check_loss(ce(logits, nd::array(classes_f, {4, 1}, ctx)), ctx, want); }
    BOOST_TEST_CONTEXT("float64") {
      const nd::NDArray l = ce(matrix(kLogits, ctx, DType::float64), nd::array(classes_i, {4}, ctx));
      BOOST_TEST(l.dtype() == DType::float64);
      check_loss(l, ctx, sparse_cross_entropy(kLogits, kClasses), 1e-12, 0);
    }
    BOOST_TEST_CONTEXT("weight 2.5") {
      Values scaled = want;
      for (double& x : scaled) x *= 2.5;
      check_loss(SoftmaxCrossEntropyLoss(-1, true, false, 2.5)(logits, nd::array(classes_i, {4}, ctx)), ctx, scaled);
    }
  });
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_clips_labels_as_mxnet_pick) {
  // MXNet's pick (mode "clip"): a label past the last class scores the last class, a negative one
  // the first, and 1.75 truncates to 1. So labels [5, -2, 1.75, 2] score classes [2, 0, 1, 2].
  const Rows logits_f = as_float(kLogits);
  const Values want = sparse_cross_entropy(logits_f, {2, 0, 1, 2});
  ndg_test::for_each_context([&](mx::Context ctx) {
    const SoftmaxCrossEntropyLoss ce;
    const nd::NDArray logits = matrix(kLogits, ctx);
    BOOST_TEST_CONTEXT("float32 labels") { check_loss(ce(logits, nd::array({5, -2, 1.75, 2}, ctx)), ctx, want); }
    BOOST_TEST_CONTEXT("int32 labels") {
      check_loss(ce(logits, nd::array({5, -2, 1, 2}, ctx, DType::int32)), ctx, want);
    }
    BOOST_TEST_CONTEXT("uint8 labels") {
      check_loss(ce(logits, nd::array({255, 0, 1, 2}, ctx, DType::uint8)), ctx, want);
    }
  });
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_averages_over_positions) {
  // (2, 2, 3) logits with (2, 2) labels: each sample's loss is the mean over its 2 positions.
  const Rows positions = {{1, 2, 3}, {1, 1, 1}, {0, -1, 2.5}, {-0.5, 4, 0.25}};
  const Values per_position = sparse_cross_entropy(as_float(positions), kClasses);
  const Values want{(per_position[0] + per_position[1]) / 2, (per_position[2] + per_position[3]) / 2};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray logits = matrix(positions, ctx).reshape({2, 2, 3});
    const nd::NDArray labels = nd::array(std::vector<float>{2, 0, 1, 1}, {2, 2}, ctx);
    check_loss(SoftmaxCrossEntropyLoss()(logits, labels), ctx, want);
  });
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_with_dense_labels) {
  const Rows probabilities = {{0.2, 0.3, 0.5}, {1, 0, 0}, {0, 0.5, 0.5}, {0.25, 0.25, 0.5}};
  const Rows logits_f = as_float(kLogits), probabilities_f = as_float(probabilities);
  Values want;
  for (std::size_t i = 0; i < logits_f.size(); ++i) {
    const double lse = log_sum_exp(logits_f[i]);
    double l = 0;
    for (std::size_t c = 0; c < 3; ++c) l -= probabilities_f[i][c] * (logits_f[i][c] - lse);
    want.push_back(l);
  }
  ndg_test::for_each_context([&](mx::Context ctx) {
    const SoftmaxCrossEntropyLoss ce(-1, false);
    check_loss(ce(matrix(kLogits, ctx), matrix(probabilities, ctx)), ctx, want);
    // One-hot dense labels give the sparse result.
    const Rows one_hot = {{0, 0, 1}, {1, 0, 0}, {0, 1, 0}, {0, 1, 0}};
    check_loss(ce(matrix(kLogits, ctx), matrix(one_hot, ctx)), ctx, sparse_cross_entropy(logits_f, kClasses));
  });
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_from_logits_uses_pred_as_log_probabilities) {
  // pred is taken as log-probabilities as it is (not normalised again): the loss is -pred[label].
  const Rows log_probabilities = {{-0.5, -1, -2}, {-3, -0.25, -1.5}, {-0.125, -4, -2}};
  const std::vector<float> classes{2, 1, 0};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const SoftmaxCrossEntropyLoss ce(-1, true, true);
    check_loss(ce(matrix(log_probabilities, ctx), nd::array(classes, {3}, ctx)), ctx, {2, 0.25, 0.125});
    // Dense labels with from_logits: -sum(label * pred).
    const SoftmaxCrossEntropyLoss dense(-1, false, true);
    const Rows labels = {{0.5, 0.5, 0}, {0, 0, 1}, {0.25, 0.25, 0.5}};
    check_loss(dense(matrix(log_probabilities, ctx), matrix(labels, ctx)), ctx, {0.75, 1.5, 2.03125});
  });
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_is_stable_for_extreme_logits) {
  // exp(1000) overflows float32 and double: the loss must come from the shifted logits.
  //   row 0: log-sum-exp = 1000 (+ e^-1000 terms), label 1 -> 2000; label 0 -> 0.
  //   row 1: log-sum-exp = 1000 + log(1 + e^-1), label 2 (999) -> 1 + log(1 + e^-1).
  const Rows logits = {{1000, -1000, 0}, {-1000, 1000, 999}, {1000, -1000, 0}};
  const Values want{2000, 1 + std::log1p(std::exp(-1.0)), 0};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const DType dt : {DType::float32, DType::float64}) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        nd::NDArray x = matrix(logits, ctx, dt);
        x.attach_grad();
        nd::NDArray l;
        {
          auto scope = ag::record();
          l = SoftmaxCrossEntropyLoss()(x, nd::array({1, 2, 0}, ctx));
          l.backward();
        }
        check_loss(l, ctx, want, 1e-6, 1e-6);
        // The gradient softmax - one_hot is finite too: softmax rows are [1, 0, 0], [0, 1/(1+e^-1), ...].
        const double p = 1 / (1 + std::exp(-1.0));
        check_close(x.grad(), {1, -1, 0, 0, p, (1 - p) - 1, 0, 0, 0}, 1e-6, 1e-6);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_gradient_is_softmax_minus_one_hot) {
  const Rows logits_f = as_float(kLogits);
  // d loss_i / d logits_i = softmax(logits_i) - one_hot(label_i), and 0 for the other rows.
  Values want;
  for (std::size_t i = 0; i < logits_f.size(); ++i) {
    const Values p = softmax(logits_f[i]);
    for (std::size_t c = 0; c < 3; ++c) want.push_back(p[c] - (static_cast<int>(c) == kClasses[i] ? 1.0 : 0.0));
  }
  const auto scaled = [&](double factor) {
    Values v = want;
    for (double& x : v) x *= factor;
    return v;
  };
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray labels = nd::array(std::vector<std::int32_t>(kClasses.begin(), kClasses.end()), {4}, ctx);
    nd::NDArray logits = matrix(kLogits, ctx);
    logits.attach_grad();
    // The per-sample losses summed (backward's head gradient is ones).
    {
      auto scope = ag::record();
      SoftmaxCrossEntropyLoss()(logits, labels).backward();
    }
    BOOST_TEST_CONTEXT("sum over the batch") { check_close(logits.grad(), want); }
    // Their mean: divided by the batch size.
    {
      auto scope = ag::record();
      SoftmaxCrossEntropyLoss()(logits, labels).mean().backward();
    }
    BOOST_TEST_CONTEXT("mean over the batch") { check_close(logits.grad(), scaled(0.25)); }
    // A loss weight scales the gradient.
    {
      auto scope = ag::record();
      SoftmaxCrossEntropyLoss(-1, true, false, 3.0)(logits, labels).backward();
    }
    BOOST_TEST_CONTEXT("weight 3") { check_close(logits.grad(), scaled(3.0)); }
    // Dense one-hot labels give the same gradient.
    {
      auto scope = ag::record();
      SoftmaxCrossEntropyLoss(-1, false)(logits, matrix({{0, 0, 1}, {1, 0, 0}, {0, 1, 0}, {0, 1, 0}}, ctx)).backward();
    }
    BOOST_TEST_CONTEXT("dense labels") { check_close(logits.grad(), want); }
    // (2, 2, 3) logits: each sample averages its 2 positions, so each position gets half.
    nd::NDArray logits3 = matrix(kLogits, ctx).reshape({2, 2, 3});
    logits3.attach_grad();
    {
      auto scope = ag::record();
      SoftmaxCrossEntropyLoss()(logits3, labels.reshape({2, 2})).backward();
    }
    BOOST_TEST_CONTEXT("averaged over positions") {
      BOOST_TEST(logits3.grad().shape() == (mx::Shape{2, 2, 3}));
      check_close(logits3.grad(), scaled(0.5));
    }
  });
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_gradient_with_clipped_labels) {
  // Labels [5, -2, 1.75, 2] score classes [2, 0, 1, 2] (pick's mode "clip"): the gradient is
  // softmax - one_hot of those classes, and the class axis may be named as 1 or -1.
  const Rows logits_f = as_float(kLogits);
  const std::vector<int> picked{2, 0, 1, 2};
  Values want;
  for (std::size_t i = 0; i < logits_f.size(); ++i) {
    const Values p = softmax(logits_f[i]);
    for (std::size_t c = 0; c < 3; ++c) want.push_back(p[c] - (static_cast<int>(c) == picked[i] ? 1.0 : 0.0));
  }
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const int axis : {-1, 1}) {
      BOOST_TEST_CONTEXT("axis " << axis) {
        nd::NDArray logits = matrix(kLogits, ctx);
        logits.attach_grad();
        nd::NDArray l;
        {
          auto scope = ag::record();
          l = SoftmaxCrossEntropyLoss(axis)(logits, nd::array({5, -2, 1.75, 2}, ctx));
          l.backward();
        }
        check_loss(l, ctx, sparse_cross_entropy(logits_f, picked));
        check_close(logits.grad(), want);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(softmax_cross_entropy_runs_as_mxnet_gluon_does) {
  // -pick(log_softmax(pred), label): three ops forward (no one-hot mask, no mean over one value per
  // sample) and one registered backward op for each of pick and log_softmax.
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray logits = matrix(kLogits, ctx);
    logits.attach_grad();
    const nd::NDArray labels = nd::array({2, 0, 1, 1}, ctx);
    mx::profiler::reset();
    mx::profiler::set_state("run");
    {
      auto scope = ag::record();
      SoftmaxCrossEntropyLoss()(logits, labels).backward();
    }
    mx::profiler::set_state("stop");
    const std::string table = mx::profiler::dumps(true);
    BOOST_TEST_INFO(table);
    for (const char* op : {"log_softmax", "pick", "negative", "_backward_pick", "_backward_log_softmax"}) {
      BOOST_TEST(profiler_calls(table, op) == 1, op);
    }
    for (const char* op : {"mean", "sum", "equal", "_arange", "Cast", "maximum", "minimum", "exp", "multiply",
                           "gradient of reshape"}) {
      BOOST_TEST(profiler_calls(table, op) == -1, op);
    }
  });
}

BOOST_AUTO_TEST_CASE(one_value_per_sample_is_not_averaged_and_still_passes_gradients) {
  // (3, 1) predictions: each sample's loss is its one value, through a reshape (a view).
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray pred = nd::array({{1.5}, {-2}, {0}}, ctx);
    pred.attach_grad();
    const nd::NDArray label = nd::array({1, 1, -3}, ctx);
    nd::NDArray l;
    {
      auto scope = ag::record();
      l = L2Loss(2.0)(pred, label);
      (l * nd::array({1, 2, 3}, ctx)).sum().backward();
    }
    check_loss(l, ctx, {0.25, 9, 9});
    check_close(pred.grad(), {1, -12, 18});  // w (p - l) = [1, -6, 6] times the head gradient [1, 2, 3]
    {
      auto scope = ag::record();
      L1Loss()(pred, label).backward();
    }
    check_close(pred.grad(), {1, -1, 1});
  });
}

// ---- sigmoid binary cross-entropy ------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(sigmoid_binary_cross_entropy_from_logits) {
  // Logits of ±100 would give log(0) in a naive formula; the values are 100 or ~0.
  const Rows logits = {{100, -100}, {0.5, -2}, {100, -100}, {-0.75, 3}};
  const Rows labels = {{0, 1}, {1, 0}, {1, 0}, {0.25, 1}};
  Values want;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    want.push_back((binary_cross_entropy_of_logit(logits[i][0], labels[i][0]) +
                    binary_cross_entropy_of_logit(logits[i][1], labels[i][1])) / 2);
  }
  BOOST_TEST_REQUIRE(want[0] == 100.0);
  BOOST_TEST_REQUIRE(want[2] < 1e-40);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const SigmoidBinaryCrossEntropyLoss bce;
    for (const DType dt : {DType::float32, DType::float64}) {
      BOOST_TEST_CONTEXT("dtype " << mx::dtype_name(dt)) {
        check_loss(bce(matrix(logits, ctx, dt), matrix(labels, ctx, dt)), ctx, want, 1e-6, 1e-7);
      }
    }
    // Labels of another shape with the same size, and a loss weight.
    Values scaled = want;
    for (double& x : scaled) x *= 0.5;
    const nd::NDArray flat_labels = nd::array(flat(labels), {8}, ctx, DType::float32);
    check_loss(SigmoidBinaryCrossEntropyLoss(false, 0.5)(matrix(logits, ctx), flat_labels), ctx, scaled, 1e-6, 1e-7);
    // The gradient with respect to the logits is (sigmoid(x) - z) / 2, finite at ±100.
    nd::NDArray x = matrix(logits, ctx);
    x.attach_grad();
    {
      auto scope = ag::record();
      bce(x, matrix(labels, ctx)).backward();
    }
    Values grad;
    for (std::size_t i = 0; i < logits.size(); ++i) {
      for (std::size_t j = 0; j < 2; ++j) grad.push_back((1 / (1 + std::exp(-logits[i][j])) - labels[i][j]) / 2);
    }
    check_close(x.grad(), grad, 1e-5, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(sigmoid_binary_cross_entropy_from_sigmoid) {
  const Rows probabilities = {{0.9, 0.2}, {0.5, 0.999}, {0.1, 0.75}};
  const Rows labels = {{1, 0}, {1, 1}, {1, 0.5}};
  const Rows p = as_float(probabilities);
  Values want;
  for (std::size_t i = 0; i < p.size(); ++i) {
    double l = 0;
    for (std::size_t j = 0; j < 2; ++j) {
      const double z = labels[i][j];
      l -= z * std::log(p[i][j]) + (1 - z) * std::log(1 - p[i][j]);
    }
    want.push_back(l / 2);
  }
  // By hand for the first row: -(log 0.9 + log 0.8) / 2.
  BOOST_TEST_REQUIRE(std::abs(want[0] + (std::log(0.9) + std::log(0.8)) / 2) < 1e-7);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const SigmoidBinaryCrossEntropyLoss bce(true);
    check_loss(bce(matrix(probabilities, ctx), matrix(labels, ctx)), ctx, want, 1e-5, 1e-6);
    // The same values as the logits of these probabilities without from_sigmoid.
    Rows logits = p;
    for (Values& r : logits) {
      for (double& x : r) x = std::log(x / (1 - x));
    }
    check_loss(SigmoidBinaryCrossEntropyLoss()(matrix(logits, ctx), matrix(labels, ctx)), ctx, want, 1e-4, 1e-6);
  });
}

// ---- errors ------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(label_size_mismatch_is_a_shape_error) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray pred = nd::zeros({3, 2}, ctx), label = nd::zeros({4}, ctx);
    NDG_CHECK_THROWS_WITH(L2Loss()(pred, label), mx::ShapeError, "L2Loss", "(4,)", "(3, 2)");
    NDG_CHECK_THROWS_WITH(L1Loss()(pred, label), mx::ShapeError, "L1Loss", "(4,)", "(3, 2)");
    NDG_CHECK_THROWS_WITH(SigmoidBinaryCrossEntropyLoss()(pred, label), mx::ShapeError,
                          "SigmoidBinaryCrossEntropyLoss", "(4,)", "(3, 2)");
    NDG_CHECK_THROWS_WITH(SoftmaxCrossEntropyLoss()(pred, label), mx::ShapeError, "SoftmaxCrossEntropyLoss",
                          "sparse label", "(4,)", "(3, 2)");
    NDG_CHECK_THROWS_WITH(SoftmaxCrossEntropyLoss(-1, false)(pred, nd::zeros({3, 3}, ctx)), mx::ShapeError,
                          "SoftmaxCrossEntropyLoss", "(3, 3)", "(3, 2)");
    // Sparse labels index the last axis.
    NDG_CHECK_THROWS_WITH(SoftmaxCrossEntropyLoss(0)(pred, nd::zeros({2}, ctx)), mx::ShapeError,
                          "SoftmaxCrossEntropyLoss", "last axis");
  });
}

BOOST_AUTO_TEST_CASE(pred_and_label_on_different_contexts, *boost::unit_test::precondition(ndg_test::needs_gpus{1})) {
  const nd::NDArray pred = nd::zeros({3, 2}, mx::gpu(0)), label = nd::zeros({3, 2}, mx::cpu());
  NDG_CHECK_THROWS_WITH(L2Loss()(pred, label), mx::ContextMismatch, "L2Loss", "gpu(0)", "cpu(0)");
  NDG_CHECK_THROWS_WITH(SoftmaxCrossEntropyLoss()(pred, nd::zeros({3}, mx::cpu())), mx::ContextMismatch,
                        "SoftmaxCrossEntropyLoss", "gpu(0)", "cpu(0)");
}

// ---- gradients of L2 and L1 -----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(l2_and_l1_gradients) {
  // d/dp of mean_k 0.5 w (p - l)² is w (p - l) / k; of mean_k w |p - l|, w sign(p - l) / k (k = 2 here).
  ndg_test::for_each_context([](mx::Context ctx) {
    nd::NDArray pred = matrix(kPred, ctx);
    pred.attach_grad();
    {
      auto scope = ag::record();
      L2Loss(3.0)(pred, matrix(kLabel, ctx)).backward();
    }
    check_close(pred.grad(), {1.5, 0, -3, 4.5, -3, 1.5});
    {
      auto scope = ag::record();
      L1Loss()(pred, matrix(kLabel, ctx)).backward();
    }
    check_close(pred.grad(), {0.5, 0, -0.5, 0.5, -0.5, 0.5});
  });
}

BOOST_AUTO_TEST_SUITE_END()
