#include "gluon/metric.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/manipulation.hpp"

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

// Throws unless preds are (B, C) scores, C >= 1, for B labels (of any shape: MXNet ravels them).
void check_scores(const std::string& method, const nd::NDArray& labels, const nd::NDArray& preds) {
  nd::check_not_none(method.c_str(), labels);
  nd::check_not_none(method.c_str(), preds);
  if (preds.ndim() != 2 || preds.shape()[1] == 0) {
    throw ShapeError(method + ": preds " + nd::describe(preds) + " are not (B, classes) scores with classes > 0 " +
                     "for the labels " + nd::describe(labels));
  }
  if (preds.shape()[0] != labels.size()) {
    throw ShapeError(method + ": " + std::to_string(labels.size()) + " labels " + nd::describe(labels) + " but " +
                     std::to_string(preds.shape()[0]) + " predictions " + nd::describe(preds) +
                     "; expected preds (B, classes) for B labels");
  }
}

}  // namespace

std::unique_ptr<EvalMetric> EvalMetric::clone() const {
  throw ValueError(std::string(type_) + " '" + name_ + "' cannot be copied: override EvalMetric::clone() in it, or " +
                   "give the metrics to copy it into yourself (the Estimator's val_metrics)");
}

// ---- EvalMetric ---------------------------------------------------------------------------------

void EvalMetric::update(const nd::NDArray& labels, const nd::NDArray& preds) {
  const Measure measure = evaluate(labels, preds);
  sum_metric_ += measure.sum;
  num_inst_ += measure.count;
}

void EvalMetric::update(const std::vector<nd::NDArray>& labels, const std::vector<nd::NDArray>& preds) {
  if (uses_labels() && labels.size() != preds.size()) {
    throw ValueError(std::string(type_) + ".update: " + std::to_string(labels.size()) + " label arrays but " +
                     std::to_string(preds.size()) + " prediction arrays; pass one of each per device");
  }
  // Every pair is measured before any is counted, so that a bad pair leaves the counts alone.
  std::vector<Measure> measures;
  for (std::size_t i = 0; i < preds.size(); ++i) {
    measures.push_back(evaluate(uses_labels() ? labels[i] : nd::NDArray(), preds[i]));
  }
  for (const Measure& measure : measures) {
    sum_metric_ += measure.sum;
    num_inst_ += measure.count;
  }
}

std::pair<std::string, double> EvalMetric::get() const {
  if (num_inst_ == 0) return {name_, std::numeric_limits<double>::quiet_NaN()};
  return {name_, reported(sum_metric_ / static_cast<double>(num_inst_))};
}

void EvalMetric::reset() {
  sum_metric_ = 0;
  num_inst_ = 0;
}

// ---- Accuracy -----------------------------------------------------------------------------------

EvalMetric::Measure Accuracy::evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const {
  const std::int64_t count = checked_count(labels, preds);
  if (count == 0) return {};
  // Class ids of the predictions, reduced on their own context; then B values of each to the host.
  const nd::NDArray predicted = are_scores(labels, preds) ? preds.argmax(1) : preds;
  const std::vector<std::int64_t> want = labels.asvector<std::int64_t>();
  const std::vector<std::int64_t> got = predicted.asvector<std::int64_t>();
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < want.size(); ++i) correct += got[i] == want[i] ? 1 : 0;
  return {static_cast<double>(correct), count};
}

// ---- TopKAccuracy -------------------------------------------------------------------------------

TopKAccuracy::TopKAccuracy(std::int64_t top_k, const std::string& name)
    : EvalMetric("TopKAccuracy", name + "_" + std::to_string(top_k)), top_k_(top_k) {
  if (top_k < 1) {
    throw ValueError("TopKAccuracy: top_k must be at least 1, got " + std::to_string(top_k));
  }
}

EvalMetric::Measure TopKAccuracy::evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const {
  check_scores("TopKAccuracy.update", labels, preds);
  const std::int64_t batch = preds.shape()[0], classes = preds.shape()[1];
  if (batch == 0) return {};
  // Integer scores are ranked in float64, which holds them exactly.
  const DType dtype = is_floating(preds.dtype()) ? preds.dtype() : DType::float64;
  const nd::NDArray scores = preds.dtype() == dtype ? preds : preds.astype(dtype);
  const Context ctx = scores.context();
  // The labels' ids go to the scores; class 0 stands in for one out of range, which is never correct.
  const std::vector<std::int64_t> ids = labels.asvector<std::int64_t>();
  std::vector<double> in_range_ids(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    in_range_ids[i] = ids[i] >= 0 && ids[i] < classes ? static_cast<double>(ids[i]) : 0.0;
  }
  const nd::NDArray label_ids = nd::array(in_range_ids, {batch, 1}, ctx, dtype);
  const nd::NDArray class_ids = nd::arange(0.0, static_cast<double>(classes), 1.0, ctx, dtype).reshape({1, classes});
  // Each row's score at its label, (B, 1), and whether it is NaN (such a label is never correct).
  const nd::NDArray label_score = nd::pick(scores, label_ids, 1, true);
  // The label's rank: the classes before it in a stable sort by descending score, i.e. those with
  // a higher score and those with an equal one and a smaller id.
  const nd::NDArray rank =
      ((scores > label_score) + (scores == label_score) * (class_ids < label_ids)).sum(1, true);
  const std::vector<double> host = nd::concat({rank, label_score != label_score}, 1).asvector<double>();  // (B, 2)
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const bool valid = ids[i] >= 0 && ids[i] < classes && host[2 * i + 1] == 0;
    correct += valid && host[2 * i] < static_cast<double>(top_k_) ? 1 : 0;
  }
  return {static_cast<double>(correct), batch};
}

// ---- CrossEntropy -------------------------------------------------------------------------------

CrossEntropy::CrossEntropy(double eps, const std::string& name) : EvalMetric("CrossEntropy", name), eps_(eps) {
  if (!(std::isfinite(eps) && eps >= 0)) {
    throw ValueError("CrossEntropy: eps must be a finite number >= 0, got " + nd::shortest_text(eps));
  }
}

EvalMetric::Measure CrossEntropy::evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const {
  check_scores("CrossEntropy.update", labels, preds);
  nd::check_floating("CrossEntropy.update", preds);
  const std::int64_t batch = preds.shape()[0], classes = preds.shape()[1];
  if (batch == 0) return {};
  const std::vector<std::int64_t> ids = labels.asvector<std::int64_t>();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= classes) {
      throw IndexError("CrossEntropy.update: label " + std::to_string(ids[i]) + " of sample " + std::to_string(i) +
                       " is not a class of preds " + nd::describe(preds) + "; labels must be in [0, " +
                       std::to_string(classes) + ")");
    }
  }
  // Each row's probability at its label (NaN where it is NaN), picked on the preds' context.
  const nd::NDArray label_ids = nd::array(ids, {batch}, preds.context(), DType::int64);
  const std::vector<double> p = nd::pick(preds, label_ids, 1).asvector<double>();
  double sum = 0;
  for (const double label_p : p) sum += -std::log(label_p + eps_);
  return {sum, batch};
}

// ---- Perplexity ---------------------------------------------------------------------------------

EvalMetric::Measure Perplexity::evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const {
  nd::check_not_none("Perplexity.update", labels);
  nd::check_not_none("Perplexity.update", preds);
  nd::check_floating("Perplexity.update", preds);
  if (preds.ndim() < 1 || labels.size() * (preds.ndim() ? preds.shape()[preds.ndim() - 1] : 1) != preds.size()) {
    throw ShapeError("Perplexity.update: labels " + nd::describe(labels) + " do not match preds " + nd::describe(preds) +
                     "; preds must be (..., classes) with one row per label");
  }
  const std::int64_t classes = preds.shape()[preds.ndim() - 1], rows = labels.size();
  if (rows == 0) return {};
  const std::vector<std::int64_t> ids = labels.reshape({rows}).asvector<std::int64_t>();
  std::vector<std::int64_t> kept;  // the ids counted; ignored ones read class 0
  std::vector<std::int64_t> picked(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ignore_label_ && ids[i] == *ignore_label_) continue;
    if (ids[i] < 0 || ids[i] >= classes) {
      throw IndexError("Perplexity.update: label " + std::to_string(ids[i]) + " of token " + std::to_string(i) +
                       " is not a class of preds " + nd::describe(preds) + "; labels must be in [0, " +
                       std::to_string(classes) + ")");
    }
    picked[i] = ids[i];
    kept.push_back(static_cast<std::int64_t>(i));
  }
  const nd::NDArray index = nd::array(picked, {rows}, preds.context(), DType::int64);
  const std::vector<double> p = nd::pick(preds.reshape({rows, classes}), index, 1).asvector<double>();
  double sum = 0;
  for (const std::int64_t i : kept) sum += -std::log(std::max(1e-10, p[static_cast<std::size_t>(i)]));
  return {sum, static_cast<std::int64_t>(kept.size())};
}

// ---- Loss ---------------------------------------------------------------------------------------

EvalMetric::Measure Loss::evaluate(const nd::NDArray& /*labels*/, const nd::NDArray& preds) const {
  nd::check_not_none("Loss.update", preds);
  if (preds.size() == 0) return {};
  return {preds.sum().asscalar<double>(), preds.size()};
}

}  // namespace mx::metric
