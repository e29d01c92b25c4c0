#pragma once
// Losses, as mx.gluon.loss: each gives one value per sample, shape (batch,), averaged over the
// other axes. pred and label live on one context.
#include "ndarray/core/array.hpp"

namespace mx::gluon::loss {

class Loss {
 public:
  explicit Loss(double weight = 1.0) : weight_(weight) {}
  virtual ~Loss() = default;
  // pred (batch, ...), label as documented per loss -> (batch,)
  virtual nd::NDArray operator()(const nd::NDArray& pred, const nd::NDArray& label) const = 0;

 protected:
  double weight_;
};

// 0.5 * weight * (pred - label)^2; label has pred's shape (or its size).
class L2Loss : public Loss {
 public:
  using Loss::Loss;
  nd::NDArray operator()(const nd::NDArray& pred, const nd::NDArray& label) const override;
};

// weight * |pred - label|
class L1Loss : public Loss {
 public:
  using Loss::Loss;
  nd::NDArray operator()(const nd::NDArray& pred, const nd::NDArray& label) const override;
};

// -log softmax(pred)[label] with sparse integer labels (batch,), or -sum(label * log softmax(pred))
// with dense labels of pred's shape. from_logits: pred already holds log-probabilities. Sparse
// labels are read as MXNet's pick does: truncated, and clipped to [0, classes - 1].
class SoftmaxCrossEntropyLoss : public Loss {
 public:
  explicit SoftmaxCrossEntropyLoss(int axis = -1, bool sparse_label = true, bool from_logits = false, double weight = 1.0)
      : Loss(weight), axis_(axis), sparse_label_(sparse_label), from_logits_(from_logits) {}
  nd::NDArray operator()(const nd::NDArray& pred, const nd::NDArray& label) const override;

 private:
  int axis_;
  bool sparse_label_, from_logits_;
};

// Binary cross-entropy with 0/1 labels of pred's shape. pred are logits (computed stably as
// relu(x) - x*z + log(1 + exp(-|x|))) unless from_sigmoid.
class SigmoidBinaryCrossEntropyLoss : public Loss {
 public:
  explicit SigmoidBinaryCrossEntropyLoss(bool from_sigmoid = false, double weight = 1.0)
      : Loss(weight), from_sigmoid_(from_sigmoid) {}
  nd::NDArray operator()(const nd::NDArray& pred, const nd::NDArray& label) const override;

 private:
  bool from_sigmoid_;
};

}  // namespace mx::gluon::loss
