#include "gluon/model_zoo/vision/vgg.hpp"

#include <map>
#include <string>
#include <vector>

#include "gluon/nn/activation.hpp"
#include "gluon/nn/batch_norm.hpp"
#include "gluon/nn/conv.hpp"
#include "gluon/nn/dropout.hpp"
#include "gluon/nn/flatten.hpp"

namespace mx::gluon::model_zoo::vision {
namespace {

std::int64_t checked_classes(const char* model, std::int64_t classes) {
  if (classes < 1) throw ValueError(std::string(model) + ": classes must be >= 1, got " + std::to_string(classes));
  return classes;
}

// Layers per stage of VGG-n (every stage's filters: 64, 128, 256, 512, 512).
const std::vector<int>& vgg_layers(int num_layers) {
  static const std::map<int, std::vector<int>> spec{
      {11, {1, 1, 2, 2, 2}}, {13, {2, 2, 2, 2, 2}}, {16, {2, 2, 3, 3, 3}}, {19, {2, 2, 4, 4, 4}}};
  const auto it = spec.find(num_layers);
  if (it == spec.end()) throw ValueError("VGG: " + std::to_string(num_layers) + " layers; the options are 11, 13, 16 and 19");
  return it->second;
}

}  // namespace

AlexNet::AlexNet(std::int64_t classes) : Block("alexnet"), output_(checked_classes("AlexNet", classes)) {
  nn::Sequential f;
  f.add(nn::Conv2D(64, 11, {.strides = 4, .padding = 2, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}),
        nn::Conv2D(192, 5, {.padding = 2, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}),
        nn::Conv2D(384, 3, {.padding = 1, .activation = "relu"}), nn::Conv2D(256, 3, {.padding = 1, .activation = "relu"}),
        nn::Conv2D(256, 3, {.padding = 1, .activation = "relu"}), nn::MaxPool2D(3, {.strides = 2}), nn::Flatten(),
        nn::Dense(4096, "relu"), nn::Dropout(0.5), nn::Dense(4096, "relu"), nn::Dropout(0.5));
  features_ = register_child(f, "features");
  register_child(output_, "output");
}

VGG::VGG(int num_layers, std::int64_t classes, bool batch_norm)
    : Block("vgg"), output_(checked_classes("VGG", classes), "", true, 0, init::Normal(0.01)) {
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
  f.add(nn::Dense(4096, "relu", true, 0, init::Normal(0.01)), nn::Dropout(0.5),
        nn::Dense(4096, "relu", true, 0, init::Normal(0.01)), nn::Dropout(0.5));
  features_ = register_child(f, "features");
  register_child(output_, "output");
}

}  // namespace mx::gluon::model_zoo::vision
