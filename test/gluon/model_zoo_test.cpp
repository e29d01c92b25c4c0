// model_zoo::vision: ResNet's structural parameter names and shapes as MXNet 1.9's (the keys of
// its model-zoo files), trainable sizes against independent counts (torchvision's ResNet-18 and
// ResNet-50 have MXNet V1's layers, less V1 bottlenecks' conv biases), forward shapes, pretrained
// files loading (and refused with typed errors), get_model's errors. On every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <algorithm>
#include <map>
#include <string>

#include <gluon/model_zoo/vision.hpp>
#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace vision = mx::gluon::model_zoo::vision;
using ndg_test::check_close;

namespace {

// The structural names and shapes save_parameters writes, after a forward of a size x size image
// that completes the deferred shapes.
std::map<std::string, mx::Shape> saved_shapes(mx::gluon::Block& net, mx::Context ctx, std::int64_t size = 32) {
  net(nd::ones({1, 3, size, size}, ctx));
  const ndg_test::TempDir dir;
  net.save_parameters(dir.file("net.params"));
  std::map<std::string, mx::Shape> shapes;
  for (const auto& [name, array] : nd::load(dir.file("net.params")).as_map()) shapes[name] = array.shape();
  return shapes;
}

std::int64_t trainable(mx::gluon::Block& net) {
  std::int64_t n = 0;
  for (const auto& [name, param] : net.collect_params()) {
    if (param.grad_req() != "null") n += param.shape().numel();
  }
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(model_zoo)

BOOST_AUTO_TEST_CASE(resnet18_v1_has_mxnet_names_and_torchvision_size) {
  auto net = vision::get_model("resnet18_v1");
  net->initialize(mx::init::Xavier(), {mx::cpu()});
  const auto shapes = saved_shapes(*net, mx::cpu());
  const std::map<std::string, mx::Shape> want{
      {"features.0.weight", {64, 3, 7, 7}},          {"features.1.gamma", {64}},
      {"features.1.running_var", {64}},              {"features.4.0.body.0.weight", {64, 64, 3, 3}},
      {"features.4.1.body.4.running_mean", {64}},    {"features.5.0.body.0.weight", {128, 64, 3, 3}},
      {"features.5.0.downsample.0.weight", {128, 64, 1, 1}}, {"features.5.0.downsample.1.beta", {128}},
      {"features.7.1.body.3.weight", {512, 512, 3, 3}}, {"output.weight", {1000, 512}},
      {"output.bias", {1000}}};
  for (const auto& [name, shape] : want) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST_REQUIRE(shapes.count(name) == 1u);
      BOOST_TEST(shapes.at(name) == shape);
    }
  }
  BOOST_TEST(shapes.count("features.4.0.downsample.0.weight") == 0u);  // stage 1 keeps 64 channels
  BOOST_TEST(shapes.count("features.4.0.body.0.bias") == 0u);          // V1's 3x3 convolutions have none
  BOOST_TEST(shapes.size() == 102u);  // 20 convolutions + 20 BatchNorm (4 each) + 2 of output
  BOOST_TEST(trainable(*net) == 11689512);  // torchvision's resnet18
}

BOOST_AUTO_TEST_CASE(resnet50_v1_bottlenecks_have_mxnet_biases) {
  auto net = vision::get_model("resnet50_v1");
  net->initialize(mx::init::Xavier(), {mx::cpu()});
  const auto shapes = saved_shapes(*net, mx::cpu());
  BOOST_TEST(shapes.at("features.4.0.body.0.weight") == mx::Shape({64, 64, 1, 1}));
  BOOST_TEST(shapes.at("features.4.0.body.0.bias") == mx::Shape({64}));
  BOOST_TEST(shapes.at("features.4.0.body.6.bias") == mx::Shape({256}));
  BOOST_TEST(shapes.at("features.4.0.downsample.0.weight") == mx::Shape({256, 64, 1, 1}));
  BOOST_TEST(shapes.at("features.6.5.body.3.weight") == mx::Shape({256, 256, 3, 3}));
  BOOST_TEST(shapes.at("output.weight") == mx::Shape({1000, 2048}));
  // torchvision's resnet50 (25,557,032) plus the biases of each bottleneck's two 1x1 convolutions:
  // 3 (64 + 256) + 4 (128 + 512) + 6 (256 + 1024) + 3 (512 + 2048) = 18,880.
  BOOST_TEST(trainable(*net) == 25557032 + 18880);
}

BOOST_AUTO_TEST_CASE(resnet_v2_names) {
  auto net = vision::get_model("resnet18_v2");
  net->initialize(mx::init::Xavier(), {mx::cpu()});
  const auto shapes = saved_shapes(*net, mx::cpu());
  const std::map<std::string, mx::Shape> want{
      {"features.0.gamma", {3}},        {"features.1.weight", {64, 3, 7, 7}},     {"features.5.0.bn1.gamma", {64}},
      {"features.5.0.conv1.weight", {64, 64, 3, 3}}, {"features.6.0.bn1.running_mean", {64}},
      {"features.6.0.downsample.weight", {128, 64, 1, 1}}, {"features.9.gamma", {512}}, {"output.weight", {1000, 512}}};
  for (const auto& [name, shape] : want) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST_REQUIRE(shapes.count(name) == 1u);
      BOOST_TEST(shapes.at(name) == shape);
    }
  }
  // The first BatchNorm neither scales nor shifts: its gamma and beta are not trained.
  BOOST_TEST(net->collect_params()[net->collect_params().keys()[0]].grad_req() == "null");
}

BOOST_AUTO_TEST_CASE(alexnet_and_vgg_have_mxnet_names_and_torchvision_sizes) {
  auto alexnet = vision::get_model("alexnet");
  alexnet->initialize(mx::init::Xavier(), {mx::cpu()});
  auto shapes = saved_shapes(*alexnet, mx::cpu(), 224);
  BOOST_TEST(shapes.at("features.0.weight") == mx::Shape({64, 3, 11, 11}));
  BOOST_TEST(shapes.at("features.2.weight") == mx::Shape({192, 64, 5, 5}));
  BOOST_TEST(shapes.at("features.9.weight") == mx::Shape({4096, 9216}));
  BOOST_TEST(shapes.at("features.11.weight") == mx::Shape({4096, 4096}));
  BOOST_TEST(shapes.at("output.weight") == mx::Shape({1000, 4096}));
  BOOST_TEST(trainable(*alexnet) == 61100840);  // torchvision's alexnet
  auto vgg11 = vision::get_model("vgg11", {.classes = 10});
  vgg11->initialize(mx::init::Xavier(), {mx::cpu()});
  shapes = saved_shapes(*vgg11, mx::cpu(), 32);  // 32x32 pools to 1x1: the first Dense takes 512
  BOOST_TEST(shapes.at("features.0.weight") == mx::Shape({64, 3, 3, 3}));
  BOOST_TEST(shapes.at("features.18.weight") == mx::Shape({512, 512, 3, 3}));
  BOOST_TEST(shapes.at("features.21.weight") == mx::Shape({4096, 512}));
  BOOST_TEST(shapes.at("output.weight") == mx::Shape({10, 4096}));
  // torchvision's vgg11 (224x224, 1000 classes) less the first Dense's inputs 25088 - 512 and
  // the 990 classes' weights and biases.
  BOOST_TEST(trainable(*vgg11) == 132863336 - 4096 * (25088 - 512) - 990 * 4097);
  // vgg16_bn: a BatchNorm after each of the 13 convolutions, so the first Dense is features.44.
  std::vector<std::string> names;
  for (const auto& [name, param] : vision::get_model("vgg16_bn")->structural_params()) names.push_back(name);
  for (const std::string name : {"features.0.weight", "features.1.gamma", "features.1.running_var", "features.3.weight",
                                 "features.44.weight", "features.46.bias", "output.weight"}) {
    BOOST_TEST(std::count(names.begin(), names.end(), name) == 1, name << " among vgg16_bn's names");
  }
}

BOOST_AUTO_TEST_CASE(mobilenets_have_mxnet_names_and_keras_sizes) {
  auto v1 = vision::get_model("mobilenet1.0");
  v1->initialize(mx::init::Xavier(), {mx::cpu()});
  auto shapes = saved_shapes(*v1, mx::cpu());
  BOOST_TEST(shapes.at("features.0.weight") == mx::Shape({32, 3, 3, 3}));
  BOOST_TEST(shapes.at("features.3.weight") == mx::Shape({32, 1, 3, 3}));  // the first depthwise convolution
  BOOST_TEST(shapes.at("features.6.weight") == mx::Shape({64, 32, 1, 1}));
  BOOST_TEST(shapes.at("output.weight") == mx::Shape({1000, 1024}));
  BOOST_TEST(shapes.count("features.0.bias") == 0u);
  BOOST_TEST(trainable(*v1) == 4231976);  // Keras's MobileNet 1.0: the same layers
  auto v2 = vision::get_model("mobilenetv2_1.0");
  v2->initialize(mx::init::Xavier(), {mx::cpu()});
  shapes = saved_shapes(*v2, mx::cpu());
  BOOST_TEST(shapes.at("features.3.out.0.weight") == mx::Shape({32, 32, 1, 1}));
  BOOST_TEST(shapes.at("features.3.out.3.weight") == mx::Shape({32, 1, 3, 3}));
  BOOST_TEST(shapes.at("features.3.out.6.weight") == mx::Shape({16, 32, 1, 1}));
  BOOST_TEST(shapes.at("features.4.out.0.weight") == mx::Shape({96, 16, 1, 1}));
  BOOST_TEST(shapes.at("features.20.weight") == mx::Shape({1280, 320, 1, 1}));
  BOOST_TEST(shapes.at("output.0.weight") == mx::Shape({1000, 1280, 1, 1}));
  // Keras's MobileNetV2 1.0 (3,504,872) less its classifier's 1000 biases (MXNet's is a 1x1
  // convolution without bias), plus the first block's expansion (a 32x32 convolution and its
  // BatchNorm, 1024 + 64) that Keras leaves out where the expansion is 1.
  BOOST_TEST(trainable(*v2) == 3504872 - 1000 + 1088);
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const std::string name : {"mobilenet0.25", "mobilenetv2_0.25"}) {
      auto net = vision::get_model(name, {.classes = 10});
      net->initialize(mx::init::Xavier(), {ctx});
      BOOST_TEST((*net)(ndg_test::random_array({2, 3, 32, 32}, ctx, 13)).shape() == mx::Shape({2, 10}), name);
    }
  });
}

BOOST_AUTO_TEST_CASE(forward_shapes_and_pretrained_files) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const std::string name : {"resnet18_v1", "resnet18_v2"}) {
      BOOST_TEST_CONTEXT(name) {
        auto net = vision::get_model(name, {.classes = 10, .thumbnail = true});
        net->initialize(mx::init::Xavier(), {ctx});
        const nd::NDArray x = ndg_test::random_array({2, 3, 32, 32}, ctx, 11);
        const nd::NDArray y = (*net)(x);
        BOOST_TEST(y.shape() == mx::Shape({2, 10}));
        // Its file, loaded as a pretrained model, predicts the same.
        const ndg_test::TempDir dir;
        net->save_parameters(dir.file("net.params"));
        auto loaded = vision::get_model(name, {.classes = 10, .thumbnail = true, .pretrained = dir.file("net.params"),
                                               .ctx = {ctx}});
        check_close((*loaded)(x), ndg_test::values(y), 1e-5, 1e-6);
        // A file of another model: the parameter that differs is named with both shapes.
        auto other = vision::get_model(name, {.classes = 7, .thumbnail = true});
        NDG_CHECK_THROWS_WITH(other->load_parameters(dir.file("net.params"), ctx), mx::Error, "output.weight", "(10, 512)",
                              "(7, 512)");
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(unknown_models_and_options_are_value_errors) {
  NDG_CHECK_THROWS_WITH(vision::get_model("resnet19_v1"), mx::ValueError, "unknown model 'resnet19_v1'", "resnet18_v1",
                        "resnet152_v2");
  NDG_CHECK_THROWS_WITH(vision::ResNet(3, 18), mx::ValueError, "version 3");
  NDG_CHECK_THROWS_WITH(vision::get_model("resnet18_v1", {.classes = 0}), mx::ValueError, "classes");
  NDG_CHECK_THROWS_WITH(vision::get_model("resnet18_v1", {.pretrained = "/nonexistent/r.params"}), mx::FileError,
                        "/nonexistent/r.params");
  NDG_CHECK_THROWS_WITH(vision::VGG(12), mx::ValueError, "12 layers", "11, 13, 16 and 19");
  NDG_CHECK_THROWS_WITH(vision::MobileNet(0), mx::ValueError, "MobileNet", "multiplier");
  BOOST_TEST(vision::model_names().size() == 27u);
}

BOOST_AUTO_TEST_SUITE_END()
