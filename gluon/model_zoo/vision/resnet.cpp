#include "gluon/model_zoo/vision/resnet.hpp"

#include <map>
#include <string>

#include "gluon/nn/activation.hpp"
#include "gluon/nn/flatten.hpp"
#include "ndarray/ops/elementwise.hpp"

namespace mx::gluon::model_zoo::vision {
namespace {

nn::Conv2D conv3x3(std::int64_t channels, std::int64_t stride, std::int64_t in_channels) {
  return nn::Conv2D(channels, 3, {.strides = stride, .padding = 1, .use_bias = false, .in_channels = in_channels});
}

nn::Conv2D conv1x1(std::int64_t channels, std::int64_t stride, bool use_bias, std::int64_t in_channels = 0) {
  return nn::Conv2D(channels, 1, {.strides = stride, .use_bias = use_bias, .in_channels = in_channels});
}

// [conv1x1/stride without bias, BatchNorm]: V1's shortcut where the channels change.
nn::Sequential downsample_v1(std::int64_t channels, std::int64_t stride, std::int64_t in_channels) {
  nn::Sequential s;
  s.add(conv1x1(channels, stride, false, in_channels), nn::BatchNorm());
  return s;
}

struct Spec {
  bool bottleneck;
  std::vector<int> layers;
  std::vector<std::int64_t> channels;
};

const std::map<int, Spec>& specs() {
  static const std::map<int, Spec> s{
      {18, {false, {2, 2, 2, 2}, {64, 64, 128, 256, 512}}},
      {34, {false, {3, 4, 6, 3}, {64, 64, 128, 256, 512}}},
      {50, {true, {3, 4, 6, 3}, {64, 256, 512, 1024, 2048}}},
      {101, {true, {3, 4, 23, 3}, {64, 256, 512, 1024, 2048}}},
      {152, {true, {3, 8, 36, 3}, {64, 256, 512, 1024, 2048}}},
  };
  return s;
}

// Stage `index` (from 1): its first block strides and changes the channels, the others keep
// them. Its blocks are named in its scope, as MXNet's _make_layer: resnetv10_stage1_conv0_.
template <class Block>
nn::Sequential stage(int index, int blocks, std::int64_t channels, std::int64_t stride, std::int64_t in_channels) {
  nn::Sequential layer("stage" + std::to_string(index) + "_");
  const auto scope = layer.name_scope();
  layer.add(Block(channels, stride, channels != in_channels, in_channels));
  for (int i = 1; i < blocks; ++i) layer.add(Block(channels, 1, false, channels));
  return layer;
}

}  // namespace

BasicBlockV1::BasicBlockV1(std::int64_t channels, std::int64_t stride, bool downsample, std::int64_t in_channels)
    : Block("basicblockv1") {
  nn::Sequential body;  // one convolution per statement: MXNet's order of names
  body.add(conv3x3(channels, stride, in_channels), nn::BatchNorm(), nn::Activation("relu"));
  body.add(conv3x3(channels, 1, channels), nn::BatchNorm());
  body_ = register_child(body, "body");
  if (downsample) downsample_ = register_child(downsample_v1(channels, stride, in_channels), "downsample");
}

nd::NDArray BasicBlockV1::forward(const nd::NDArray& x) {
  const nd::NDArray shortcut = downsample_ ? (*downsample_)(x) : x;
  return nd::relu(shortcut + body_(x));
}

BottleneckV1::BottleneckV1(std::int64_t channels, std::int64_t stride, bool downsample, std::int64_t in_channels)
    : Block("bottleneckv1") {
  nn::Sequential body;
  body.add(conv1x1(channels / 4, stride, true), nn::BatchNorm(), nn::Activation("relu"));
  body.add(conv3x3(channels / 4, 1, channels / 4), nn::BatchNorm(), nn::Activation("relu"));
  body.add(conv1x1(channels, 1, true), nn::BatchNorm());
  body_ = register_child(body, "body");
  if (downsample) downsample_ = register_child(downsample_v1(channels, stride, in_channels), "downsample");
}

nd::NDArray BottleneckV1::forward(const nd::NDArray& x) {
  const nd::NDArray shortcut = downsample_ ? (*downsample_)(x) : x;
  return nd::relu(body_(x) + shortcut);
}

BasicBlockV2::BasicBlockV2(std::int64_t channels, std::int64_t stride, bool downsample, std::int64_t in_channels)
    : Block("basicblockv2"),
      bn1_(register_child(nn::BatchNorm(), "bn1")),
      conv1_(register_child(conv3x3(channels, stride, in_channels), "conv1")),
      bn2_(register_child(nn::BatchNorm(), "bn2")),
      conv2_(register_child(conv3x3(channels, 1, channels), "conv2")) {
  if (downsample) downsample_ = register_child(conv1x1(channels, stride, false, in_channels), "downsample");
}

nd::NDArray BasicBlockV2::forward(const nd::NDArray& x) {
  const nd::NDArray a = nd::relu(bn1_(x));
  const nd::NDArray shortcut = downsample_ ? (*downsample_)(a) : x;
  return conv2_(nd::relu(bn2_(conv1_(a)))) + shortcut;
}

BottleneckV2::BottleneckV2(std::int64_t channels, std::int64_t stride, bool downsample, std::int64_t in_channels)
    : Block("bottleneckv2"),
      bn1_(register_child(nn::BatchNorm(), "bn1")),
      conv1_(register_child(conv1x1(channels / 4, 1, false), "conv1")),
      bn2_(register_child(nn::BatchNorm(), "bn2")),
      conv2_(register_child(conv3x3(channels / 4, stride, channels / 4), "conv2")),
      bn3_(register_child(nn::BatchNorm(), "bn3")),
      conv3_(register_child(conv1x1(channels, 1, false), "conv3")) {
  if (downsample) downsample_ = register_child(conv1x1(channels, stride, false, in_channels), "downsample");
}

nd::NDArray BottleneckV2::forward(const nd::NDArray& x) {
  const nd::NDArray a = nd::relu(bn1_(x));
  const nd::NDArray shortcut = downsample_ ? (*downsample_)(a) : x;
  const nd::NDArray b = nd::relu(bn2_(conv1_(a)));
  return conv3_(nd::relu(bn3_(conv2_(b)))) + shortcut;
}

namespace {

// The spec of a valid (version, num_layers, classes); mx::ValueError naming the options otherwise.
const Spec& checked_spec(int version, int num_layers, std::int64_t classes) {
  const auto spec = specs().find(num_layers);
  if (spec == specs().end()) {
    throw ValueError("ResNet: " + std::to_string(num_layers) + " layers; the options are 18, 34, 50, 101 and 152");
  }
  if (version != 1 && version != 2) {
    throw ValueError("ResNet: version " + std::to_string(version) + "; the options are 1 and 2");
  }
  if (classes < 1) throw ValueError("ResNet: classes must be >= 1, got " + std::to_string(classes));
  return spec->second;
}

}  // namespace

// Built in MXNet's order inside the model's name scope (resnetv10_conv0_, resnetv10_stage1_...,
// the output resnetv10_dense0_).
ResNet::ResNet(int version, int num_layers, std::int64_t classes, bool thumbnail)
    : Block("resnetv" + std::to_string(version)),
      features_(in_name_scope([&] {
        const Spec& s = checked_spec(version, num_layers, classes);
        nn::Sequential features;
        if (version == 2) features.add(nn::BatchNorm({.center = false, .scale = false}));
        if (thumbnail) {
          features.add(conv3x3(s.channels[0], 1, 3));
        } else {
          features.add(nn::Conv2D(s.channels[0], 7, {.strides = 2, .padding = 3, .use_bias = false, .in_channels = 3}),
                       nn::BatchNorm(), nn::Activation("relu"), nn::MaxPool2D(3, {.strides = 2, .padding = 1}));
        }
        for (std::size_t i = 0; i < s.layers.size(); ++i) {
          const int index = static_cast<int>(i) + 1, blocks = s.layers[i];
          const std::int64_t stride = i == 0 ? 1 : 2, channels = s.channels[i + 1], in_channels = s.channels[i];
          if (version == 1) {
            features.add(s.bottleneck ? stage<BottleneckV1>(index, blocks, channels, stride, in_channels)
                                      : stage<BasicBlockV1>(index, blocks, channels, stride, in_channels));
          } else {
            features.add(s.bottleneck ? stage<BottleneckV2>(index, blocks, channels, stride, in_channels)
                                      : stage<BasicBlockV2>(index, blocks, channels, stride, in_channels));
          }
        }
        if (version == 2) features.add(nn::BatchNorm(), nn::Activation("relu"));
        features.add(nn::GlobalAvgPool2D());
        if (version == 2) features.add(nn::Flatten());
        return features;
      })),
      output_(in_name_scope([&] { return nn::Dense(classes, "", true, specs().at(num_layers).channels.back()); })) {
  register_child(features_, "features");
  register_child(output_, "output");
}

}  // namespace mx::gluon::model_zoo::vision
