#pragma once
// SqueezeNet 1.0 and 1.1 as MXNet 1.9's gluon.model_zoo.vision builds them (squeezenet.py), with
// its structural parameter names ("features.3.1.0.0.weight", "output.0.weight") and, built in its
// order inside its name scope, its full names (squeezenet0_conv0_ ... conv25_):
//   1.0: features = [conv 7x7/2 96, relu, max pool 3/2 (ceil), fire(16, 64, 64), fire(16, 64, 64),
//        fire(32, 128, 128), max pool, fire(32, 128, 128), fire(48, 192, 192), fire(48, 192, 192),
//        fire(64, 256, 256), max pool, fire(64, 256, 256), Dropout 0.5];
//   1.1: features = [conv 3x3/2 64, relu, max pool, fire(16, 64, 64) x2, max pool,
//        fire(32, 128, 128) x2, max pool, fire(48, 192, 192) x2, fire(64, 256, 256) x2, Dropout 0.5];
//   output = [conv 1x1 to classes, relu, avg pool 13, flatten]. A fire(s, e1, e3) is [conv 1x1 to
//   s + relu, Concurrent on axis 1 of (conv 1x1 to e1 + relu, conv 3x3 pad 1 to e3 + relu)].
// A 224x224 input ends at 13x13 before the pool.
#include <cstdint>
#include <string>

#include "gluon/block.hpp"
#include "gluon/nn/sequential.hpp"

namespace mx::gluon::model_zoo::vision {

// version "1.0" or "1.1" (mx::ValueError naming them otherwise).
class SqueezeNet : public Block {
 public:
  explicit SqueezeNet(const std::string& version, std::int64_t classes = 1000);
  nd::NDArray forward(const nd::NDArray& x) override { return output_(features_(x)); }

 private:
  nn::Sequential features_;
  nn::Sequential output_;
};

}  // namespace mx::gluon::model_zoo::vision
