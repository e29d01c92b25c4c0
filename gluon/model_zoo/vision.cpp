#include "gluon/model_zoo/vision.hpp"

#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace mx::gluon::model_zoo::vision {
namespace {

using Maker = std::function<std::shared_ptr<Block>(const ModelOptions&)>;

const std::map<std::string, Maker>& makers() {
  static const std::map<std::string, Maker> m = [] {
    std::map<std::string, Maker> all;
    for (int version : {1, 2}) {
      for (int layers : {18, 34, 50, 101, 152}) {
        all["resnet" + std::to_string(layers) + "_v" + std::to_string(version)] = [version, layers](const ModelOptions& o) {
          return std::make_shared<ResNet>(version, layers, o.classes, o.thumbnail);
        };
      }
    }
    // MXNet's names: mobilenet1.0, mobilenet0.75, ...; mobilenetv2_1.0, ...
    for (const auto& [suffix, multiplier] : std::vector<std::pair<std::string, double>>{
             {"1.0", 1.0}, {"0.75", 0.75}, {"0.5", 0.5}, {"0.25", 0.25}}) {
      all["mobilenet" + suffix] = [m = multiplier](const ModelOptions& o) { return std::make_shared<MobileNet>(m, o.classes); };
      all["mobilenetv2_" + suffix] = [m = multiplier](const ModelOptions& o) {
        return std::make_shared<MobileNetV2>(m, o.classes);
      };
    }
    all["alexnet"] = [](const ModelOptions& o) { return std::make_shared<AlexNet>(o.classes); };
    for (int layers : {11, 13, 16, 19}) {
      for (bool bn : {false, true}) {
        all["vgg" + std::to_string(layers) + (bn ? "_bn" : "")] = [layers, bn](const ModelOptions& o) {
          return std::make_shared<VGG>(layers, o.classes, bn);
        };
      }
    }
    for (int layers : {121, 161, 169, 201}) {
      all["densenet" + std::to_string(layers)] = [layers](const ModelOptions& o) {
        return std::make_shared<DenseNet>(layers, o.classes);
      };
    }
    for (const std::string version : {"1.0", "1.1"}) {
      all["squeezenet" + version] = [version](const ModelOptions& o) { return std::make_shared<SqueezeNet>(version, o.classes); };
    }
    all["inceptionv3"] = [](const ModelOptions& o) { return std::make_shared<Inception3>(o.classes); };
    return all;
  }();
  return m;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, maker] : makers()) names.push_back(name);
  return names;
}

std::shared_ptr<Block> get_model(const std::string& name, const ModelOptions& options) {
  const auto it = makers().find(name);
  if (it == makers().end()) {
    std::string known;
    for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    throw ValueError("model_zoo::vision::get_model: unknown model '" + name + "'; the models are " + known);
  }
  std::shared_ptr<Block> net = it->second(options);
  if (!options.pretrained.empty()) net->load_parameters(options.pretrained, options.ctx);
  return net;
}

}  // namespace mx::gluon::model_zoo::vision
