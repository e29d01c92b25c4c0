#pragma once
// ResNet V1 and V2 as MXNet 1.9's gluon.model_zoo.vision builds them (resnet.py): the same blocks
// in the same order, so that the structural parameter names are MXNet's ("features.0.weight",
// "features.4.0.body.0.weight", "features.5.0.downsample.0.weight", "output.weight") and a file of
// MXNet's model zoo (resnet50_v1-cc729d95.params) loads with load_parameters.
//
//   V1: features = [conv 7x7/2, BatchNorm, relu, max pool 3x3/2, stage1..4, global avg pool],
//       output = Dense(classes). Blocks: BasicBlockV1 (body = conv3x3, BN, relu, conv3x3, BN) and
//       BottleneckV1 (body = conv1x1/stride with bias, BN, relu, conv3x3, BN, relu, conv1x1 with
//       bias, BN), each with downsample = [conv1x1/stride, BN] where the channels change, and
//       relu(body(x) + shortcut).
//   V2: features = [BatchNorm without scale and center, conv 7x7/2, BN, relu, max pool, stages,
//       BN, relu, global avg pool, flatten], output = Dense(classes). Blocks (pre-activation):
//       BasicBlockV2 (bn1, conv1, bn2, conv2) and BottleneckV2 (bn1, conv1 1x1, bn2, conv2 3x3/stride,
//       bn3, conv3 1x1), downsample = conv1x1/stride of relu(bn1(x)).
//   thumbnail: the stem is one conv 3x3/1 (V1: alone; V2: after its first BatchNorm), for 32x32
//   inputs such as CIFAR's.
#include <cstdint>
#include <optional>
#include <vector>

#include "gluon/block.hpp"
#include "gluon/nn/batch_norm.hpp"
#include "gluon/nn/conv.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/sequential.hpp"

namespace mx::gluon::model_zoo::vision {

class BasicBlockV1 : public Block {
 public:
  BasicBlockV1(std::int64_t channels, std::int64_t stride, bool downsample, std::int64_t in_channels);
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  nn::Sequential body_;
  std::optional<nn::Sequential> downsample_;
};

class BottleneckV1 : public Block {
 public:
  BottleneckV1(std::int64_t channels, std::int64_t stride, bool downsample, std::int64_t in_channels);
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  nn::Sequential body_;
  std::optional<nn::Sequential> downsample_;
};

class BasicBlockV2 : public Block {
 public:
  BasicBlockV2(std::int64_t channels, std::int64_t stride, bool downsample, std::int64_t in_channels);
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  nn::BatchNorm bn1_;
  nn::Conv2D conv1_;
  nn::BatchNorm bn2_;
  nn::Conv2D conv2_;
  std::optional<nn::Conv2D> downsample_;
};

class BottleneckV2 : public Block {
 public:
  BottleneckV2(std::int64_t channels, std::int64_t stride, bool downsample, std::int64_t in_channels);
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  nn::BatchNorm bn1_;
  nn::Conv2D conv1_;
  nn::BatchNorm bn2_;
  nn::Conv2D conv2_;
  nn::BatchNorm bn3_;
  nn::Conv2D conv3_;
  std::optional<nn::Conv2D> downsample_;
};

// A ResNet of `version` 1 or 2 and `num_layers` 18, 34, 50, 101 or 152 (mx::ValueError naming the
// valid ones otherwise); layers per stage and channels as MXNet's resnet_spec.
class ResNet : public Block {
 public:
  ResNet(int version, int num_layers, std::int64_t classes = 1000, bool thumbnail = false);
  nd::NDArray forward(const nd::NDArray& x) override { return output_(features_(x)); }
  nn::Sequential& features() { return features_; }
  nn::Dense& output() { return output_; }

 private:
  nn::Sequential features_;
  nn::Dense output_;
};

}  // namespace mx::gluon::model_zoo::vision
