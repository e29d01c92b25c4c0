// model_zoo::vision: structural parameter names and shapes as MXNet 1.9's (the keys of its
// model-zoo files), full parameter names as MXNet 1.x's name scopes give them (the keys of its
// older files, written here byte by byte and loaded), trainable sizes against independent counts
// (torchvision's and Keras's models of the same layers), forward shapes, pretrained files loading
// (and refused with typed errors), get_model's errors. On every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

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

// Each parameter's full name less the model's prefix ("stage1_conv0_weight", the key of MXNet's
// older files) -> its structural name.
std::map<std::string, std::string> legacy_names(const mx::gluon::Block& net) {
  std::map<std::string, std::string> names;
  for (const auto& [key, param] : net.structural_params()) {
    BOOST_TEST_REQUIRE(param.name().starts_with(net.prefix()), param.name() << " under " << net.prefix());
    names[param.name().substr(net.prefix().size())] = key;
  }
  return names;
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

// The shape cases need no random values (zeros are cheaper to draw: 190M parameters here).
BOOST_AUTO_TEST_CASE(alexnet_and_vgg_have_mxnet_names_and_torchvision_sizes) {
  auto alexnet = vision::get_model("alexnet");
  alexnet->initialize(mx::init::Zero(), {mx::cpu()});
  auto shapes = saved_shapes(*alexnet, mx::cpu(), 224);
  BOOST_TEST(shapes.at("features.0.weight") == mx::Shape({64, 3, 11, 11}));
  BOOST_TEST(shapes.at("features.2.weight") == mx::Shape({192, 64, 5, 5}));
  BOOST_TEST(shapes.at("features.9.weight") == mx::Shape({4096, 9216}));
  BOOST_TEST(shapes.at("features.11.weight") == mx::Shape({4096, 4096}));
  BOOST_TEST(shapes.at("output.weight") == mx::Shape({1000, 4096}));
  BOOST_TEST(trainable(*alexnet) == 61100840);  // torchvision's alexnet
  auto vgg11 = vision::get_model("vgg11", {.classes = 10});
  vgg11->initialize(mx::init::Zero(), {mx::cpu()});
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
  v1->initialize(mx::init::Zero(), {mx::cpu()});
  auto shapes = saved_shapes(*v1, mx::cpu());
  BOOST_TEST(shapes.at("features.0.weight") == mx::Shape({32, 3, 3, 3}));
  BOOST_TEST(shapes.at("features.3.weight") == mx::Shape({32, 1, 3, 3}));  // the first depthwise convolution
  BOOST_TEST(shapes.at("features.6.weight") == mx::Shape({64, 32, 1, 1}));
  BOOST_TEST(shapes.at("output.weight") == mx::Shape({1000, 1024}));
  BOOST_TEST(shapes.count("features.0.bias") == 0u);
  BOOST_TEST(trainable(*v1) == 4231976);  // Keras's MobileNet 1.0: the same layers
  auto v2 = vision::get_model("mobilenetv2_1.0");
  v2->initialize(mx::init::Zero(), {mx::cpu()});
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
  NDG_CHECK_THROWS_WITH(vision::DenseNet(122), mx::ValueError, "122 layers", "121, 161, 169 and 201");
  NDG_CHECK_THROWS_WITH(vision::SqueezeNet("1.2"), mx::ValueError, "'1.2'", "'1.0' and '1.1'");
  NDG_CHECK_THROWS_WITH(vision::get_model("inceptionv3", {.classes = -1}), mx::ValueError, "Inception3", "classes");
  BOOST_TEST(vision::model_names().size() == 34u);
}

// MXNet 1.x names a block constructed inside another's name_scope() after it: the parent's
// prefix, the kind and the parent's own counter, or the parent's prefix and an explicit prefix.
BOOST_AUTO_TEST_CASE(name_scopes_name_blocks_as_mxnet_1x) {
  namespace nn = mx::gluon::nn;
  nn::Sequential outer;
  {
    const auto scope = outer.name_scope();
    nn::Dense a(2);
    nn::Dense b(3);
    nn::Sequential stage("stage1_");
    {
      const auto inner = stage.name_scope();
      nn::Dense c(4);
      BOOST_TEST(c.prefix() == outer.prefix() + "stage1_dense0_");
      BOOST_TEST(c.weight().name() == outer.prefix() + "stage1_dense0_weight");
    }
    nn::Dense d(5);
    BOOST_TEST(a.prefix() == outer.prefix() + "dense0_");
    BOOST_TEST(b.prefix() == outer.prefix() + "dense1_");
    BOOST_TEST(d.prefix() == outer.prefix() + "dense2_");
    BOOST_TEST(nn::Conv2D(1, 1).prefix() == outer.prefix() + "conv0_");  // each kind counts alone
  }
  const nn::Dense e(1);  // the guard is gone: a name of its own
  BOOST_TEST(!e.prefix().starts_with(outer.prefix()));
  const auto again = outer.name_scope();  // the scope's counters go on
  BOOST_TEST(nn::Dense(1).prefix() == outer.prefix() + "dense3_");
}

// Every model's full parameter names, less its prefix, as MXNet 1.9 names them (its older model-zoo
// files' keys): derived by hand from MXNet's model definitions, in the order it builds them.
BOOST_AUTO_TEST_CASE(models_have_mxnet_1x_parameter_names) {
  const std::map<std::string, std::map<std::string, std::string>> want{
      {"alexnet",
       {{"conv0_weight", "features.0.weight"}, {"conv4_bias", "features.6.bias"}, {"dense0_weight", "features.9.weight"},
        {"dense1_bias", "features.11.bias"}, {"dense2_weight", "output.weight"}}},
      {"vgg11",
       {{"conv7_weight", "features.18.weight"}, {"dense0_weight", "features.21.weight"},
        {"dense1_weight", "features.23.weight"}, {"dense2_bias", "output.bias"}}},
      {"resnet18_v1",
       {{"conv0_weight", "features.0.weight"}, {"batchnorm0_gamma", "features.1.gamma"},
        {"stage1_conv0_weight", "features.4.0.body.0.weight"},
        {"stage1_batchnorm3_running_var", "features.4.1.body.4.running_var"},
        {"stage2_conv2_weight", "features.5.0.downsample.0.weight"},
        {"stage2_batchnorm2_beta", "features.5.0.downsample.1.beta"}, {"stage2_conv3_weight", "features.5.1.body.0.weight"},
        {"dense0_weight", "output.weight"}}},
      {"resnet50_v2",
       {{"batchnorm0_gamma", "features.0.gamma"}, {"conv0_weight", "features.1.weight"},
        {"batchnorm1_gamma", "features.2.gamma"}, {"stage1_batchnorm0_gamma", "features.5.0.bn1.gamma"},
        {"stage1_conv0_weight", "features.5.0.conv1.weight"}, {"stage1_conv3_weight", "features.5.0.downsample.weight"},
        {"stage1_conv4_weight", "features.5.1.conv1.weight"}, {"batchnorm2_gamma", "features.9.gamma"},
        {"dense0_bias", "output.bias"}}},
      {"mobilenet1.0",
       {{"conv0_weight", "features.0.weight"}, {"batchnorm0_gamma", "features.1.gamma"}, {"conv1_weight", "features.3.weight"},
        {"conv26_weight", "features.78.weight"}, {"dense0_weight", "output.weight"}}},
      {"mobilenetv2_1.0",
       {{"features_conv0_weight", "features.0.weight"},
        {"features_linearbottleneck0_conv0_weight", "features.3.out.0.weight"},
        {"features_linearbottleneck16_batchnorm2_gamma", "features.19.out.7.gamma"},
        {"features_conv1_weight", "features.20.weight"}, {"output_pred_weight", "output.0.weight"}}},
      {"densenet121",
       {{"conv0_weight", "features.0.weight"}, {"batchnorm0_gamma", "features.1.gamma"},
        {"stage1_batchnorm0_gamma", "features.4.0.1.0.gamma"}, {"stage1_conv1_weight", "features.4.0.1.5.weight"},
        {"stage1_conv2_weight", "features.4.1.1.2.weight"}, {"batchnorm1_gamma", "features.5.0.gamma"},
        {"conv1_weight", "features.5.2.weight"}, {"conv3_weight", "features.9.2.weight"},
        {"stage4_conv31_weight", "features.10.15.1.5.weight"}, {"batchnorm4_beta", "features.11.beta"},
        {"dense0_weight", "output.weight"}}},
      {"squeezenet1.0",
       {{"conv0_weight", "features.0.weight"}, {"conv1_weight", "features.3.0.0.weight"},
        {"conv2_weight", "features.3.1.0.0.weight"}, {"conv3_bias", "features.3.1.1.0.bias"},
        {"conv24_weight", "features.12.1.1.0.weight"}, {"conv25_weight", "output.0.weight"}}},
      {"inceptionv3",
       {{"conv0_weight", "features.0.0.weight"}, {"batchnorm0_gamma", "features.0.1.gamma"},
        {"conv4_weight", "features.5.0.weight"}, {"A1_conv0_weight", "features.7.0.0.0.weight"},
        {"A1_conv6_weight", "features.7.3.1.0.weight"}, {"A1_batchnorm6_running_mean", "features.7.3.1.1.running_mean"},
        {"B_conv3_weight", "features.10.1.2.0.weight"}, {"C4_conv9_weight", "features.14.3.1.0.weight"},
        {"D_conv5_weight", "features.15.1.3.0.weight"}, {"E1_conv3_weight", "features.16.1.1.1.0.0.weight"},
        {"E2_conv8_weight", "features.17.3.1.0.weight"}, {"dense0_weight", "output.weight"}}}};
  for (const auto& [model, names] : want) {
    BOOST_TEST_CONTEXT(model) {
      const auto net = vision::get_model(model);
      const auto have = legacy_names(*net);
      for (const auto& [legacy, structural] : names) {
        BOOST_TEST_CONTEXT(legacy) {
          BOOST_TEST_REQUIRE(have.count(legacy) == 1u);
          BOOST_TEST(have.at(legacy) == structural);
        }
      }
    }
  }
  // MXNet's model prefixes: the class name, lower case, and a counter.
  BOOST_TEST(vision::get_model("resnet18_v1")->prefix().starts_with("resnetv1"));
  BOOST_TEST(vision::get_model("inceptionv3")->prefix().starts_with("inception3"));
}

BOOST_AUTO_TEST_CASE(densenet_squeezenet_and_inception_have_torchvision_sizes,
                     *boost::unit_test::precondition(ndg_test::not_sanitized{})) {
  // torchvision's models of the same layers (inception_v3 less its auxiliary classifier, 3,326,696).
  const std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> models{
      {"squeezenet1.0", 224, 1248424}, {"squeezenet1.1", 224, 1235496}, {"densenet121", 224, 7978856},
      {"inceptionv3", 299, 27161264 - 3326696}};
  for (const auto& [name, size, parameters] : models) {
    BOOST_TEST_CONTEXT(name) {
      auto net = vision::get_model(name);
      net->initialize(mx::init::Xavier(), {mx::cpu()});
      BOOST_TEST((*net)(nd::ones({1, 3, size, size})).shape() == mx::Shape({1, 1000}));
      BOOST_TEST(trainable(*net) == parameters);
    }
  }
}

// squeezenet1.1's file as MXNet 1.x's model store keeps it: every parameter under its full name
// less the model's prefix (conv0_ ... conv25_, MXNet's order of construction), loaded through
// MXNet's legacy path into the structural places derived here by hand; and hybridized, the model
// (Concurrent branches included) predicts as it does eagerly.
BOOST_AUTO_TEST_CASE(mxnet_legacy_files_load_by_parameter_name) {
  auto reference = vision::get_model("squeezenet1.1", {.classes = 10});
  reference->initialize(mx::init::Xavier(), {mx::cpu()});
  (*reference)(nd::zeros({1, 3, 224, 224}));  // completes the shapes
  std::map<std::string, mx::Shape> shapes;
  for (const auto& [key, param] : reference->structural_params()) shapes[key] = param.shape();
  // The structural place of convolution k: the stem, then each fire's squeeze, 1x1 and 3x3 paths.
  std::vector<std::string> places{"features.0."};
  for (int fire : {3, 4, 6, 7, 9, 10, 11, 12}) {
    const std::string f = "features." + std::to_string(fire) + ".";
    for (const std::string path : {"0.0.", "1.0.0.", "1.1.0."}) places.push_back(f + path);
  }
  places.push_back("output.0.");
  BOOST_TEST_REQUIRE(places.size() == 26u);
  std::vector<ndg_test::MXNetRecord> records;
  for (std::size_t k = 0; k < places.size(); ++k) {
    for (const std::string kind : {"weight", "bias"}) {
      const mx::Shape shape = shapes.at(places[k] + kind);
      const float value = static_cast<float>(k) + (kind == "weight" ? 0.25f : 0.5f);
      records.push_back({"conv" + std::to_string(k) + "_" + kind, std::vector<std::int64_t>(shape.begin(), shape.end()),
                         std::vector<float>(static_cast<std::size_t>(shape.numel()), value)});
    }
  }
  const ndg_test::TempDir dir;
  ndg_test::write_bytes(dir.file("squeezenet1.1.params"), ndg_test::mxnet_ndarray_file(records));
  records.pop_back();  // the output's bias missing
  ndg_test::write_bytes(dir.file("short.params"), ndg_test::mxnet_ndarray_file(records));
  ndg_test::for_each_context([&](mx::Context ctx) {
    auto net = vision::get_model("squeezenet1.1", {.classes = 10, .pretrained = dir.file("squeezenet1.1.params"), .ctx = {ctx}});
    std::map<std::string, mx::gluon::Parameter> loaded;
    for (const auto& [key, param] : net->structural_params()) loaded.emplace(key, param);
    for (std::size_t k = 0; k < places.size(); ++k) {
      for (const std::string kind : {"weight", "bias"}) {
        const float want = static_cast<float>(k) + (kind == "weight" ? 0.25f : 0.5f);
        const std::vector<float> values = loaded.at(places[k] + kind).data(ctx).asvector<float>();
        BOOST_TEST(std::all_of(values.begin(), values.end(), [&](float v) { return v == want; }), places[k] + kind);
      }
    }
    // Random weights (the constants overflow): hybridized, it predicts as it does eagerly.
    net->initialize(mx::init::Xavier(), {ctx}, true);
    const nd::NDArray x = ndg_test::random_array({2, 3, 224, 224}, ctx, 17);
    const nd::NDArray eager = (*net)(x);
    BOOST_TEST(eager.shape() == mx::Shape({2, 10}));
    net->hybridize();
    check_close((*net)(x), ndg_test::values(eager), 1e-4, 1e-5);
    auto other = vision::get_model("squeezenet1.1", {.classes = 10});
    NDG_CHECK_THROWS_WITH(other->load_parameters(dir.file("short.params"), ctx), mx::Error, "conv25_bias");
  });
}

// An input a model cannot take is a typed error naming the op, the layer it reached and the shapes.
BOOST_AUTO_TEST_CASE(bad_inputs_name_the_layer_and_the_shapes) {
  ndg_test::for_each_context([](mx::Context ctx) {
    auto resnet = vision::get_model("resnet18_v1", {.classes = 10, .thumbnail = true});
    resnet->initialize(mx::init::Xavier(), {ctx});
    (*resnet)(nd::ones({2, 3, 32, 32}, ctx));
    auto& first = dynamic_cast<mx::gluon::nn::Sequential&>(resnet->child(0))[0];
    NDG_CHECK_THROWS_WITH((*resnet)(nd::ones({2, 1, 32, 32}, ctx)), mx::ShapeError, "Conv2D '" + first.name() + "'",
                          "(2, 1, 32, 32)", "(64, 3, 3, 3)");
    // DenseNet pools its last 7x7 map: a 32x32 image leaves 1x1.
    auto densenet = vision::get_model("densenet121", {.classes = 10});
    densenet->initialize(mx::init::Xavier(), {ctx});
    NDG_CHECK_THROWS_WITH((*densenet)(nd::ones({1, 3, 32, 32}, ctx)), mx::ShapeError, "AvgPool2D '" + densenet->prefix(),
                          "Pooling", "(7, 7)", "(1, 1024, 1, 1)");
    // The models still predict from a good input.
    BOOST_TEST((*resnet)(nd::ones({2, 3, 32, 32}, ctx)).shape() == mx::Shape({2, 10}));
  });
}

namespace {

// One training step's outputs and gradients of `net` on x (loss: the sum of the outputs times r).
struct Pass {
  std::vector<double> y;
  std::map<std::string, std::vector<double>> grads;
};

Pass forward_backward(mx::gluon::Block& net, const nd::NDArray& x, const nd::NDArray& r) {
  Pass pass;
  nd::NDArray y;
  mx::random::seed(5);  // the same Dropout masks in every pass
  {
    auto scope = mx::autograd::record();
    y = net(x);
    (y * r).sum().backward();
  }
  pass.y = ndg_test::values(y);
  for (const auto& [key, param] : net.structural_params()) {
    if (param.grad_req() != "null") pass.grads[key] = ndg_test::values(param.grad(x.context()));
  }
  return pass;
}

// model at size x size, batch 2 (1 from `size` 224 on), 10 classes, on every context: a training
// step eagerly and hybridized gives the same outputs and gradients; the export imported as a
// SymbolBlock predicts the hybridized model's outputs bit for bit.
void check_model(const std::string& model, std::int64_t size, bool thumbnail = false) {
  ndg_test::for_each_context([&](mx::Context ctx) {
    BOOST_TEST_CONTEXT(model << " at " << size << "x" << size) {
      const std::int64_t batch = size >= 224 ? 1 : 2;
      auto net = vision::get_model(model, {.classes = 10, .thumbnail = thumbnail});
      net->initialize(mx::init::Xavier(), {ctx});
      const nd::NDArray x = ndg_test::random_array({batch, 3, size, size}, ctx, 21);
      const nd::NDArray r = ndg_test::random_array({batch, 10}, ctx, 22);
      (*net)(x);  // completes the deferred initialisation, which draws from the generator too
      const Pass eager = forward_backward(*net, x, r);
      net->hybridize();
      const Pass hybrid = forward_backward(*net, x, r);
      // One relative L2 distance per array (a check per element of 25 million would take longer
      // than the passes).
      const double tol = ctx.is_gpu() ? 1e-3 : 1e-5;
      BOOST_TEST(ndg_test::relative_error(hybrid.y, eager.y) < tol);
      BOOST_TEST(hybrid.grads.size() == eager.grads.size());
      // A gradient that is zero in exact arithmetic (a convolution's bias before BatchNorm, which
      // removes the mean) is rounding noise in both passes, and GPUs sum in another order when
      // hybridized: each array's error is relative to its own norm or, if larger, to a floor of
      // 1e-3 of the largest root-mean-square gradient of the model per element.
      double largest_rms = 0;
      for (const auto& [key, grad] : eager.grads) {
        double squares = 0;
        for (double g : grad) squares += g * g;
        if (!grad.empty()) largest_rms = std::max(largest_rms, std::sqrt(squares / static_cast<double>(grad.size())));
      }
      for (const auto& [key, grad] : eager.grads) {
        const std::vector<double>& got = hybrid.grads.at(key);
        double diff = 0, norm = 0;
        for (std::size_t i = 0; i < grad.size() && i < got.size(); ++i) {
          diff += (got[i] - grad[i]) * (got[i] - grad[i]);
          norm += grad[i] * grad[i];
        }
        const double floor = 1e-3 * largest_rms * std::sqrt(static_cast<double>(grad.size()));
        BOOST_TEST(got.size() == grad.size(), key);
        BOOST_TEST(std::sqrt(diff) < tol * std::max(std::sqrt(norm), floor), key << ": |hybridized - eager| = " << std::sqrt(diff)
                                                                                 << ", |eager| = " << std::sqrt(norm));
      }
      const ndg_test::TempDir dir;
      const nd::NDArray predicted = (*net)(x);
      net->export_model(dir.file("net"));
      auto imported = mx::gluon::nn::SymbolBlock::imports(dir.file("net-symbol.json"), {"data"},
                                                          dir.file("net-0000.params"), ctx);
      BOOST_TEST(ndg_test::values(imported(x)) == ndg_test::values(predicted), boost::test_tools::per_element());
    }
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE(resnets_train_hybridized_as_eagerly_and_export) { check_model("resnet18_v1", 32, true); }

BOOST_AUTO_TEST_CASE(alexnet_and_mobilenets_train_hybridized_as_eagerly_and_export) {
  check_model("alexnet", 67);  // the smallest image its three pools leave a pixel of
  check_model("mobilenet0.25", 32);
  check_model("mobilenetv2_0.25", 32);
}

// ResNet-50 v2's bottlenecks and VGG-11's BatchNorm stack: the layers and ops of the models above at
// several times their arithmetic (a minute under AddressSanitizer), run in the unsanitized builds.
BOOST_AUTO_TEST_CASE(resnet50_v2_and_vgg11_bn_train_hybridized_as_eagerly_and_export,
                     *boost::unit_test::precondition(ndg_test::not_sanitized{})) {
  check_model("resnet50_v2", 32, true);
  check_model("vgg11_bn", 32);
}

BOOST_AUTO_TEST_CASE(squeezenet_trains_hybridized_as_eagerly_and_exports) { check_model("squeezenet1.1", 224); }

// DenseNet pools a 7x7 map (224x224 images) and Inception an 8x8 one (299x299): full-size
// arithmetic, which their layers (Concurrent, Identity, BatchNorm, pools, 1x7 convolutions) share
// with the models above; DenseNet runs here in the unsanitized builds, Inception's forward pass in
// the sizes case.
BOOST_AUTO_TEST_CASE(densenet_trains_hybridized_as_eagerly_and_exports,
                     *boost::unit_test::precondition(ndg_test::not_sanitized{})) {
  check_model("densenet121", 224);
}

BOOST_AUTO_TEST_SUITE_END()
