#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gluon/metric.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace tt = boost::test_tools;

// mx::metric::Accuracy on predictions made by hand, for labels of every dtype, with labels and
// predictions on every context (and on different ones), against a count done here on the host.

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

BOOST_AUTO_TEST_SUITE_END()
