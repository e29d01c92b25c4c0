#include "gluon/model_zoo/vision/inception.hpp"

#include <string>
#include <vector>

#include "gluon/model_zoo/vision/checks.hpp"
#include "gluon/nn/activation.hpp"
#include "gluon/nn/batch_norm.hpp"
#include "gluon/nn/containers.hpp"
#include "gluon/nn/conv.hpp"
#include "gluon/nn/dropout.hpp"

namespace mx::gluon::model_zoo::vision {
namespace {

// One convolution of a branch: channels, kernel, strides, padding (MXNet's setting tuples).
struct ConvSetting {
  std::int64_t channels;
  nn::Extents kernel;
  std::int64_t strides = 1;
  nn::Extents padding = 0;
};

nn::Sequential basic_conv(const ConvSetting& c) {
  nn::Sequential out;
  out.add(nn::Conv2D(c.channels, c.kernel, {.strides = c.strides, .padding = c.padding, .use_bias = false}),
          nn::BatchNorm({.epsilon = 0.001}), nn::Activation("relu"));
  return out;
}

enum class Pool { none, avg, max };

// A pool (avg 3/1 pad 1 or max 3/2), then a basic conv per setting, built in order.
nn::Sequential branch(Pool pool, const std::vector<ConvSetting>& convs = {}) {
  nn::Sequential out;
  if (pool == Pool::avg) out.add(nn::AvgPool2D(3, {.strides = 1, .padding = 1}));
  if (pool == Pool::max) out.add(nn::MaxPool2D(3, {.strides = 2}));
  for (const ConvSetting& c : convs) out.add(basic_conv(c));
  return out;
}

// A Concurrent named `prefix` whose branches are named in its scope, as MXNet's _make_A ... _make_E;
// add(out) builds them there.
template <class AddBranches>
nn::Concurrent mixed(const std::string& prefix, AddBranches add) {
  nn::Concurrent out(1, prefix);
  const auto scope = out.name_scope();
  add(out);
  return out;
}

nn::Concurrent make_a(std::int64_t pool_features, const std::string& prefix) {
  return mixed(prefix, [&](nn::Concurrent& out) {
    out.add(branch(Pool::none, {{64, 1}}));
    out.add(branch(Pool::none, {{48, 1}, {64, 5, 1, 2}}));
    out.add(branch(Pool::none, {{64, 1}, {96, 3, 1, 1}, {96, 3, 1, 1}}));
    out.add(branch(Pool::avg, {{pool_features, 1}}));
  });
}

nn::Concurrent make_b(const std::string& prefix) {
  return mixed(prefix, [](nn::Concurrent& out) {
    out.add(branch(Pool::none, {{384, 3, 2}}));
    out.add(branch(Pool::none, {{64, 1}, {96, 3, 1, 1}, {96, 3, 2}}));
    out.add(branch(Pool::max));
  });
}

nn::Concurrent make_c(std::int64_t c7, const std::string& prefix) {
  return mixed(prefix, [&](nn::Concurrent& out) {
    out.add(branch(Pool::none, {{192, 1}}));
    out.add(branch(Pool::none, {{c7, 1}, {c7, {1, 7}, 1, {0, 3}}, {192, {7, 1}, 1, {3, 0}}}));
    out.add(branch(Pool::none, {{c7, 1},
                                {c7, {7, 1}, 1, {3, 0}},
                                {c7, {1, 7}, 1, {0, 3}},
                                {c7, {7, 1}, 1, {3, 0}},
                                {192, {1, 7}, 1, {0, 3}}}));
    out.add(branch(Pool::avg, {{192, 1}}));
  });
}

nn::Concurrent make_d(const std::string& prefix) {
  return mixed(prefix, [](nn::Concurrent& out) {
    out.add(branch(Pool::none, {{192, 1}, {320, 3, 2}}));
    out.add(branch(Pool::none, {{192, 1}, {192, {1, 7}, 1, {0, 3}}, {192, {7, 1}, 1, {3, 0}}, {192, 3, 2}}));
    out.add(branch(Pool::max));
  });
}

// A 1x3 and a 3x1 convolution side by side.
nn::Concurrent split(std::int64_t channels) {
  nn::Concurrent out(1);
  out.add(branch(Pool::none, {{channels, {1, 3}, 1, {0, 1}}}));
  out.add(branch(Pool::none, {{channels, {3, 1}, 1, {1, 0}}}));
  return out;
}

nn::Concurrent make_e(const std::string& prefix) {
  return mixed(prefix, [](nn::Concurrent& out) {
    out.add(branch(Pool::none, {{320, 1}}));
    nn::Sequential b3x3;
    b3x3.add(branch(Pool::none, {{384, 1}}));
    b3x3.add(split(384));
    out.add(b3x3);
    nn::Sequential b3x3dbl;
    b3x3dbl.add(branch(Pool::none, {{448, 1}, {384, 3, 1, 1}}));
    b3x3dbl.add(split(384));
    out.add(b3x3dbl);
    out.add(branch(Pool::avg, {{192, 1}}));
  });
}

}  // namespace

// Built in MXNet's order inside the model's name scope: inception30_conv0_ ... conv4_ for the
// stem, inception30_A1_conv0_ ... in the mixed blocks, the output inception30_dense0_.
Inception3::Inception3(std::int64_t classes)
    : Block("inception3"),
      features_(in_name_scope([&] {
        detail::checked_classes("Inception3", classes);
        nn::Sequential f;
        f.add(basic_conv({32, 3, 2}));
        f.add(basic_conv({32, 3}));
        f.add(basic_conv({64, 3, 1, 1}));
        f.add(nn::MaxPool2D(3, {.strides = 2}));
        f.add(basic_conv({80, 1}));
        f.add(basic_conv({192, 3}));
        f.add(nn::MaxPool2D(3, {.strides = 2}));
        f.add(make_a(32, "A1_")).add(make_a(64, "A2_")).add(make_a(64, "A3_"));
        f.add(make_b("B_"));
        f.add(make_c(128, "C1_")).add(make_c(160, "C2_")).add(make_c(160, "C3_")).add(make_c(192, "C4_"));
        f.add(make_d("D_"));
        f.add(make_e("E1_")).add(make_e("E2_"));
        f.add(nn::AvgPool2D(8), nn::Dropout(0.5));
        return f;
      })),
      output_(in_name_scope([&] { return nn::Dense(classes); })) {
  register_child(features_, "features");
  register_child(output_, "output");
}

}  // namespace mx::gluon::model_zoo::vision
