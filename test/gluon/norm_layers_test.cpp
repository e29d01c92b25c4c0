// nn::LayerNorm, nn::GroupNorm and nn::InstanceNorm (gluon/nn/norm_layers.hpp): MXNet's parameter
// names, deferred shapes and defaults (InstanceNorm's gamma fixed), values against the ops, a
// Transformer-style residual block hybridized equal to eager and exported to MXNet's symbol JSON
// and imported back, gradients of the trained parameters, and the typed errors. Every case runs on
// every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <string>
#include <vector>

#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
using ndg_test::check_close;
using ndg_test::random_array;

namespace {

// x + LayerNorm(Dense(x)): the add-and-norm of a Transformer block, with GroupNorm and
// InstanceNorm over a reshaped copy.
class AddNorm : public mx::gluon::Block {
 public:
  AddNorm()
      : Block("addnorm"), dense_(register_child(nn::Dense(8, "", true, 8), "dense")),
        ln_(register_child(nn::LayerNorm(), "ln")), gn_(register_child(nn::GroupNorm({.num_groups = 2}), "gn")),
        in_(register_child(nn::InstanceNorm({.scale = true}), "in")) {}
  nd::NDArray forward(const nd::NDArray& x) override {  // x (N, T, 8)
    const nd::NDArray y = ln_(x + dense_(x.reshape({-1, 8})).reshape(x.shape()));
    const nd::NDArray grouped = gn_(y.reshape({x.shape()[0], 4, -1}));   // (N, 4, 2T)
    return in_(grouped.reshape({x.shape()[0], 2, -1})).reshape(x.shape());  // (N, 2, 4T)
  }
  mx::gluon::Parameter layer_norm_gamma() const { return ln_.gamma(); }

 private:
  nn::Dense dense_;
  nn::LayerNorm ln_;
  nn::GroupNorm gn_;
  nn::InstanceNorm in_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(norm_layers)

BOOST_AUTO_TEST_CASE(parameters_have_mxnets_names_defaults_and_deferred_shapes) {
  nn::LayerNorm ln;
  nn::GroupNorm gn({.num_groups = 4});
  nn::InstanceNorm in;
  BOOST_TEST(ln.gamma().name() == "layernorm0_gamma");
  BOOST_TEST(ln.beta().name() == "layernorm0_beta");
  BOOST_TEST(gn.gamma().name() == "groupnorm0_gamma");
  BOOST_TEST(in.beta().name() == "instancenorm0_beta");
  BOOST_TEST(gn.gamma().shape() == (mx::Shape{4}));  // per group, as MXNet 1.x's
  BOOST_TEST(ln.gamma().grad_req() == "write");
  BOOST_TEST(in.gamma().grad_req() == "null");  // MXNet's InstanceNorm: scale=False
  BOOST_TEST(in.beta().grad_req() == "write");
  BOOST_TEST(nn::LayerNorm({.center = false}).beta().grad_req() == "null");
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::LayerNorm layer;
    layer.initialize(mx::init::Normal(1.0), ctx);  // gamma and beta keep ones and zeros
    const nd::NDArray x = random_array({3, 5}, ctx, 1);
    const nd::NDArray y = layer(x);
    BOOST_TEST(layer.gamma().shape() == (mx::Shape{5}));
    check_close(layer.gamma().data(ctx), std::vector<double>(5, 1.0));
    check_close(y, ndg_test::values(nd::LayerNorm(x, nd::ones({5}, ctx), nd::zeros({5}, ctx))), 1e-6, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(each_layer_computes_its_op) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = random_array({2, 6, 3, 2}, ctx, 2);
    nn::GroupNorm gn({.num_groups = 3, .epsilon = 1e-3});
    gn.initialize(mx::init::Uniform(1.0), ctx);
    gn(x);
    gn.gamma().set_data(random_array({3}, ctx, 3));
    gn.beta().set_data(random_array({3}, ctx, 4));
    check_close(gn(x), ndg_test::values(nd::GroupNorm(x, gn.gamma().data(ctx), gn.beta().data(ctx),
                                                     {.num_groups = 3, .eps = 1e-3})), 1e-6, 1e-6);
    // InstanceNorm on the last axis: the channels moved to axis 1 and back.
    nn::InstanceNorm in({.axis = -1, .scale = true});
    in.initialize(mx::init::Uniform(1.0), ctx);
    in(x);
    in.gamma().set_data(random_array({2}, ctx, 5));
    const nd::NDArray moved = nd::InstanceNorm(x.swapaxes(1, 3), in.gamma().data(ctx), in.beta().data(ctx),
                                               {.eps = 1e-5});
    check_close(in(x), ndg_test::values(moved.swapaxes(1, 3)), 1e-6, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(hybridized_blocks_equal_eager_export_and_import) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    AddNorm net;
    net.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = random_array({2, 3, 8}, ctx, 6);
    const nd::NDArray eager = net(x);
    // The trained parameters get gradients, eager and hybridized alike.
    std::vector<std::vector<double>> grads;
    for (const bool hybrid : {false, true}) {
      net.hybridize(hybrid);
      {
        auto recording = ag::record();
        (net(x) * random_array({2, 3, 8}, ctx, 7)).sum().backward();
      }
      grads.push_back(ndg_test::values(net.layer_norm_gamma().grad(ctx)));
    }
    check_close(nd::array(grads[1], {8}), grads[0], 1e-5, 1e-6);
    check_close(net(x), ndg_test::values(eager), 1e-6, 1e-6);
    net.export_model(dir.file("addnorm"));
    const std::string json = ndg_test::read_bytes(dir.file("addnorm-symbol.json"));
    for (const char* op : {"LayerNorm", "GroupNorm", "InstanceNorm"}) {
      BOOST_TEST_CONTEXT(op) { BOOST_TEST(json.find("\"op\": \"" + std::string(op) + "\"") != std::string::npos); }
    }
    BOOST_TEST(json.find("\"num_groups\": \"2\"") != std::string::npos);
    nn::SymbolBlock imported =
        nn::SymbolBlock::imports(dir.file("addnorm-symbol.json"), {"data"}, dir.file("addnorm-0000.params"), ctx);
    check_close(imported(x), ndg_test::values(eager), 1e-6, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_typed_errors_naming_the_layer) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::LayerNorm ln({.in_channels = 4});
    ln.initialize(mx::init::One(), ctx);
    NDG_CHECK_THROWS_WITH(ln(nd::ones({2, 5}, ctx)), mx::ShapeError, "LayerNorm 'layernorm", "(2, 5)", "5 channels",
                          "(4,)");
    nn::GroupNorm gn({.num_groups = 3});
    gn.initialize(mx::init::One(), ctx);
    NDG_CHECK_THROWS_WITH(gn(nd::ones({2, 4, 3}, ctx)), mx::ShapeError, "GroupNorm", "num_groups=3");
    NDG_CHECK_THROWS_WITH(gn(nd::ones({4}, ctx)), mx::ShapeError, "GroupNorm 'groupnorm", "(N, C, ...)");
    nn::InstanceNorm in({.axis = 3});
    in.initialize(mx::init::One(), ctx);
    NDG_CHECK_THROWS_WITH(in(nd::ones({2, 4, 3}, ctx)), mx::ShapeError, "InstanceNorm 'instancenorm", "axis 3");
  });
  NDG_CHECK_THROWS_WITH(nn::GroupNorm({.num_groups = 0}), mx::ValueError, "GroupNorm", "num_groups");
  NDG_CHECK_THROWS_WITH(nn::LayerNorm({.epsilon = -1}), mx::ValueError, "LayerNorm", "epsilon");
}

BOOST_AUTO_TEST_SUITE_END()
