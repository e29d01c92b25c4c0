#pragma once
// AlexNet and VGG as MXNet 1.9's gluon.model_zoo.vision builds them (alexnet.py, vgg.py), with
// its structural parameter names ("features.0.weight", ..., "output.weight"):
//   AlexNet: features = [conv 11x11/4 64 relu, max pool 3/2, conv 5x5 192 relu, max pool,
//            conv 3x3 384 relu, conv 3x3 256 relu, conv 3x3 256 relu, max pool, flatten,
//            Dense 4096 relu, Dropout 0.5, Dense 4096 relu, Dropout 0.5], output = Dense(classes).
//   VGG-n:   features = per stage, its convolutions 3x3 (+ BatchNorm with batch_norm) + relu, then
//            max pool 2/2; then Dense 4096 relu, Dropout 0.5, Dense 4096 relu, Dropout 0.5;
//            output = Dense(classes). MXNet's initializers: convolutions Xavier(gaussian, out, 2),
//            the Dense layers Normal(0.01), biases zero.
#include <cstdint>

#include "gluon/block.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/sequential.hpp"

namespace mx::gluon::model_zoo::vision {

class AlexNet : public Block {
 public:
  explicit AlexNet(std::int64_t classes = 1000);
  nd::NDArray forward(const nd::NDArray& x) override { return output_(features_(x)); }

 private:
  nn::Sequential features_;
  nn::Dense output_;
};

// num_layers 11, 13, 16 or 19 (mx::ValueError naming them otherwise).
class VGG : public Block {
 public:
  VGG(int num_layers, std::int64_t classes = 1000, bool batch_norm = false);
  nd::NDArray forward(const nd::NDArray& x) override { return output_(features_(x)); }

 private:
  nn::Sequential features_;
  nn::Dense output_;
};

}  // namespace mx::gluon::model_zoo::vision
