#pragma once
// mx::gluon::model_zoo::vision, as mx.gluon.model_zoo.vision: the models by name, with MXNet 1.9's
// structures and structural parameter names, so that MXNet's pretrained files load.
//
//   namespace vision = mx::gluon::model_zoo::vision;
//   auto net = vision::get_model("resnet50_v1", {.pretrained = "resnet50_v1-cc729d95.params",
//                                                .ctx = {mx::gpu(0)}});
//   auto small = vision::get_model("resnet18_v1", {.classes = 10, .thumbnail = true});
//   small->initialize(mx::init::Xavier(), {mx::gpu(0)});
//
// The models, MXNet's names: resnet18/34/50/101/152 in _v1 and _v2 (vision/resnet.hpp), alexnet,
// vgg11/13/16/19 and their _bn (vision/vgg.hpp), mobilenet1.0/0.75/0.5/0.25 and
// mobilenetv2_1.0/0.75/0.5/0.25 (vision/mobilenet.hpp), densenet121/161/169/201
// (vision/densenet.hpp), squeezenet1.0/1.1 (vision/squeezenet.hpp), inceptionv3 (299x299 inputs,
// vision/inception.hpp). pretrained is a path (nothing is downloaded): load_parameters onto ctx,
// as MXNet's pretrained=True does from its cache, with either of MXNet's key styles: structural
// names ("features.0.weight", its files re-exported after 2018) or its older files' parameter
// names without the model's prefix ("conv0_weight"), which match because every model is built
// inside its name scope in MXNet's order. A file whose names or shapes differ throws
// load_parameters' typed errors.
#include <memory>
#include <string>
#include <vector>

#include "gluon/block.hpp"
#include "gluon/model_zoo/vision/densenet.hpp"
#include "gluon/model_zoo/vision/inception.hpp"
#include "gluon/model_zoo/vision/mobilenet.hpp"
#include "gluon/model_zoo/vision/resnet.hpp"
#include "gluon/model_zoo/vision/squeezenet.hpp"
#include "gluon/model_zoo/vision/vgg.hpp"

namespace mx::gluon::model_zoo::vision {

struct ModelOptions {
  std::int64_t classes = 1000;
  bool thumbnail = false;        // ResNet: a 3x3 stem for 32x32 inputs
  std::string pretrained = "";   // a parameter file to load; "" leaves the model uninitialised
  std::vector<Context> ctx = {cpu()};
};

// The model `name` (MXNet's: "resnet50_v1"); mx::ValueError listing the known names otherwise.
std::shared_ptr<Block> get_model(const std::string& name, const ModelOptions& options = {});
// The names get_model knows, sorted.
std::vector<std::string> model_names();

}  // namespace mx::gluon::model_zoo::vision
