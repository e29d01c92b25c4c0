#pragma once
// Evaluation metrics, as in mxnet.metric: update() with each batch's labels and predictions,
// get() the value over every batch since the last reset().
//
//   mx::metric::Accuracy acc;
//   for (auto& [X, y] : test_loader) acc.update(y, net(X.as_in_context(ctx)));
//   auto [name, value] = acc.get();   // "accuracy", 0.85
//
// labels and preds may live on any contexts (cpu(0) or gpu(i)), each its own: what a metric reduces
// is reduced on the preds' context, and only a few values per sample are copied to the host.
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::metric {

// The base of the metrics, as mxnet.metric.EvalMetric: a running sum over the samples seen, whose
// mean get() reports. A metric defines evaluate(), which measures one batch without counting it.
class EvalMetric {
 public:
  virtual ~EvalMetric() = default;

  // One batch, as documented per metric. A batch that throws counts nothing.
  void update(const nd::NDArray& labels, const nd::NDArray& preds);
  // One pair per device, as MXNet takes lists; the two lists must be equally long (mx::ValueError
  // naming both lengths) unless the metric ignores labels (Loss). Every pair is checked before any
  // is counted, so that a bad pair leaves the metric as it was.
  void update(const std::vector<nd::NDArray>& labels, const std::vector<nd::NDArray>& preds);

  // {name, sum_metric / num_inst}; the value is NaN before any sample, as in MXNet.
  std::pair<std::string, double> get() const;
  void reset();

  const std::string& name() const { return name_; }
  // MXNet's metric.name is an attribute: the Estimator prefixes "training " / "validation ".
  void set_name(std::string name) { name_ = std::move(name); }
  // A copy, of the same kind and settings, counts included (MXNet's copy.deepcopy, which the
  // Estimator makes its validation metrics with). The metrics here override it; the default, for a
  // metric that does not, throws mx::ValueError naming the type.
  virtual std::unique_ptr<EvalMetric> clone() const;
  double sum_metric() const { return sum_metric_; }   // MXNet's sum_metric
  std::int64_t num_inst() const { return num_inst_; }  // samples seen (MXNet's num_inst)

 protected:
  // `type` names the class in errors ("Accuracy"); `name` is what get() reports.
  EvalMetric(const char* type, std::string name) : type_(type), name_(std::move(name)) {}

  // One batch's contribution: the sum of its per-sample values and its sample count.
  struct Measure {
    double sum = 0;
    std::int64_t count = 0;
  };
  // Checks the batch (throwing a typed mx::Error naming type_ and the shapes) and measures it.
  virtual Measure evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const = 0;
  // False for a metric that takes no labels: the list overload then ignores the label list.
  virtual bool uses_labels() const { return true; }
  // What get() reports of the mean per sample (Perplexity: its exponential).
  virtual double reported(double mean) const { return mean; }

  const char* type_;

 private:
  std::string name_;
  double sum_metric_ = 0;
  std::int64_t num_inst_ = 0;
};

// The fraction of samples whose predicted class is the label.
class Accuracy : public EvalMetric {
 public:
  explicit Accuracy(std::string name = "accuracy") : EvalMetric("Accuracy", std::move(name)) {}

  // update(labels, preds): labels (B,) class ids of any numeric dtype (a float id is truncated, as
  // MXNet's astype does). preds (B, C) scores, whose argmax over axis 1 is the predicted class
  // (taken on the preds' context), or (B,) class ids, the same shape as labels. Only the B class
  // ids of each are copied to the host. A prediction count other than the label count is an
  // mx::ShapeError naming both shapes.

  std::int64_t num_correct() const { return static_cast<std::int64_t>(sum_metric()); }
  std::unique_ptr<EvalMetric> clone() const override { return std::make_unique<Accuracy>(*this); }

 protected:
  Measure evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const override;
};

// The fraction of samples whose label is among the top_k classes of highest score, as
// mxnet.metric.TopKAccuracy; named "top_k_accuracy_<top_k>". Scores that tie rank in class order
// (the first maximum is the top class, as Accuracy's argmax), so top_k = 1 agrees with Accuracy.
// A top_k of C or more counts every label in [0, C) correct; a label outside [0, C), or whose score
// is NaN, is never correct; a NaN score of another class ranks below every class.
class TopKAccuracy : public EvalMetric {
 public:
  // mx::ValueError naming top_k unless top_k >= 1. (MXNet asserts top_k > 1 and points to Accuracy;
  // top_k = 1 is accepted here, and is Accuracy over scores.)
  explicit TopKAccuracy(std::int64_t top_k = 1, const std::string& name = "top_k_accuracy");

  // update(labels, preds): labels B class ids of any numeric dtype ((B,) or (B, 1); a float id is
  // truncated), preds (B, C) scores with C >= 1. Each label's rank is computed on the preds'
  // context (after the labels' B ids go there); the B ranks come back to the host. Other shapes
  // are an mx::ShapeError naming TopKAccuracy.update and both shapes.

  std::int64_t top_k() const { return top_k_; }
  std::int64_t num_correct() const { return static_cast<std::int64_t>(sum_metric()); }
  std::unique_ptr<EvalMetric> clone() const override { return std::make_unique<TopKAccuracy>(*this); }

 protected:
  Measure evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const override;

 private:
  std::int64_t top_k_;
};

// The mean over samples of -log(p[label] + eps), as mxnet.metric.CrossEntropy (named
// "cross-entropy"), for preds that are probabilities (e.g. a softmax).
class CrossEntropy : public EvalMetric {
 public:
  // mx::ValueError naming eps unless eps is a finite number >= 0.
  explicit CrossEntropy(double eps = 1e-12, const std::string& name = "cross-entropy");

  // update(labels, preds): labels B class ids of any numeric dtype ((B,) or (B, 1); a float id is
  // truncated), preds (B, C) float32 or float64 probabilities. p[label] of each sample is picked
  // on the preds' context, and the B picked values come to the host, where the logarithm is taken
  // in double precision (MXNet takes it in the preds' dtype); the other values of a row, finite or
  // not, do not enter it. Other shapes are an mx::ShapeError naming CrossEntropy.update and both
  // shapes; a label outside [0, C) an mx::IndexError naming it; integer preds an mx::DTypeError.

  double eps() const { return eps_; }
  std::unique_ptr<EvalMetric> clone() const override { return std::make_unique<CrossEntropy>(*this); }

 protected:
  Measure evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const override;

 private:
  double eps_;
};

// exp of the mean over tokens of -log p[label], as mxnet.metric.Perplexity (named "perplexity"),
// for preds that are probabilities (e.g. a softmax) along their last axis: the perplexity of a
// language model. Tokens whose label is ignore_label (when given) are not counted.
class Perplexity : public EvalMetric {
 public:
  explicit Perplexity(std::optional<std::int64_t> ignore_label = std::nullopt, const std::string& name = "perplexity")
      : EvalMetric("Perplexity", name), ignore_label_(ignore_label) {}

  // update(labels, preds): preds (..., C) float probabilities, labels (...) token ids of any
  // numeric dtype, as many as preds has rows; each p[label] is picked on the preds' context and
  // floored at 1e-10 (as MXNet). Other shapes are an mx::ShapeError naming Perplexity.update and
  // both shapes; a label outside [0, C) an mx::IndexError naming it.

  std::unique_ptr<EvalMetric> clone() const override { return std::make_unique<Perplexity>(*this); }

 protected:
  Measure evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const override;
  double reported(double mean) const override { return std::exp(mean); }

 private:
  std::optional<std::int64_t> ignore_label_;
};

// The mean of loss values, as mxnet.metric.Loss (named "loss"): every element of every array
// given is one sample.
class Loss : public EvalMetric {
 public:
  explicit Loss(std::string name = "loss") : EvalMetric("Loss", std::move(name)) {}

  using EvalMetric::update;
  // update(labels, preds): labels are ignored (as MXNet's Loss.update(_, preds); a none NDArray
  // will do) and preds holds loss values of any shape and numeric dtype, summed on their context
  // (one value comes to the host). The list overload ignores the label list and its length.
  // update(loss) is update(labels, loss) without labels.
  void update(const nd::NDArray& loss) { EvalMetric::update(nd::NDArray(), loss); }
  std::unique_ptr<EvalMetric> clone() const override { return std::make_unique<Loss>(*this); }

 protected:
  Measure evaluate(const nd::NDArray& labels, const nd::NDArray& preds) const override;
  bool uses_labels() const override { return false; }
};

}  // namespace mx::metric
