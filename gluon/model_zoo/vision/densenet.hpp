#pragma once
// DenseNet-BC as MXNet 1.9's gluon.model_zoo.vision builds it (densenet.py), with its structural
// parameter names ("features.4.0.1.2.weight", "output.weight") and, built in its order inside its
// name scopes, its full names ("densenet0_stage1_conv0_weight"), which its legacy files are keyed
// by:
//   features = [conv 7x7/2 (no bias), BN, relu, max pool 3/2 pad 1, then per stage i a
//     Sequential "stage{i}_" of dense layers, each a Concurrent on axis 1 of [Identity, (BN, relu,
//     conv 1x1 to bn_size·growth, BN, relu, conv 3x3 to growth, Dropout when dropout > 0)], and
//     between stages a transition (BN, relu, conv 1x1 halving the channels, avg pool 2/2); then BN,
//     relu, avg pool 7, flatten], output = Dense(classes). Convolutions have no bias.
// 121, 161, 169 and 201 layers: (initial features, growth, layers per stage) as MXNet's
// densenet_spec; a 224x224 input ends at 7x7 before the pool.
#include <cstdint>

#include "gluon/block.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/sequential.hpp"

namespace mx::gluon::model_zoo::vision {

// num_layers 121, 161, 169 or 201 (mx::ValueError naming them otherwise); dropout in [0, 1).
class DenseNet : public Block {
 public:
  explicit DenseNet(int num_layers, std::int64_t classes = 1000, std::int64_t bn_size = 4, double dropout = 0);
  nd::NDArray forward(const nd::NDArray& x) override { return output_(features_(x)); }

 private:
  nn::Sequential features_;
  nn::Dense output_;
};

}  // namespace mx::gluon::model_zoo::vision
