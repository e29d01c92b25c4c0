#include "gluon/model_zoo/vision/densenet.hpp"

#include <map>
#include <string>
#include <vector>

#include "gluon/model_zoo/vision/checks.hpp"
#include "gluon/nn/activation.hpp"
#include "gluon/nn/batch_norm.hpp"
#include "gluon/nn/containers.hpp"
#include "gluon/nn/conv.hpp"
#include "gluon/nn/dropout.hpp"
#include "gluon/nn/flatten.hpp"

namespace mx::gluon::model_zoo::vision {
namespace {

struct Spec {
  std::int64_t init_features, growth;
  std::vector<int> layers;
};

const Spec& checked_spec(int num_layers) {
  static const std::map<int, Spec> spec{{121, {64, 32, {6, 12, 24, 16}}},
                                        {161, {96, 48, {6, 12, 36, 24}}},
                                        {169, {64, 32, {6, 12, 32, 32}}},
                                        {201, {64, 32, {6, 12, 48, 32}}}};
  const auto it = spec.find(num_layers);
  if (it == spec.end()) {
    throw ValueError("DenseNet: " + std::to_string(num_layers) + " layers; the options are 121, 161, 169 and 201");
  }
  return it->second;
}

nn::Conv2D conv(std::int64_t channels, std::int64_t kernel, std::int64_t padding = 0) {
  return nn::Conv2D(channels, kernel, {.padding = padding, .use_bias = false});
}

// [Identity, the new features] concatenated on the channels (MXNet's _make_dense_layer).
nn::Concurrent dense_layer(std::int64_t growth, std::int64_t bn_size, double dropout) {
  nn::Sequential features;
  features.add(nn::BatchNorm(), nn::Activation("relu"));
  features.add(conv(bn_size * growth, 1), nn::BatchNorm(), nn::Activation("relu"));
  features.add(conv(growth, 3, 1));
  if (dropout > 0) features.add(nn::Dropout(dropout));
  nn::Concurrent out(1);
  out.add(nn::Identity(), features);
  return out;
}

nn::Sequential transition(std::int64_t channels) {
  nn::Sequential out;
  out.add(nn::BatchNorm(), nn::Activation("relu"), conv(channels, 1), nn::AvgPool2D(2, {.strides = 2}));
  return out;
}

}  // namespace

// Built in MXNet's order inside the model's name scope (densenet0_conv0_, densenet0_stage1_...,
// the transitions' densenet0_batchnorm1_, ..., the output densenet0_dense0_).
DenseNet::DenseNet(int num_layers, std::int64_t classes, std::int64_t bn_size, double dropout)
    : Block("densenet"),
      features_(in_name_scope([&] {
        const Spec& s = checked_spec(num_layers);
        if (!(dropout >= 0 && dropout < 1)) throw ValueError("DenseNet: dropout must be in [0, 1), got " + std::to_string(dropout));
        if (bn_size < 1) throw ValueError("DenseNet: bn_size must be >= 1, got " + std::to_string(bn_size));
        detail::checked_classes("DenseNet", classes);
        nn::Sequential f;
        f.add(nn::Conv2D(s.init_features, 7, {.strides = 2, .padding = 3, .use_bias = false}), nn::BatchNorm(),
              nn::Activation("relu"), nn::MaxPool2D(3, {.strides = 2, .padding = 1}));
        std::int64_t channels = s.init_features;
        for (std::size_t i = 0; i < s.layers.size(); ++i) {
          nn::Sequential stage("stage" + std::to_string(i + 1) + "_");
          {
            const NameScope scope = stage.name_scope();
            for (int j = 0; j < s.layers[i]; ++j) stage.add(dense_layer(s.growth, bn_size, dropout));
          }
          f.add(stage);
          channels += s.layers[i] * s.growth;
          if (i + 1 != s.layers.size()) {
            channels /= 2;
            f.add(transition(channels));
          }
        }
        f.add(nn::BatchNorm(), nn::Activation("relu"), nn::AvgPool2D(7), nn::Flatten());
        return f;
      })),
      output_(in_name_scope([&] { return nn::Dense(classes); })) {
  register_child(features_, "features");
  register_child(output_, "output");
}

}  // namespace mx::gluon::model_zoo::vision
