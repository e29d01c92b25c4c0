#pragma once
// D2L 7.6's LeNet and D2L 8.5's BN-LeNet (the concise version) as Gluon networks, for input
// (batch, 1, 28, 28) and 10 classes. Shared by tutorials/lenet and bench/conv_bench.
#include <gluon/nn.hpp>
#include <gluon/nn/batch_norm.hpp>
#include <gluon/nn/conv.hpp>

namespace tutorial {

// LeNet: (batch, 1, 28, 28) -> (6, 28, 28) -> (6, 14, 14) -> (16, 10, 10) -> (16, 5, 5) -> 120 -> 84 -> 10,
// sigmoid after each convolution and hidden Dense layer, average pooling.
// BN-LeNet (batch_norm): no padding, and BatchNorm before each of those sigmoids:
// (batch, 1, 28, 28) -> (6, 24, 24) -> (6, 12, 12) -> (16, 8, 8) -> (16, 4, 4) -> 120 -> 84 -> 10.
inline mx::gluon::nn::Sequential lenet(bool batch_norm = false) {
  namespace nn = mx::gluon::nn;
  nn::Sequential net;
  if (!batch_norm) {
    net.add(nn::Conv2D(6, 5, {.padding = 2, .activation = "sigmoid"}), nn::AvgPool2D(2, {.strides = 2}),
            nn::Conv2D(16, 5, {.activation = "sigmoid"}), nn::AvgPool2D(2, {.strides = 2}),
            nn::Dense(120, "sigmoid"), nn::Dense(84, "sigmoid"), nn::Dense(10));
  } else {
    net.add(nn::Conv2D(6, 5), nn::BatchNorm(), nn::Activation("sigmoid"), nn::AvgPool2D(2, {.strides = 2}),
            nn::Conv2D(16, 5), nn::BatchNorm(), nn::Activation("sigmoid"), nn::AvgPool2D(2, {.strides = 2}),
            nn::Dense(120), nn::BatchNorm(), nn::Activation("sigmoid"),
            nn::Dense(84), nn::BatchNorm(), nn::Activation("sigmoid"),
            nn::Dense(10));
  }
  return net;
}

}  // namespace tutorial
