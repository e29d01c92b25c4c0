#pragma once
// D2L's modern convolutional networks (chapter "Modern Convolutional Neural Networks", MXNet
// edition 0.17) as Gluon networks for Fashion-MNIST (1 channel, 10 classes), layer for layer as
// the book's MXNet code defines them:
//   alexnet    conv 11/4 96, pool 3/2, conv 5 pad 2 256, pool, conv 3 384 x2, conv 3 256, pool,
//              Dense 4096, Dropout .5, Dense 4096, Dropout .5, Dense 10        (224 x 224 input)
//   vgg        VGG-11 with a quarter of the channels (16, 32, 64, 128, 128): vgg_blocks of 3x3
//              convolutions and 2/2 max pools, then the AlexNet head            (224)
//   nin        NiN blocks (a convolution and two 1x1 ones, relu each), pools, Dropout, global
//              average pool                                                       (224)
//   googlenet  GoogLeNet: b1..b5 of Inception blocks (four branches concatenated) (96)
//   resnet     ResNet-18: Residual blocks (3x3, BN, relu, 3x3, BN, + the input or its 1x1
//              projection, relu), 64 to 512 channels, global average pool          (96)
//   densenet   DenseNet: dense blocks of 4 (BN, relu, 3x3 conv to 32) each concatenated to its
//              input, transitions halving the channels, global average pool       (96)
// Every ReLU network here is initialised with Xavier, as D2L's train_ch6 does.
#include <cstdint>
#include <utility>
#include <vector>

#include <gluon/nn.hpp>

namespace tutorial::modern {

namespace nn = mx::gluon::nn;

inline nn::Sequential alexnet() {
  nn::Sequential net;
  net.add(nn::Conv2D(96, 11, {.strides = 4, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}));
  net.add(nn::Conv2D(256, 5, {.padding = 2, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}));
  net.add(nn::Conv2D(384, 3, {.padding = 1, .activation = "relu"}));
  net.add(nn::Conv2D(384, 3, {.padding = 1, .activation = "relu"}));
  net.add(nn::Conv2D(256, 3, {.padding = 1, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}));
  net.add(nn::Dense(4096, "relu"), nn::Dropout(0.5));
  net.add(nn::Dense(4096, "relu"), nn::Dropout(0.5));
  net.add(nn::Dense(10));
  return net;
}

// num_convs 3x3 convolutions (pad 1, relu) of `channels`, then a 2/2 max pool.
inline nn::Sequential vgg_block(int num_convs, std::int64_t channels) {
  nn::Sequential block;
  for (int i = 0; i < num_convs; ++i) block.add(nn::Conv2D(channels, 3, {.padding = 1, .activation = "relu"}));
  block.add(nn::MaxPool2D(2, {.strides = 2}));
  return block;
}

// VGG-11's blocks ((1, 64), (1, 128), (2, 256), (2, 512), (2, 512)) with channels / ratio.
inline nn::Sequential vgg(std::int64_t ratio = 4) {
  const std::vector<std::pair<int, std::int64_t>> conv_arch{{1, 64}, {1, 128}, {2, 256}, {2, 512}, {2, 512}};
  nn::Sequential net;
  for (const auto& [num_convs, channels] : conv_arch) net.add(vgg_block(num_convs, channels / ratio));
  net.add(nn::Dense(4096, "relu"), nn::Dropout(0.5));
  net.add(nn::Dense(4096, "relu"), nn::Dropout(0.5));
  net.add(nn::Dense(10));
  return net;
}

inline nn::Sequential nin_block(std::int64_t channels, std::int64_t kernel, std::int64_t strides, std::int64_t padding) {
  nn::Sequential block;
  block.add(nn::Conv2D(channels, kernel, {.strides = strides, .padding = padding, .activation = "relu"}));
  block.add(nn::Conv2D(channels, 1, {.activation = "relu"}));
  block.add(nn::Conv2D(channels, 1, {.activation = "relu"}));
  return block;
}

inline nn::Sequential nin() {
  nn::Sequential net;
  net.add(nin_block(96, 11, 4, 0), nn::MaxPool2D(3, {.strides = 2}));
  net.add(nin_block(256, 5, 1, 2), nn::MaxPool2D(3, {.strides = 2}));
  net.add(nin_block(384, 3, 1, 1), nn::MaxPool2D(3, {.strides = 2}), nn::Dropout(0.5));
  net.add(nin_block(10, 3, 1, 1), nn::GlobalAvgPool2D(), nn::Flatten());
  return net;
}

// D2L's Inception block: 1x1 (c1); 1x1 then 3x3 (c2); 1x1 then 5x5 (c3); 3/1 max pool then 1x1
// (c4); relu after each convolution; the four concatenated on the channels.
inline nn::Concurrent inception(std::int64_t c1, std::pair<std::int64_t, std::int64_t> c2,
                                std::pair<std::int64_t, std::int64_t> c3, std::int64_t c4) {
  nn::Sequential p1, p2, p3, p4;
  p1.add(nn::Conv2D(c1, 1, {.activation = "relu"}));
  p2.add(nn::Conv2D(c2.first, 1, {.activation = "relu"}));
  p2.add(nn::Conv2D(c2.second, 3, {.padding = 1, .activation = "relu"}));
  p3.add(nn::Conv2D(c3.first, 1, {.activation = "relu"}));
  p3.add(nn::Conv2D(c3.second, 5, {.padding = 2, .activation = "relu"}));
  p4.add(nn::MaxPool2D(3, {.strides = 1, .padding = 1}));
  p4.add(nn::Conv2D(c4, 1, {.activation = "relu"}));
  nn::Concurrent block(1);
  block.add(p1).add(p2).add(p3).add(p4);
  return block;
}

inline nn::Sequential googlenet() {
  const auto pool = [] { return nn::MaxPool2D(3, {.strides = 2, .padding = 1}); };
  nn::Sequential b1, b2, b3, b4, b5, net;
  b1.add(nn::Conv2D(64, 7, {.strides = 2, .padding = 3, .activation = "relu"}), pool());
  b2.add(nn::Conv2D(64, 1, {.activation = "relu"}));
  b2.add(nn::Conv2D(192, 3, {.padding = 1, .activation = "relu"}), pool());
  b3.add(inception(64, {96, 128}, {16, 32}, 32)).add(inception(128, {128, 192}, {32, 96}, 64)).add(pool());
  b4.add(inception(192, {96, 208}, {16, 48}, 64)).add(inception(160, {112, 224}, {24, 64}, 64));
  b4.add(inception(128, {128, 256}, {24, 64}, 64)).add(inception(112, {144, 288}, {32, 64}, 64));
  b4.add(inception(256, {160, 320}, {32, 128}, 128)).add(pool());
  b5.add(inception(256, {160, 320}, {32, 128}, 128)).add(inception(384, {192, 384}, {48, 128}, 128));
  b5.add(nn::GlobalAvgPool2D());
  net.add(b1).add(b2).add(b3).add(b4).add(b5).add(nn::Dense(10));
  return net;
}

// D2L's Residual: relu(BN(conv3x3(relu(BN(conv3x3/strides(x))))) + x, or + a 1x1/strides
// projection of x where use_1x1conv.
class Residual : public mx::gluon::Block {
 public:
  Residual(std::int64_t channels, bool use_1x1conv = false, std::int64_t strides = 1)
      : Block("residual"),
        conv1_(register_child(nn::Conv2D(channels, 3, {.strides = strides, .padding = 1}), "conv1")),
        conv2_(register_child(nn::Conv2D(channels, 3, {.padding = 1}), "conv2")),
        bn1_(register_child(nn::BatchNorm(), "bn1")),
        bn2_(register_child(nn::BatchNorm(), "bn2")) {
    if (use_1x1conv) conv3_ = register_child(nn::Conv2D(channels, 1, {.strides = strides}), "conv3");
  }
  mx::nd::NDArray forward(const mx::nd::NDArray& x) override {
    const mx::nd::NDArray y = bn2_(conv2_(mx::nd::relu(bn1_(conv1_(x)))));
    return mx::nd::relu(y + (conv3_ ? (*conv3_)(x) : x));
  }

 private:
  nn::Conv2D conv1_, conv2_;
  nn::BatchNorm bn1_, bn2_;
  std::optional<nn::Conv2D> conv3_;
};

inline nn::Sequential resnet_block(std::int64_t channels, int num_residuals, bool first_block = false) {
  nn::Sequential block;
  for (int i = 0; i < num_residuals; ++i) {
    if (i == 0 && !first_block) {
      block.add(Residual(channels, true, 2));
    } else {
      block.add(Residual(channels));
    }
  }
  return block;
}

inline nn::Sequential resnet() {
  nn::Sequential net;
  net.add(nn::Conv2D(64, 7, {.strides = 2, .padding = 3}), nn::BatchNorm(), nn::Activation("relu"),
          nn::MaxPool2D(3, {.strides = 2, .padding = 1}));
  net.add(resnet_block(64, 2, true)).add(resnet_block(128, 2)).add(resnet_block(256, 2)).add(resnet_block(512, 2));
  net.add(nn::GlobalAvgPool2D(), nn::Dense(10));
  return net;
}

// BN, relu, 3x3 convolution to `channels` (D2L's conv_block).
inline nn::Sequential conv_block(std::int64_t channels) {
  nn::Sequential block;
  block.add(nn::BatchNorm(), nn::Activation("relu"), nn::Conv2D(channels, 3, {.padding = 1}));
  return block;
}

// D2L's DenseBlock: each conv_block's output concatenated to its input on the channels, which a
// Concurrent of [Identity, conv_block] is.
inline nn::Sequential dense_block(int num_convs, std::int64_t growth) {
  nn::Sequential block;
  for (int i = 0; i < num_convs; ++i) {
    nn::Concurrent layer(1);
    layer.add(nn::Identity(), conv_block(growth));
    block.add(layer);
  }
  return block;
}

inline nn::Sequential transition_block(std::int64_t channels) {
  nn::Sequential block;
  block.add(nn::BatchNorm(), nn::Activation("relu"), nn::Conv2D(channels, 1), nn::AvgPool2D(2, {.strides = 2}));
  return block;
}

inline nn::Sequential densenet() {
  nn::Sequential net;
  net.add(nn::Conv2D(64, 7, {.strides = 2, .padding = 3}), nn::BatchNorm(), nn::Activation("relu"),
          nn::MaxPool2D(3, {.strides = 2, .padding = 1}));
  std::int64_t channels = 64;
  const std::int64_t growth = 32;
  const std::vector<int> convs{4, 4, 4, 4};
  for (std::size_t i = 0; i < convs.size(); ++i) {
    net.add(dense_block(convs[i], growth));
    channels += convs[i] * growth;
    if (i + 1 != convs.size()) {
      channels /= 2;
      net.add(transition_block(channels));
    }
  }
  net.add(nn::BatchNorm(), nn::Activation("relu"), nn::GlobalAvgPool2D(), nn::Dense(10));
  return net;
}

}  // namespace tutorial::modern
