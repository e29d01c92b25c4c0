#include "gluon/model_zoo/vision/squeezenet.hpp"

#include "gluon/model_zoo/vision/checks.hpp"
#include "gluon/nn/activation.hpp"
#include "gluon/nn/containers.hpp"
#include "gluon/nn/conv.hpp"
#include "gluon/nn/dropout.hpp"
#include "gluon/nn/flatten.hpp"

namespace mx::gluon::model_zoo::vision {
namespace {

nn::Sequential fire_conv(std::int64_t channels, std::int64_t kernel, std::int64_t padding = 0) {
  nn::Sequential out;
  out.add(nn::Conv2D(channels, kernel, {.padding = padding}), nn::Activation("relu"));
  return out;
}

// The squeeze convolution is built first, then the two expanding ones, as MXNet's _make_fire.
nn::Sequential fire(std::int64_t squeeze, std::int64_t expand1x1, std::int64_t expand3x3) {
  nn::Sequential out;
  out.add(fire_conv(squeeze, 1));
  nn::Concurrent paths(1);
  paths.add(fire_conv(expand1x1, 1));
  paths.add(fire_conv(expand3x3, 3, 1));
  out.add(paths);
  return out;
}

nn::MaxPool2D pool() { return nn::MaxPool2D(3, {.strides = 2, .ceil_mode = true}); }

}  // namespace

// Built in MXNet's order inside the model's name scope: squeezenet0_conv0_, ..., the output's
// convolution last.
SqueezeNet::SqueezeNet(const std::string& version, std::int64_t classes)
    : Block("squeezenet"),
      features_(in_name_scope([&] {
        if (version != "1.0" && version != "1.1") {
          throw ValueError("SqueezeNet: version '" + version + "'; the options are '1.0' and '1.1'");
        }
        detail::checked_classes("SqueezeNet", classes);
        nn::Sequential f;
        if (version == "1.0") {
          f.add(nn::Conv2D(96, 7, {.strides = 2}), nn::Activation("relu"), pool());
          f.add(fire(16, 64, 64)).add(fire(16, 64, 64)).add(fire(32, 128, 128));
          f.add(pool());
          f.add(fire(32, 128, 128)).add(fire(48, 192, 192)).add(fire(48, 192, 192)).add(fire(64, 256, 256));
          f.add(pool());
          f.add(fire(64, 256, 256));
        } else {
          f.add(nn::Conv2D(64, 3, {.strides = 2}), nn::Activation("relu"), pool());
          f.add(fire(16, 64, 64)).add(fire(16, 64, 64));
          f.add(pool());
          f.add(fire(32, 128, 128)).add(fire(32, 128, 128));
          f.add(pool());
          f.add(fire(48, 192, 192)).add(fire(48, 192, 192)).add(fire(64, 256, 256)).add(fire(64, 256, 256));
        }
        f.add(nn::Dropout(0.5));
        return f;
      })),
      output_(in_name_scope([&] {
        nn::Sequential o;
        o.add(nn::Conv2D(classes, 1), nn::Activation("relu"), nn::AvgPool2D(13), nn::Flatten());
        return o;
      })) {
  register_child(features_, "features");
  register_child(output_, "output");
}

}  // namespace mx::gluon::model_zoo::vision
