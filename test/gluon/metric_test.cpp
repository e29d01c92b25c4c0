#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gluon/metric.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;

// mx::metric: Accuracy, TopKAccuracy, CrossEntropy and Loss on predictions made by hand, for
// labels of every dtype, with labels and predictions on every context (and on different ones),
// against counts and sums done here on the host; and their errors, which leave the metric as it was.

namespace {

// Four samples, three classes; the argmax of each row is 1, 0, 2, 1.
nd::NDArray scores(mx::Context ctx) {
  return nd::array({{0.1, 0.7, 0.2}, {0.8, 0.1, 0.1}, {0.2, 0.3, 0.5}, {0.3, 0.4, 0.3}}, ctx);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(metric)

BOOST_AUTO_TEST_CASE(accuracy_of_scores_on_every_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (mx::DType dtype : {mx::DType::float32, mx::DType::float64, mx::DType::int32, mx::DType::int64,
                            mx::DType::uint8}) {
      BOOST_TEST_CONTEXT("labels " << dtype) {
        mx::metric::Accuracy accuracy;
        // Predicted 1, 0, 2, 1 against 1, 0, 1, 1: three of four.
        accuracy.update(nd::array({1, 0, 1, 1}, ctx, dtype), scores(ctx));
        const auto [name, value] = accuracy.get();
        BOOST_TEST(name == "accuracy");
        BOOST_TEST(value == 0.75);
        BOOST_TEST(accuracy.num_correct() == 3);
        BOOST_TEST(accuracy.num_inst() == 4);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(accuracy_of_class_ids) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::metric::Accuracy accuracy;
    // (B,) predictions are class ids; a float id is truncated as MXNet's astype('int32') does.
    accuracy.update(nd::array({2, 0, 1, 1, 9}, ctx, mx::DType::int32), nd::array({2, 0, 2, 1, 9.0}, ctx));
    BOOST_TEST(accuracy.get().second == 0.8);
    accuracy.update(nd::array({3, 4}, ctx), nd::array({3.0, 4.0}, ctx, mx::DType::float64));
    BOOST_TEST(accuracy.get().second == 6.0 / 7.0);
  });
}

BOOST_AUTO_TEST_CASE(accumulates_until_reset) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::metric::Accuracy accuracy;
    BOOST_TEST(std::isnan(accuracy.get().second));  // nothing seen yet, as in MXNet
    accuracy.update(nd::array({1, 0, 1, 1}, ctx), scores(ctx));  // 3 of 4
    accuracy.update(nd::array({0, 2}, ctx), nd::array({{0.9, 0.1, 0.0}, {0.1, 0.2, 0.7}}, ctx));  // 2 of 2
    accuracy.update(nd::array({2}, ctx), nd::array({{0.9, 0.1, 0.0}}, ctx));  // 0 of 1
    BOOST_TEST(accuracy.get().second == 5.0 / 7.0);
    BOOST_TEST(accuracy.num_inst() == 7);
    // An empty batch changes nothing.
    accuracy.update(nd::zeros({0}, ctx), nd::zeros({0, 3}, ctx));
    BOOST_TEST(accuracy.num_inst() == 7);
    accuracy.reset();
    BOOST_TEST(accuracy.num_inst() == 0);
    BOOST_TEST(accuracy.num_correct() == 0);
    BOOST_TEST(std::isnan(accuracy.get().second));
    accuracy.update(nd::array({2}, ctx), nd::array({{0.0, 0.1, 0.9}}, ctx));
    BOOST_TEST(accuracy.get().second == 1.0);
  });
}

BOOST_AUTO_TEST_CASE(labels_and_predictions_on_different_contexts) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (mx::Context other : ndg_test::all_contexts()) {
      BOOST_TEST_CONTEXT("labels on " << other.str()) {
        mx::metric::Accuracy accuracy;
        accuracy.update(nd::array({1, 0, 1, 1}, other), scores(ctx));
        BOOST_TEST(accuracy.get().second == 0.75);
        // Labels (B, 1) are flattened, as MXNet does.
        accuracy.update(nd::array({1, 0, 2, 1}, other).reshape({4, 1}), scores(ctx));
        BOOST_TEST(accuracy.get().second == 7.0 / 8.0);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(agrees_with_a_host_count_on_random_scores) {
  mx::random::seed(17);
  const nd::NDArray preds = nd::random::uniform(0, 1, {300, 10}, mx::cpu());
  std::vector<double> labels(300);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<double>((i * 7) % 10);
  // The count by hand: the first maximum of each row (uniform draws do not tie).
  const auto values = preds.asvector<float>();
  std::int64_t correct = 0;
  for (std::size_t r = 0; r < 300; ++r) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < 10; ++c) best = values[r * 10 + c] > values[r * 10 + best] ? c : best;
    correct += static_cast<double>(best) == labels[r] ? 1 : 0;
  }
  BOOST_TEST_REQUIRE(correct > 0);
  BOOST_TEST_REQUIRE(correct < 300);
  ndg_test::for_each_context([&](mx::Context ctx) {
    mx::metric::Accuracy accuracy;
    accuracy.update(nd::array(labels, {300}, ctx, mx::DType::float32), preds.copyto(ctx));
    BOOST_TEST(accuracy.num_correct() == correct);
    BOOST_TEST(accuracy.get().second == static_cast<double>(correct) / 300.0);
  });
}

BOOST_AUTO_TEST_CASE(one_pair_of_arrays_per_device) {
  const auto ctxs = ndg_test::all_contexts();
  std::vector<nd::NDArray> labels, preds;
  for (mx::Context ctx : ctxs) {
    labels.push_back(nd::array({1, 0, 1, 1}, ctx));
    preds.push_back(scores(ctx));
  }
  mx::metric::Accuracy accuracy;
  accuracy.update(labels, preds);
  BOOST_TEST(accuracy.num_inst() == 4 * static_cast<std::int64_t>(ctxs.size()));
  BOOST_TEST(accuracy.get().second == 0.75);
  preds.pop_back();
  NDG_CHECK_THROWS_WITH(accuracy.update(labels, preds), mx::ValueError,
                        std::to_string(ctxs.size()) + " label arrays", std::to_string(ctxs.size() - 1));
  // A bad pair after good ones: nothing is counted.
  const std::int64_t counted = accuracy.num_inst();
  NDG_CHECK_THROWS_WITH(accuracy.update({nd::array({1, 0}), nd::array({1})}, {nd::array({1, 0}), nd::array({0, 1})}),
                        mx::ShapeError, "1 labels", "2 predictions");
  BOOST_TEST(accuracy.num_inst() == counted);
  BOOST_TEST(accuracy.get().second == 0.75);
}

BOOST_AUTO_TEST_CASE(mismatched_batch_sizes_are_shape_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::metric::Accuracy accuracy;
    NDG_CHECK_THROWS_WITH(accuracy.update(nd::array({1, 0, 1}, ctx), scores(ctx)), mx::ShapeError, "3 labels",
                          "(3,)", "4 predictions", "(4, 3)");
    NDG_CHECK_THROWS_WITH(accuracy.update(nd::array({1, 0}, ctx), nd::array({1, 0, 1}, ctx)), mx::ShapeError,
                          "2 labels", "3 predictions");
    NDG_CHECK_THROWS_WITH(accuracy.update(nd::array({1, 0}, ctx), nd::zeros({2, 3, 4}, ctx)), mx::ShapeError,
                          "(2, 3, 4)");
    NDG_CHECK_THROWS_WITH(accuracy.update(nd::array({1, 0}, ctx), nd::zeros({2, 0}, ctx)), mx::ShapeError,
                          "(2, 0)");
    BOOST_TEST(accuracy.num_inst() == 0);  // nothing counted by a failed update
  });
}

BOOST_AUTO_TEST_CASE(named_accuracy) {
  mx::metric::Accuracy accuracy("test_acc");
  accuracy.update(nd::array({0}), nd::array({{1.0, 0.0}}));
  BOOST_TEST(accuracy.get().first == "test_acc");
  BOOST_TEST(accuracy.get().second == 1.0);
}

// ---- TopKAccuracy ------------------------------------------------------------------------------------

// The labels' ranks in scores(ctx) (the classes before each in a stable descending sort) are 0, 2,
// 2, 1 for these labels: row 1's label 2 ties class 1 at 0.1, which ranks first; row 3's label 0
// ties class 2 at 0.3, and ranks first.
const std::vector<double> kTopKLabels = {1, 2, 0, 0};

BOOST_AUTO_TEST_CASE(top_k_accuracy_of_scores_on_every_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (mx::DType dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT("labels " << dtype) {
        const nd::NDArray labels = nd::array(kTopKLabels, {4}, ctx, dtype);
        // top 1: rank 0 only; top 2: ranks 0 and 1; top 3 (every class) and more: all four.
        for (const auto& [k, want] : std::vector<std::pair<std::int64_t, double>>{{1, 0.25}, {2, 0.5}, {3, 1.0}, {5, 1.0}}) {
          mx::metric::TopKAccuracy top_k(k);
          top_k.update(labels, scores(ctx));
          const auto [name, value] = top_k.get();
          BOOST_TEST(name == "top_k_accuracy_" + std::to_string(k));
          BOOST_TEST(value == want);
          BOOST_TEST(top_k.num_correct() == static_cast<std::int64_t>(want * 4));
          BOOST_TEST(top_k.num_inst() == 4);
        }
      }
    }
    // Scores of any dtype: float64, and integers (ranked exactly).
    mx::metric::TopKAccuracy top2(2);
    top2.update(nd::array(kTopKLabels, {4}, ctx), scores(ctx).astype(mx::DType::float64));
    top2.update(nd::array(kTopKLabels, {4}, ctx),
                nd::array({{1, 7, 2}, {8, 1, 1}, {2, 3, 5}, {3, 4, 3}}, ctx, mx::DType::int32));
    BOOST_TEST(top2.get().second == 0.5);
    BOOST_TEST(top2.num_inst() == 8);
  });
}

BOOST_AUTO_TEST_CASE(top_k_accuracy_with_labels_on_other_contexts_and_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (mx::Context other : ndg_test::all_contexts()) {
      BOOST_TEST_CONTEXT("labels on " << other.str()) {
        mx::metric::TopKAccuracy top2(2, "top");
        top2.update(nd::array(kTopKLabels, {4}, other), scores(ctx));
        top2.update(nd::array(kTopKLabels, {4}, other).reshape({4, 1}), scores(ctx));  // (B, 1) labels
        BOOST_TEST(top2.get().first == "top_2");
        BOOST_TEST(top2.get().second == 0.5);
        BOOST_TEST(top2.num_inst() == 8);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(top_k_accuracy_of_one_is_accuracy_and_top_k_agrees_with_a_host_count) {
  mx::random::seed(23);
  const nd::NDArray preds = nd::random::uniform(0, 1, {200, 10}, mx::cpu());
  std::vector<double> labels(200);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<double>((i * 3) % 10);
  // By hand: a label is in the top 3 when fewer than 3 scores of its row beat it (no ties here).
  const auto values = preds.asvector<float>();
  std::int64_t in_top3 = 0;
  for (std::size_t r = 0; r < 200; ++r) {
    const float mine = values[r * 10 + static_cast<std::size_t>(labels[r])];
    int higher = 0;
    for (std::size_t c = 0; c < 10; ++c) higher += values[r * 10 + c] > mine ? 1 : 0;
    in_top3 += higher < 3 ? 1 : 0;
  }
  BOOST_TEST_REQUIRE(in_top3 > 0);
  BOOST_TEST_REQUIRE(in_top3 < 200);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray y = nd::array(labels, {200}, ctx, mx::DType::float32), scores = preds.copyto(ctx);
    mx::metric::Accuracy accuracy;
    mx::metric::TopKAccuracy top1, top3(3);
    accuracy.update(y, scores);
    top1.update(y, scores);
    top3.update(y, scores);
    BOOST_TEST(top1.num_correct() == accuracy.num_correct());
    BOOST_TEST(top3.num_correct() == in_top3);
    BOOST_TEST(top3.get().second == static_cast<double>(in_top3) / 200.0);
  });
}

BOOST_AUTO_TEST_CASE(top_k_accuracy_of_infinite_nan_and_out_of_range) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  ndg_test::for_each_context([&](mx::Context ctx) {
    // Infinite scores rank where they belong; a NaN elsewhere in the row ranks below every class;
    // a NaN at the label, and a label outside [0, 3), are never correct.
    const nd::NDArray preds =
        nd::array({{-inf, 0.5, inf}, {-inf, 0.5, inf}, {nan, 0.2, 0.1}, {0.1, nan, 0.3}, {0.1, 0.2, 0.3}, {0.1, 0.2, 0.3}},
                  ctx);
    const nd::NDArray labels = nd::array({1, 2, 1, 1, 3, -1}, ctx, mx::DType::int32);
    mx::metric::TopKAccuracy top1(1), top2(2), top3(3);
    top1.update(labels, preds);  // rows 1 and 2
    top2.update(labels, preds);  // rows 0, 1 and 2
    top3.update(labels, preds);  // the same: row 3's NaN and the labels 3 and -1 never count
    BOOST_TEST(top1.num_correct() == 2);
    BOOST_TEST(top2.num_correct() == 3);
    BOOST_TEST(top3.num_correct() == 3);
    BOOST_TEST(top3.num_inst() == 6);
  });
}

BOOST_AUTO_TEST_CASE(top_k_accuracy_errors_leave_it_as_it_was) {
  NDG_CHECK_THROWS_WITH(mx::metric::TopKAccuracy(0), mx::ValueError, "TopKAccuracy", "top_k", "0");
  NDG_CHECK_THROWS_WITH(mx::metric::TopKAccuracy(-2), mx::ValueError, "-2");
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::metric::TopKAccuracy top2(2);
    top2.update(nd::array(kTopKLabels, {4}, ctx), scores(ctx));
    NDG_CHECK_THROWS_WITH(top2.update(nd::array({1, 0, 1}, ctx), scores(ctx)), mx::ShapeError, "TopKAccuracy.update",
                          "3 labels", "(3,)", "4 predictions", "(4, 3)");
    NDG_CHECK_THROWS_WITH(top2.update(nd::array({1, 0, 1, 1}, ctx), nd::array({1, 0, 1, 1}, ctx)), mx::ShapeError,
                          "TopKAccuracy.update", "preds (4,)", "(B, classes)");
    NDG_CHECK_THROWS_WITH(top2.update(nd::array({1, 0}, ctx), nd::zeros({2, 3, 1}, ctx)), mx::ShapeError, "(2, 3, 1)");
    NDG_CHECK_THROWS_WITH(top2.update(nd::array({1, 0}, ctx), nd::zeros({2, 0}, ctx)), mx::ShapeError, "(2, 0)");
    NDG_CHECK_THROWS_WITH(top2.update(nd::NDArray(), scores(ctx)), mx::ValueError, "TopKAccuracy.update");
    NDG_CHECK_THROWS_WITH(top2.update({nd::array(kTopKLabels, {4}, ctx)}, {scores(ctx), scores(ctx)}), mx::ValueError,
                          "TopKAccuracy.update", "1 label arrays", "2 prediction arrays");
    // A bad pair after a good one: nothing is counted.
    NDG_CHECK_THROWS_WITH(top2.update({nd::array(kTopKLabels, {4}, ctx), nd::array({1}, ctx)}, {scores(ctx), scores(ctx)}),
                          mx::ShapeError, "1 labels", "4 predictions");
    BOOST_TEST(top2.num_inst() == 4);
    BOOST_TEST(top2.get().second == 0.5);
    // An empty batch counts nothing either.
    top2.update(nd::zeros({0}, ctx), nd::zeros({0, 3}, ctx));
    BOOST_TEST(top2.num_inst() == 4);
  });
}

// ---- CrossEntropy -------------------------------------------------------------------------------------

// -log(p + eps) as the metric takes it: of the float32 probability, in double precision.
double nll(double p, double eps = 1e-12) { return -std::log(static_cast<double>(static_cast<float>(p)) + eps); }

BOOST_AUTO_TEST_CASE(cross_entropy_on_every_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (mx::DType dtype : ndg_test::kAllDTypes) {
      BOOST_TEST_CONTEXT("labels " << dtype) {
        mx::metric::CrossEntropy ce;
        BOOST_TEST(std::isnan(ce.get().second));
        // p[label] = 0.5, 0.8, 0.6: (log 2 - log 0.8 - log 0.6) / 3 = 0.4757...
        ce.update(nd::array({0, 1, 2}, ctx, dtype),
                  nd::array({{0.5, 0.25, 0.25}, {0.1, 0.8, 0.1}, {0.2, 0.2, 0.6}}, ctx));
        const auto [name, value] = ce.get();
        BOOST_TEST(name == "cross-entropy");
        BOOST_TEST(value == (nll(0.5) + nll(0.8) + nll(0.6)) / 3, tt::tolerance(1e-12));
        BOOST_TEST(value == 0.475706, tt::tolerance(1e-5));
        BOOST_TEST(ce.num_inst() == 3);
      }
    }
    // float64 probabilities, and (B, 1) labels; the mean runs over both batches.
    mx::metric::CrossEntropy ce;
    ce.update(nd::array({0, 1, 2}, ctx), nd::array({{0.5, 0.25, 0.25}, {0.1, 0.8, 0.1}, {0.2, 0.2, 0.6}}, ctx));
    ce.update(nd::array({1}, ctx).reshape({1, 1}), nd::array({{0.75, 0.25}}, ctx, mx::DType::float64));
    BOOST_TEST(ce.get().second == (nll(0.5) + nll(0.8) + nll(0.6) - std::log(0.25 + 1e-12)) / 4, tt::tolerance(1e-12));
    BOOST_TEST(ce.num_inst() == 4);
    ce.reset();
    BOOST_TEST(ce.num_inst() == 0);
    BOOST_TEST(std::isnan(ce.get().second));
  });
}

BOOST_AUTO_TEST_CASE(cross_entropy_of_zero_probabilities_is_bounded_by_eps) {
  const double inf = std::numeric_limits<double>::infinity();
  ndg_test::for_each_context([&](mx::Context ctx) {
    mx::metric::CrossEntropy ce;  // eps 1e-12: -log(1e-12) = 27.631...
    ce.update(nd::array({0}, ctx), nd::array({{0.0, 1.0}}, ctx));
    BOOST_TEST(ce.get().second == 27.631021115928547, tt::tolerance(1e-12));
    mx::metric::CrossEntropy no_eps(0, "ce");
    BOOST_TEST(no_eps.eps() == 0);
    no_eps.update(nd::array({0}, ctx), nd::array({{0.0, 1.0}}, ctx));
    BOOST_TEST(no_eps.get().first == "ce");
    BOOST_TEST(no_eps.get().second == inf);
    // An infinite value in another class does not spoil the label's probability.
    mx::metric::CrossEntropy picked(0.5);
    picked.update(nd::array({0}, ctx), nd::array({{0.5, inf}}, ctx));
    BOOST_TEST(picked.get().second == 0.0, tt::tolerance(1e-12));  // -log(0.5 + 0.5)
  });
}

BOOST_AUTO_TEST_CASE(cross_entropy_with_labels_on_other_contexts) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (mx::Context other : ndg_test::all_contexts()) {
      BOOST_TEST_CONTEXT("labels on " << other.str()) {
        mx::metric::CrossEntropy ce;
        ce.update(nd::array({1, 0}, other), nd::array({{0.5, 0.5}, {0.25, 0.75}}, ctx));
        BOOST_TEST(ce.get().second == (nll(0.5) + nll(0.25)) / 2, tt::tolerance(1e-12));
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(cross_entropy_errors_leave_it_as_it_was) {
  NDG_CHECK_THROWS_WITH(mx::metric::CrossEntropy(-1e-12), mx::ValueError, "CrossEntropy", "eps", "-1e-12");
  NDG_CHECK_THROWS_WITH((mx::metric::CrossEntropy(std::numeric_limits<double>::quiet_NaN())), mx::ValueError, "nan");
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray probs = nd::array({{0.5, 0.25, 0.25}, {0.1, 0.8, 0.1}}, ctx);
    mx::metric::CrossEntropy ce;
    ce.update(nd::array({0, 1}, ctx), probs);
    const double before = ce.get().second;
    NDG_CHECK_THROWS_WITH(ce.update(nd::array({0, 3}, ctx), probs), mx::IndexError, "CrossEntropy.update", "label 3",
                          "sample 1", "(2, 3)", "[0, 3)");
    NDG_CHECK_THROWS_WITH(ce.update(nd::array({-1, 0}, ctx), probs), mx::IndexError, "label -1", "sample 0");
    NDG_CHECK_THROWS_WITH(ce.update(nd::array({0, 1, 2}, ctx), probs), mx::ShapeError, "CrossEntropy.update",
                          "3 labels", "(3,)", "2 predictions", "(2, 3)");
    NDG_CHECK_THROWS_WITH(ce.update(nd::array({0, 1}, ctx), nd::array({0.5, 0.5}, ctx)), mx::ShapeError,
                          "CrossEntropy.update", "preds (2,)");
    NDG_CHECK_THROWS_WITH(ce.update(nd::array({0, 1}, ctx), nd::ones({2, 3}, ctx, mx::DType::int32)), mx::DTypeError,
                          "CrossEntropy.update");
    NDG_CHECK_THROWS_WITH(ce.update({nd::array({0, 1}, ctx), nd::array({0, 1}, ctx)}, {probs}), mx::ValueError,
                          "CrossEntropy.update", "2 label arrays", "1 prediction arrays");
    NDG_CHECK_THROWS_WITH(ce.update({nd::array({0, 1}, ctx), nd::array({0, 9}, ctx)}, {probs, probs}), mx::IndexError,
                          "label 9");
    BOOST_TEST(ce.num_inst() == 2);
    BOOST_TEST(ce.get().second == before);
  });
}

// ---- Loss ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(loss_is_the_mean_of_every_loss_value) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::metric::Loss loss;
    BOOST_TEST(std::isnan(loss.get().second));
    loss.update(nd::array({0.5, 1.5, 2.0, 4.0}, ctx));  // sum 8 over 4
    BOOST_TEST(loss.get().first == "loss");
    BOOST_TEST(loss.get().second == 2.0);
    // Labels are ignored, as MXNet's Loss.update(_, preds); any shape and dtype: sum 10 over 4 more.
    loss.update(nd::array({7, 7}, ctx), nd::array({{1, 2}, {3, 4}}, ctx, mx::DType::int32));
    BOOST_TEST(loss.get().second == 18.0 / 8.0);
    loss.update(nd::NDArray(), nd::array({0.25}, ctx, mx::DType::float64));
    BOOST_TEST(loss.get().second == 18.25 / 9.0);
    BOOST_TEST(loss.num_inst() == 9);
    BOOST_TEST(loss.sum_metric() == 18.25);
    loss.update(nd::zeros({0}, ctx));  // an empty batch counts nothing
    BOOST_TEST(loss.num_inst() == 9);
    loss.reset();
    BOOST_TEST(loss.num_inst() == 0);
    BOOST_TEST(std::isnan(loss.get().second));
  });
}

BOOST_AUTO_TEST_CASE(loss_of_one_array_per_device) {
  const auto ctxs = ndg_test::all_contexts();
  std::vector<nd::NDArray> losses;
  for (std::size_t k = 0; k < ctxs.size(); ++k) losses.push_back(nd::full({2}, static_cast<double>(k + 1), ctxs[k]));
  mx::metric::Loss loss("train_loss");
  loss.update({}, losses);  // the label list is ignored, whatever its length
  const double n = static_cast<double>(ctxs.size());
  BOOST_TEST(loss.get().first == "train_loss");
  BOOST_TEST(loss.get().second == (n + 1) / 2);  // mean of 1, 1, 2, 2, ..., n, n
  BOOST_TEST(loss.num_inst() == 2 * static_cast<std::int64_t>(ctxs.size()));
  // A none array among them: nothing is counted.
  NDG_CHECK_THROWS_WITH(loss.update({}, {losses[0], nd::NDArray()}), mx::ValueError, "Loss.update");
  BOOST_TEST(loss.num_inst() == 2 * static_cast<std::int64_t>(ctxs.size()));
}

BOOST_AUTO_TEST_CASE(metrics_through_their_base_class) {
  // Any metric behind an EvalMetric: a list of them, updated and read alike.
  std::vector<std::unique_ptr<mx::metric::EvalMetric>> metrics;
  metrics.push_back(std::make_unique<mx::metric::Accuracy>());
  metrics.push_back(std::make_unique<mx::metric::TopKAccuracy>(2));
  metrics.push_back(std::make_unique<mx::metric::CrossEntropy>());
  const nd::NDArray labels = nd::array(kTopKLabels, {4}), probs = scores(mx::cpu());
  for (auto& metric : metrics) metric->update(labels, probs);
  BOOST_TEST(metrics[0]->get().second == 0.25);
  BOOST_TEST(metrics[1]->get().second == 0.5);
  BOOST_TEST(metrics[2]->get().second == (nll(0.7) + nll(0.1) + nll(0.2) + nll(0.3)) / 4, tt::tolerance(1e-12));
  for (auto& metric : metrics) {
    metric->reset();
    BOOST_TEST(metric->num_inst() == 0);
    BOOST_TEST(metric->sum_metric() == 0);
  }
}

BOOST_AUTO_TEST_CASE(perplexity_is_the_exponential_of_the_mean_negative_log_likelihood) {
  ndg_test::for_each_context([](mx::Context ctx) {
    namespace nd = mx::nd;
    // Two sequences of two tokens over 3 classes: p[label] = 0.5, 0.25, 0.8, 1e-12 (floored at 1e-10).
    const nd::NDArray preds = nd::array({{0.5, 0.3, 0.2}, {0.25, 0.25, 0.5}, {0.1, 0.8, 0.1}, {1.0, 0.0, 1e-12}}, ctx)
                                  .reshape({2, 2, 3});
    const nd::NDArray labels = nd::array({{0, 1}, {1, 2}}, ctx).astype(mx::DType::int32);
    mx::metric::Perplexity ppl;
    ppl.update(labels, preds);
    const double nll = -std::log(0.5) - std::log(0.25) - std::log(0.8) - std::log(1e-10);
    BOOST_TEST(ppl.get().first == "perplexity");
    BOOST_TEST(ppl.get().second == std::exp(nll / 4), boost::test_tools::tolerance(1e-6));
    BOOST_TEST(ppl.num_inst() == 4);
    // Tokens of the ignored label are not counted.
    mx::metric::Perplexity padded(2);
    padded.update(labels, preds);
    BOOST_TEST(padded.num_inst() == 3);
    BOOST_TEST(padded.get().second == std::exp((-std::log(0.5) - std::log(0.25) - std::log(0.8)) / 3),
               boost::test_tools::tolerance(1e-6));
    // A perfect model has perplexity 1.
    mx::metric::Perplexity perfect;
    perfect.update(nd::array({0, 1}, ctx), nd::array({{1, 0}, {0, 1}}, ctx));
    BOOST_TEST(perfect.get().second == 1.0, boost::test_tools::tolerance(1e-12));
    NDG_CHECK_THROWS_WITH(ppl.update(nd::array({0, 1, 2}, ctx), preds), mx::ShapeError, "Perplexity.update");
    NDG_CHECK_THROWS_WITH(ppl.update(nd::array({{0, 3}, {1, 2}}, ctx), preds), mx::IndexError, "label 3", "[0, 3)");
    BOOST_TEST(ppl.num_inst() == 4);  // the failed updates counted nothing
  });
}

BOOST_AUTO_TEST_SUITE_END()
