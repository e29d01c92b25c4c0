#pragma once
// MobileNet (V1) and MobileNetV2 as MXNet 1.9's gluon.model_zoo.vision builds them (mobilenet.py),
// with its structural parameter names:
//   MobileNet(multiplier): features = [conv 3x3/2 32m, BN, relu, then 13 depthwise-separable
//     pairs (depthwise conv 3x3 + BN + relu, conv 1x1 + BN + relu), global avg pool, flatten],
//     output = Dense(classes). Convolutions have no bias.
//   MobileNetV2(multiplier): features = [conv 3x3/2 32m, BN, relu6, 17 LinearBottlenecks,
//     conv 1x1 to 1280 (1280m when m > 1), BN, relu6, global avg pool], output = [conv 1x1 to
//     classes without bias, flatten]. A LinearBottleneck's `out` is conv 1x1 (expand t), BN, relu6,
//     depthwise conv 3x3/stride, BN, relu6, conv 1x1, BN; the input is added back where the stride
//     is 1 and the channels stay. relu6 is min(relu(x), 6) (MXNet: clip(x, 0, 6)).
#include <cstdint>

#include "gluon/block.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/sequential.hpp"

namespace mx::gluon::model_zoo::vision {

// relu6(x) = min(max(x, 0), 6), MobileNetV2's activation (MXNet's RELU6 block).
class ReLU6 : public Block {
 public:
  ReLU6() : Block("relu6") {}
  nd::NDArray forward(const nd::NDArray& x) override;
};

class LinearBottleneck : public Block {
 public:
  LinearBottleneck(std::int64_t in_channels, std::int64_t channels, std::int64_t t, std::int64_t stride);
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  bool shortcut_;
  nn::Sequential out_;
};

// multiplier > 0 (mx::ValueError otherwise); channels are int(c · multiplier) as in MXNet.
class MobileNet : public Block {
 public:
  explicit MobileNet(double multiplier = 1.0, std::int64_t classes = 1000);
  nd::NDArray forward(const nd::NDArray& x) override { return output_(features_(x)); }

 private:
  nn::Sequential features_;
  nn::Dense output_;
};

class MobileNetV2 : public Block {
 public:
  explicit MobileNetV2(double multiplier = 1.0, std::int64_t classes = 1000);
  nd::NDArray forward(const nd::NDArray& x) override { return output_(features_(x)); }

 private:
  nn::Sequential features_;
  nn::Sequential output_;
};

}  // namespace mx::gluon::model_zoo::vision
