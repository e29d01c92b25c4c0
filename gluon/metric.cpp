#include "gluon/metric.hpp"

#include <limits>

#include "ndarray/describe.hpp"

namespace mx::metric {

namespace {

// The number of predictions in preds: B for scores (B, C), its size for class ids shaped like the
// labels (or 1-D); else an mx::ShapeError.
std::int64_t prediction_count(const nd::NDArray& labels, const nd::NDArray& preds, bool scores) {
  if (!scores) return preds.size();
  if (preds.ndim() != 2 || preds.shape()[1] == 0) {
    throw ShapeError("Accuracy.update: preds " + nd::describe(preds) +
                     " are neither (B, classes) scores with classes > 0 nor class ids shaped like the labels " +
                     nd::describe(labels));
  }
  return preds.shape()[0];
}

// Scores unless preds are shaped like the labels (MXNet's rule) or 1-D.
bool are_scores(const nd::NDArray& labels, const nd::NDArray& preds) {
  return preds.shape() != labels.shape() && preds.ndim() != 1;
}

// The number of predictions, after checking that there is one per label.
std::int64_t checked_count(const nd::NDArray& labels, const nd::NDArray& preds) {
  nd::check_not_none("Accuracy.update", labels);
  nd::check_not_none("Accuracy.update", preds);
  const std::int64_t count = prediction_count(labels, preds, are_scores(labels, preds));
  if (count != labels.size()) {
    throw ShapeError("Accuracy.update: " + std::to_string(labels.size()) + " labels " + nd::describe(labels) +
                     " but " + std::to_string(count) + " predictions " + nd::describe(preds) +
                     "; expected preds (B, classes) or (B,) for B labels");
  }
  return count;
}

}  // namespace

void Accuracy::update(const nd::NDArray& labels, const nd::NDArray& preds) {
  const std::int64_t count = checked_count(labels, preds);
  if (count == 0) return;
  const bool scores = are_scores(labels, preds);
  // Class ids of the predictions, reduced on their own context; then B values of each to the host.
  const nd::NDArray predicted = scores ? preds.argmax(1) : preds;
  const std::vector<std::int64_t> want = labels.asvector<std::int64_t>();
  const std::vector<std::int64_t> got = predicted.asvector<std::int64_t>();
  for (std::size_t i = 0; i < want.size(); ++i) num_correct_ += got[i] == want[i] ? 1 : 0;
  num_inst_ += count;
}

void Accuracy::update(const std::vector<nd::NDArray>& labels, const std::vector<nd::NDArray>& preds) {
  if (labels.size() != preds.size()) {
    throw ValueError("Accuracy.update: " + std::to_string(labels.size()) + " label arrays but " +
                     std::to_string(preds.size()) + " prediction arrays; pass one of each per device");
  }
  // Every pair is checked before any is counted, so that a bad pair leaves the counts alone.
  for (std::size_t i = 0; i < labels.size(); ++i) checked_count(labels[i], preds[i]);
  for (std::size_t i = 0; i < labels.size(); ++i) update(labels[i], preds[i]);
}

std::pair<std::string, double> Accuracy::get() const {
  if (num_inst_ == 0) return {name_, std::numeric_limits<double>::quiet_NaN()};
  return {name_, static_cast<double>(num_correct_) / static_cast<double>(num_inst_)};
}

void Accuracy::reset() {
  num_correct_ = 0;
  num_inst_ = 0;
}

}  // namespace mx::metric
