#include "gluon/model_zoo/vision/mobilenet.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "gluon/nn/activation.hpp"
#include "gluon/nn/batch_norm.hpp"
#include "gluon/nn/conv.hpp"
#include "gluon/nn/flatten.hpp"
#include "ndarray/ops/elementwise.hpp"

namespace mx::gluon::model_zoo::vision {
namespace {

// MXNet's _add_conv: a convolution without bias, BatchNorm, then relu (or relu6) when active.
void add_conv(nn::Sequential& out, std::int64_t channels, std::int64_t kernel = 1, std::int64_t stride = 1,
              std::int64_t pad = 0, std::int64_t groups = 1, bool active = true, bool relu6 = false) {
  out.add(nn::Conv2D(channels, kernel, {.strides = stride, .padding = pad, .groups = groups, .use_bias = false}),
          nn::BatchNorm());
  if (!active) return;
  if (relu6) {
    out.add(ReLU6());
  } else {
    out.add(nn::Activation("relu"));
  }
}

double checked_multiplier(const char* model, double multiplier, std::int64_t classes) {
  if (!(multiplier > 0) || !std::isfinite(multiplier)) {
    throw ValueError(std::string(model) + ": multiplier must be > 0, got " + std::to_string(multiplier));
  }
  if (classes < 1) throw ValueError(std::string(model) + ": classes must be >= 1, got " + std::to_string(classes));
  return multiplier;
}

// int(c * multiplier) for each c, as MXNet's list comprehensions.
std::vector<std::int64_t> scaled(const std::vector<std::int64_t>& channels, double multiplier) {
  std::vector<std::int64_t> out;
  for (std::int64_t c : channels) out.push_back(static_cast<std::int64_t>(static_cast<double>(c) * multiplier));
  return out;
}

}  // namespace

nd::NDArray ReLU6::forward(const nd::NDArray& x) { return nd::minimum(nd::relu(x), 6.0); }

LinearBottleneck::LinearBottleneck(std::int64_t in_channels, std::int64_t channels, std::int64_t t, std::int64_t stride)
    : Block("linearbottleneck"), shortcut_(stride == 1 && in_channels == channels) {
  const NameScope scope = name_scope();  // its convolutions: ..._linearbottleneck0_conv0_, as MXNet's
  nn::Sequential out;
  add_conv(out, in_channels * t, 1, 1, 0, 1, true, true);
  add_conv(out, in_channels * t, 3, stride, 1, in_channels * t, true, true);
  add_conv(out, channels, 1, 1, 0, 1, false, true);
  out_ = register_child(out, "out");
}

nd::NDArray LinearBottleneck::forward(const nd::NDArray& x) {
  const nd::NDArray y = out_(x);
  return shortcut_ ? y + x : y;
}

// Both built in MXNet's order inside the model's name scope: mobilenet0_conv0_ ... and the output
// mobilenet0_dense0_; mobilenetv20_features_conv0_, mobilenetv20_features_linearbottleneck0_conv0_
// ..., the output mobilenetv20_output_pred_.
MobileNet::MobileNet(double multiplier, std::int64_t classes)
    : Block("mobilenet"),
      features_(in_name_scope([&] {
        checked_multiplier("MobileNet", multiplier, classes);
        nn::Sequential f;
        add_conv(f, static_cast<std::int64_t>(32 * multiplier), 3, 2, 1);
        const std::vector<std::int64_t> dw =
            scaled({32, 64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024}, multiplier);
        const std::vector<std::int64_t> out =
            scaled({64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024}, multiplier);
        const std::int64_t strides[] = {1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1};
        for (std::size_t i = 0; i < dw.size(); ++i) {
          add_conv(f, dw[i], 3, strides[i], 1, dw[i]);  // depthwise
          add_conv(f, out[i]);                          // pointwise
        }
        f.add(nn::GlobalAvgPool2D(), nn::Flatten());
        return f;
      })),
      output_(in_name_scope([&] { return nn::Dense(classes); })) {
  register_child(features_, "features");
  register_child(output_, "output");
}

MobileNetV2::MobileNetV2(double multiplier, std::int64_t classes)
    : Block("mobilenetv2"),
      features_(in_name_scope([&] {
        checked_multiplier("MobileNetV2", multiplier, classes);
        nn::Sequential f("features_");
        const NameScope scope = f.name_scope();
        add_conv(f, static_cast<std::int64_t>(32 * multiplier), 3, 2, 1, 1, true, true);
        const std::vector<std::int64_t> in =
            scaled({32, 16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160}, multiplier);
        const std::vector<std::int64_t> out =
            scaled({16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160, 320}, multiplier);
        const std::int64_t strides[] = {1, 2, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1};
        for (std::size_t i = 0; i < in.size(); ++i) f.add(LinearBottleneck(in[i], out[i], i == 0 ? 1 : 6, strides[i]));
        add_conv(f, multiplier > 1.0 ? static_cast<std::int64_t>(1280 * multiplier) : 1280, 1, 1, 0, 1, true, true);
        f.add(nn::GlobalAvgPool2D());
        return f;
      })),
      output_(in_name_scope([&] {
        nn::Sequential o("output_");
        const NameScope scope = o.name_scope();
        o.add(nn::Conv2D(classes, 1, {.use_bias = false, .prefix = "pred_"}), nn::Flatten());
        return o;
      })) {
  register_child(features_, "features");
  register_child(output_, "output");
}

}  // namespace mx::gluon::model_zoo::vision
