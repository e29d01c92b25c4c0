#pragma once
// nn::Dropout(rate), as mx.gluon.nn.Dropout: nd::Dropout in training (inside autograd::record(),
// or autograd::train_mode()), the identity in prediction.
#include "gluon/block.hpp"

namespace mx::gluon::nn {

class Dropout : public Block {
 public:
  // rate in [0, 1), else mx::ValueError.
  explicit Dropout(double rate, const std::string& prefix = "");
  nd::NDArray forward(const nd::NDArray& x) override;  // same shape as x
  double rate() const { return rate_; }

 private:
  double rate_;
};

}  // namespace mx::gluon::nn
