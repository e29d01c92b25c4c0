#include "gluon/loss.hpp"

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/reduce.hpp"
#include "ndarray/ops/softmax.hpp"

namespace mx::gluon::loss {
namespace {

// The label as pred's dtype and shape (it may come as (batch,) for (batch, 1) predictions).
nd::NDArray label_like(const char* loss, const nd::NDArray& pred, const nd::NDArray& label) {
  nd::check_same_context(loss, pred, label);
  if (label.size() != pred.size()) {
    throw ShapeError(std::string(loss) + ": label " + nd::describe(label) + " does not match pred " +
                     nd::describe(pred));
  }
  return label.astype(pred.dtype()).reshape(pred.shape());
}

// Mean over every axis but the first: (batch, ...) -> (batch,). Where each sample has one value
// already, x itself or a view of it (no op; gradients flow through the reshape).
nd::NDArray per_sample_mean(const nd::NDArray& x) {
  if (x.ndim() < 1) throw ShapeError("loss: prediction needs a batch axis, got " + nd::describe(x));
  if (x.ndim() == 1) return x;
  const std::int64_t batch = x.shape()[0];
  if (x.size() == batch) return x.reshape({batch});
  return x.reshape({batch, batch ? x.size() / batch : 0}).mean(1);
}

nd::NDArray scaled(const nd::NDArray& x, double weight) { return weight == 1.0 ? x : x * weight; }

}  // namespace

nd::NDArray L2Loss::operator()(const nd::NDArray& pred, const nd::NDArray& label) const {
  const nd::NDArray diff = pred - label_like("L2Loss", pred, label);
  return per_sample_mean(nd::square(diff) * (0.5 * weight_));
}

nd::NDArray L1Loss::operator()(const nd::NDArray& pred, const nd::NDArray& label) const {
  return per_sample_mean(scaled(nd::abs(pred - label_like("L1Loss", pred, label)), weight_));
}

// As MXNet's Gluon: -pick(log_softmax(pred), label) for sparse labels (pick's mode "clip" reads
// them: truncated, and clipped to [0, classes - 1], so that a label out of range scores the
// nearest class), -sum(log_softmax(pred) * label) for dense ones; then the mean per sample.
nd::NDArray SoftmaxCrossEntropyLoss::operator()(const nd::NDArray& pred, const nd::NDArray& label) const {
  nd::check_same_context("SoftmaxCrossEntropyLoss", pred, label);
  const int axis = normalize_axis("SoftmaxCrossEntropyLoss", axis_, pred.shape());
  const nd::NDArray logp = from_logits_ ? pred : nd::log_softmax(pred, axis);
  nd::NDArray picked;  // log-probability of the labels, pred's shape without the class axis
  if (sparse_label_) {
    if (label.size() * pred.shape()[axis] != pred.size() || axis != pred.ndim() - 1) {
      throw ShapeError("SoftmaxCrossEntropyLoss: sparse label " + nd::describe(label) +
                       " needs one class index per sample of pred " + nd::describe(pred) +
                       " (classes along the last axis)");
    }
    std::vector<std::int64_t> dims(pred.shape().begin(), pred.shape().end() - 1);
    if (dims.empty()) dims.push_back(1);
    picked = nd::pick(logp, label.reshape(Shape(dims)), axis);
  } else {
    picked = nd::sum(logp * label_like("SoftmaxCrossEntropyLoss", pred, label), axis);
  }
  // The sign and the weight in one op.
  return per_sample_mean(weight_ == 1.0 ? -picked : picked * -weight_);
}

nd::NDArray SigmoidBinaryCrossEntropyLoss::operator()(const nd::NDArray& pred, const nd::NDArray& label) const {
  const nd::NDArray z = label_like("SigmoidBinaryCrossEntropyLoss", pred, label);
  nd::NDArray loss;
  if (from_sigmoid_) {
    constexpr double eps = 1e-12;
    loss = -(z * nd::log(pred + eps) + (1.0 - z) * nd::log(1.0 - pred + eps));
  } else {
    loss = nd::relu(pred) - pred * z + nd::softrelu(-nd::abs(pred));
  }
  return per_sample_mean(scaled(loss, weight_));
}

}  // namespace mx::gluon::loss
