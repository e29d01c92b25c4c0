#include "gluon/model_zoo/vision/vgg.hpp"

#include <map>
#include <string>
#include <vector>

#include "gluon/nn/activation.hpp"
#include "gluon/nn/batch_norm.hpp"
#include "gluon/nn/conv.hpp"
#include "gluon/nn/dropout.hpp"
#include "gluon/nn/flatten.hpp"
#include "gluon/model_zoo/vision/checks.hpp"

namespace mx::gluon::model_zoo::vision {
namespace {

using detail::checked_classes;

// Layers per stage of VGG-n (every stage's filters: 64, 128, 256, 512, 512).
const std::vector<int>& vgg_layers(int num_layers) {
  static const std::map<int, std::vector<int>> spec{
      {11, {1, 1, 2, 2, 2}}, {13, {2, 2, 2, 2, 2}}, {16, {2, 2, 3, 3, 3}}, {19, {2, 2, 4, 4, 4}}};
  const auto it = spec.find(num_layers);
  if (it == spec.end()) throw ValueError("VGG: " + std::to_string(num_layers) + " layers; the options are 11, 13, 16 and 19");
  return it->second;
}

}  // namespace

// Built in MXNet's order inside the model's name scope: alexnet0_conv0_ ... conv4_, dense0_,
// dense1_, and the output dense2_.
AlexNet::AlexNet(std::int64_t classes)
    : Block("alexnet"),
      features_(in_name_scope([] {
        nn::Sequential f;
        f.add(nn::Conv2D(64, 11, {.strides = 4, .padding = 2, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}));
        f.add(nn::Conv2D(192, 5, {.padding = 2, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}));
        f.add(nn::Conv2D(384, 3, {.padding = 1, .activation = "relu"}));
        f.add(nn::Conv2D(256, 3, {.padding = 1, .activation = "relu"}));
        f.add(nn::Conv2D(256, 3, {.padding = 1, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}), nn::Flatten());
        f.add(nn::Dense(4096, "relu"), nn::Dropout(0.5));
        f.add(nn::Dense(4096, "relu"), nn::Dropout(0.5));
        return f;
      })),
      output_(in_name_scope([&] { return nn::Dense(checked_classes("AlexNet", classes)); })) {
  register_child(features_, "features");
  register_child(output_, "output");
}

VGG::VGG(int num_layers, std::int64_t classes, bool batch_norm)
    : Block("vgg"),
      features_(in_name_scope([&] {
        const std::vector<int>& layers = vgg_layers(num_layers);
        const std::int64_t filters[] = {64, 128, 256, 512, 512};
        nn::Sequential f;
        for (std::size_t stage = 0; stage < layers.size(); ++stage) {
          for (int i = 0; i < layers[stage]; ++i) {
            f.add(nn::Conv2D(filters[stage], 3, {.padding = 1, .weight_initializer = init::Xavier("gaussian", "out", 2)}));
            if (batch_norm) f.add(nn::BatchNorm());
            f.add(nn::Activation("relu"));
          }
          f.add(nn::MaxPool2D(2, {.strides = 2}));
        }
        f.add(nn::Dense(4096, "relu", true, 0, init::Normal(0.01)), nn::Dropout(0.5));
        f.add(nn::Dense(4096, "relu", true, 0, init::Normal(0.01)), nn::Dropout(0.5));
        return f;
      })),
      output_(in_name_scope([&] { return nn::Dense(checked_classes("VGG", classes), "", true, 0, init::Normal(0.01)); })) {
  register_child(features_, "features");
  register_child(output_, "output");
}

}  // namespace mx::gluon::model_zoo::vision
