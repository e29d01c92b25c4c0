#include "gluon/loss.hpp"

#include "ndarray/describe.hpp"
#include "ndarray/elementwise.hpp"
#include "ndarray/reduce.hpp"
#include "ndarray/softmax.hpp"

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

// Mean over every axis but the first: (batch, ...) -> (batch,).
nd::NDArray per_sample_mean(const nd::NDArray& x) {
  if (x.ndim() < 1) throw ShapeError("loss: prediction needs a batch axis, got " + nd::describe(x));
  const std::int64_t batch = x.shape()[0];
  return x.reshape({batch, batch ? x.size() / batch : 0}).mean(1);
}

nd::NDArray scaled(const nd::NDArray& x, double weight) { return weight == 1.0 ? x : x * weight; }

// Class ids as MXNet's pick (mode "clip") reads sparse labels: truncated to integers and clipped
// to [0, classes - 1], so that a label out of range scores the nearest class rather than nothing.
nd::NDArray class_ids(const nd::NDArray& label, std::int64_t classes) {
  if (label.dtype() == DType::uint8 && classes > 256) return label;  // every uint8 value is a class
  const nd::NDArray clipped = nd::minimum(nd::maximum(label, 0.0), static_cast<double>(classes - 1));
  return is_floating(clipped.dtype()) ? clipped.astype(DType::int32) : clipped;
}

}  // namespace

nd::NDArray L2Loss::operator()(const nd::NDArray& pred, const nd::NDArray& label) const {
  const nd::NDArray diff = pred - label_like("L2Loss", pred, label);
  return per_sample_mean(nd::square(diff) * (0.5 * weight_));
}

nd::NDArray L1Loss::operator()(const nd::NDArray& pred, const nd::NDArray& label) const {
  return per_sample_mean(scaled(nd::abs(pred - label_like("L1Loss", pred, label)), weight_));
}

nd::NDArray SoftmaxCrossEntropyLoss::operator()(const nd::NDArray& pred, const nd::NDArray& label) const {
  nd::check_same_context("SoftmaxCrossEntropyLoss", pred, label);
  const int axis = normalize_axis("SoftmaxCrossEntropyLoss", axis_, pred.shape());
  const nd::NDArray logp = from_logits_ ? pred : nd::log_softmax(pred, axis);
  nd::NDArray target;
  if (sparse_label_) {
    if (label.size() * pred.shape()[axis] != pred.size() || axis != pred.ndim() - 1) {
      throw ShapeError("SoftmaxCrossEntropyLoss: sparse label " + nd::describe(label) +
                       " needs one class index per sample of pred " + nd::describe(pred) +
                       " (classes along the last axis)");
    }
    std::vector<std::int64_t> dims(pred.shape().begin(), pred.shape().end() - 1);
    const std::int64_t classes = pred.shape()[axis];
    target = nd::one_hot(class_ids(label, classes).reshape(Shape(dims)), classes, pred.dtype());
  } else {
    target = label_like("SoftmaxCrossEntropyLoss", pred, label);
  }
  const nd::NDArray picked = nd::sum(logp * target, axis);  // log-probability of the labels
  return per_sample_mean(scaled(-picked, weight_));
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
