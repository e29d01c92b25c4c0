// nn::SymbolBlock::imports without a parameter file (MXNet's param_file=None): the parameters
// exist uninitialised with the shapes the JSON's "__shape__" hints and the ops give, initialize()
// initialises them ("__init__" and BatchNorm's defaults for the running statistics), the rest of
// their shapes come at the first forward (eagerly and hybridized), a forward before initialize()
// is the typed error; and an MXNet 0.8 file with its .params, upgraded as MXNet loads it. Every
// numeric case runs on every context against values computed by hand or with nd ops on cpu(0).
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gluon/nn.hpp>
#include <ndarray/ndarray.hpp>
#include <ndarray/ops/nn.hpp>
#include <ndarray/ops/softmax.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
using ndg_test::check_close;
using ndg_test::random_array;
using ndg_test::Values;
using ndg_test::values;

namespace {

// relu(x · w0ᵀ + b0) · w1ᵀ as MXNet 1.9's Gluon exports it, every parameter with its "__shape__";
// the bias's "__init__" as Gluon writes a bias_initializer, and w1's as Initializer.dumps() does.
const char* kHintedJson = R"json({
  "nodes": [
    {"op": "null", "name": "data", "inputs": []},
    {"op": "null", "name": "dense0_weight",
     "attrs": {"__dtype__": "0", "__lr_mult__": "1.0", "__shape__": "(4, 3)", "__storage_type__": "0", "__wd_mult__": "1.0"},
     "inputs": []},
    {"op": "null", "name": "dense0_bias",
     "attrs": {"__dtype__": "0", "__init__": "zeros", "__lr_mult__": "1.0", "__shape__": "(4,)", "__storage_type__": "0",
               "__wd_mult__": "1.0"},
     "inputs": []},
    {"op": "FullyConnected", "name": "dense0_fwd", "attrs": {"flatten": "True", "no_bias": "False", "num_hidden": "4"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
    {"op": "Activation", "name": "dense0_relu_fwd", "attrs": {"act_type": "relu"}, "inputs": [[3, 0, 0]]},
    {"op": "null", "name": "dense1_weight",
     "attrs": {"__dtype__": "0", "__init__": "[\"constant\", {\"value\": 0.25}]", "__shape__": "(2, 4)"}, "inputs": []},
    {"op": "FullyConnected", "name": "dense1_fwd", "attrs": {"flatten": "True", "no_bias": "True", "num_hidden": "2"},
     "inputs": [[4, 0, 0], [5, 0, 0]]}
  ],
  "arg_nodes": [0, 1, 2, 5],
  "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7],
  "heads": [[6, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})json";

// tanh(BatchNorm(FullyConnected(data))) with no hint but the bias's: the weight's in_units and
// BatchNorm's channels are known only from the data. The running variance has Gluon's "__init__",
// the running mean none (BatchNorm's own default, zeros, then applies).
const char* kDeferredJson = R"json({
  "nodes": [
    {"op": "null", "name": "data", "inputs": []},
    {"op": "null", "name": "fc_weight", "inputs": []},
    {"op": "null", "name": "fc_bias", "attrs": {"__shape__": "(3,)"}, "inputs": []},
    {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "3"}, "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
    {"op": "null", "name": "bn_gamma", "inputs": []},
    {"op": "null", "name": "bn_beta", "inputs": []},
    {"op": "null", "name": "bn_moving_mean", "inputs": []},
    {"op": "null", "name": "bn_moving_var", "attrs": {"__init__": "ones"}, "inputs": []},
    {"op": "BatchNorm", "name": "bn", "attrs": {"eps": "1e-05", "fix_gamma": "False", "momentum": "0.9"},
     "inputs": [[3, 0, 0], [4, 0, 0], [5, 0, 0], [6, 0, 0], [7, 0, 0]]},
    {"op": "Activation", "name": "act", "attrs": {"act_type": "tanh"}, "inputs": [[8, 0, 0]]}
  ],
  "arg_nodes": [0, 1, 2, 4, 5, 6, 7],
  "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12],
  "heads": [[9, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})json";

// MXNet 0.8's save_000800.json as MXNet's test_load_000800 reads it (the same file as
// test/ndarray/graph/graph_json_test.cpp's, abridged to its structure: "param" and "attr" keys,
// backward_source_id, [node, index] entries, no node_row_ptr or mxnet_version, BatchNorm without
// its auxiliary states).
const char* kMxnet080Json = R"json({
  "nodes": [
    {"op": "null", "param": {}, "name": "data", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage1", "lr_mult": "0.2"}},
    {"op": "null", "param": {}, "name": "fc1_weight", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage1", "wd_mult": "0.3", "weight_lr_mult": "1.2"}},
    {"op": "null", "param": {}, "name": "fc1_bias", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage1", "wd_mult": "0.3", "weight_lr_mult": "1.2"}},
    {"op": "FullyConnected", "param": {"no_bias": "False", "num_hidden": "128"}, "name": "fc1",
     "inputs": [[0, 0], [1, 0], [2, 0]], "backward_source_id": -1,
     "attr": {"ctx_group": "stage1", "wd_mult": "0.3", "weight_lr_mult": "1.2"}},
    {"op": "Activation", "param": {"act_type": "relu"}, "name": "relu1", "inputs": [[3, 0]], "backward_source_id": -1,
     "attr": {"ctx_group": "stage1"}},
    {"op": "null", "param": {}, "name": "fc2_weight", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage2", "lr_mult": "0.01"}},
    {"op": "null", "param": {}, "name": "fc2_bias", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage2", "lr_mult": "0.01"}},
    {"op": "FullyConnected", "param": {"no_bias": "False", "num_hidden": "64"}, "name": "fc2",
     "inputs": [[4, 0], [5, 0], [6, 0]], "backward_source_id": -1, "attr": {"ctx_group": "stage2", "lr_mult": "0.01"}},
    {"op": "Activation", "param": {"act_type": "relu"}, "name": "relu2", "inputs": [[7, 0]], "backward_source_id": -1,
     "attr": {"ctx_group": "stage2"}},
    {"op": "null", "param": {}, "name": "fc3_weight", "inputs": [], "backward_source_id": -1, "attr": {"ctx_group": "stage2"}},
    {"op": "null", "param": {}, "name": "fc3_bias", "inputs": [], "backward_source_id": -1, "attr": {"ctx_group": "stage2"}},
    {"op": "FullyConnected", "param": {"no_bias": "False", "num_hidden": "10"}, "name": "fc3",
     "inputs": [[8, 0], [9, 0], [10, 0]], "backward_source_id": -1, "attr": {"ctx_group": "stage2"}},
    {"op": "null", "param": {}, "name": "batchnorm0_gamma", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage2"}},
    {"op": "null", "param": {}, "name": "batchnorm0_beta", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage2"}},
    {"op": "BatchNorm", "param": {"eps": "0.001", "fix_gamma": "True", "momentum": "0.9", "use_global_stats": "False"},
     "name": "batchnorm0", "inputs": [[11, 0], [12, 0], [13, 0]], "backward_source_id": -1, "attr": {"ctx_group": "stage2"}},
    {"op": "null", "param": {}, "name": "softmax_label", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage2"}},
    {"op": "SoftmaxOutput",
     "param": {"grad_scale": "1", "ignore_label": "-1", "multi_output": "False", "normalization": "null",
               "out_grad": "False", "preserve_shape": "False", "use_ignore": "False"},
     "name": "softmax", "inputs": [[14, 0], [15, 0]], "backward_source_id": -1, "attr": {"ctx_group": "stage2"}}
  ],
  "arg_nodes": [0, 1, 2, 5, 6, 9, 10, 12, 13, 15],
  "heads": [[16, 0]]
})json";

// x (rows, in) · wᵀ (+ b), w (out, in), in double.
Values dense(const Values& x, const Values& w, const Values& b, std::size_t in, std::size_t out) {
  Values y;
  for (std::size_t r = 0; r < x.size() / in; ++r) {
    for (std::size_t j = 0; j < out; ++j) {
      double t = b.empty() ? 0.0 : b[j];
      for (std::size_t k = 0; k < in; ++k) t += x[r * in + k] * w[j * in + k];
      y.push_back(t);
    }
  }
  return y;
}

Values constant(std::size_t n, double v) { return Values(n, v); }

// What kDeferredJson computes in prediction from its parameters on ctx, for x (rows, in...).
Values deferred_reference(nn::SymbolBlock& net, const nd::NDArray& x, mx::Context ctx) {
  auto params = net.collect_params();
  const std::size_t in = static_cast<std::size_t>(x.size() / x.shape()[0]);
  const Values h = dense(values(x), values(params["fc_weight"].data(ctx)), values(params["fc_bias"].data(ctx)), in, 3);
  const Values gamma = values(params["bn_gamma"].data(ctx)), beta = values(params["bn_beta"].data(ctx)),
               mean = values(params["bn_moving_mean"].data(ctx)), var = values(params["bn_moving_var"].data(ctx));
  Values y;
  for (std::size_t i = 0; i < h.size(); ++i) {
    const std::size_t c = i % 3;
    y.push_back(std::tanh((h[i] - mean[c]) / std::sqrt(var[c] + 1e-5) * gamma[c] + beta[c]));
  }
  return y;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(symbol_block)

BOOST_AUTO_TEST_CASE(imports_without_params_takes_the_hinted_shapes_then_initialize) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    ndg_test::write_bytes(dir.file("h-symbol.json"), kHintedJson);
    nn::SymbolBlock net = nn::SymbolBlock::imports(dir.file("h-symbol.json"), {"data"});  // param_file=None
    auto params = net.collect_params();
    std::vector<std::string> keys = params.keys();
    std::sort(keys.begin(), keys.end());
    BOOST_TEST((keys == std::vector<std::string>{"dense0_bias", "dense0_weight", "dense1_weight"}));
    BOOST_TEST(params["dense0_weight"].shape() == (mx::Shape{4, 3}));
    BOOST_TEST(params["dense0_bias"].shape() == (mx::Shape{4}));
    BOOST_TEST(params["dense1_weight"].shape() == (mx::Shape{2, 4}));
    for (const auto& [name, param] : params) {
      BOOST_TEST_CONTEXT(name) {
        BOOST_TEST(!param.is_initialized());
        BOOST_TEST(param.grad_req() == "write");
        BOOST_TEST(param.dtype() == mx::DType::float32);
      }
    }
    const nd::NDArray x = random_array({5, 3}, ctx, 7);
    NDG_CHECK_THROWS_WITH(net(x), mx::Error, "Parameter 'dense0_weight' has not been initialized", "initialize()");

    net.initialize(mx::init::Normal(0.5), ctx);
    for (const auto& [name, param] : params) BOOST_TEST_CONTEXT(name) { BOOST_TEST(param.is_initialized()); }
    // "__init__" where the file gives one: "zeros", and Constant(0.25) from its dumps().
    check_close(params["dense0_bias"].data(ctx), constant(4, 0.0));
    check_close(params["dense1_weight"].data(ctx), constant(8, 0.25));
    const Values w0 = values(params["dense0_weight"].data(ctx));
    BOOST_TEST(std::any_of(w0.begin(), w0.end(), [](double v) { return v != 0.0; }));  // Normal(0.5)

    const nd::NDArray y = net(x);
    BOOST_TEST(y.context() == ctx);
    BOOST_TEST(y.shape() == (mx::Shape{5, 2}));
    Values h = dense(values(x), w0, values(params["dense0_bias"].data(ctx)), 3, 4);
    for (double& v : h) v = std::max(v, 0.0);
    const Values want = dense(h, values(params["dense1_weight"].data(ctx)), {}, 4, 2);
    check_close(y, want, 1e-5, 1e-6);

    // The same values through a parameter file: imports with params as before.
    nd::save(dir.file("h-0000.params"), {{"arg:dense0_weight", params["dense0_weight"].data(ctx)},
                                         {"arg:dense0_bias", params["dense0_bias"].data(ctx)},
                                         {"arg:dense1_weight", params["dense1_weight"].data(ctx)}});
    nn::SymbolBlock loaded = nn::SymbolBlock::imports(dir.file("h-symbol.json"), {"data"}, dir.file("h-0000.params"), ctx);
    check_close(loaded(x), want, 1e-5, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(imports_without_params_infers_shapes_at_the_first_forward) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    ndg_test::write_bytes(dir.file("d-symbol.json"), kDeferredJson);
    nn::SymbolBlock net = nn::SymbolBlock::imports(dir.file("d-symbol.json"), {"data"});
    auto params = net.collect_params();
    BOOST_TEST(params.size() == 6u);
    // As far as the hint and the ops' attributes give them; 0: known at the first forward.
    BOOST_TEST(params["fc_weight"].shape() == (mx::Shape{3, 0}));
    BOOST_TEST(params["fc_bias"].shape() == (mx::Shape{3}));
    for (const char* name : {"bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"}) {
      BOOST_TEST_CONTEXT(name) { BOOST_TEST(params[name].shape() == (mx::Shape{0})); }
    }
    // The running statistics are auxiliary states: no gradient.
    BOOST_TEST(params["bn_moving_mean"].grad_req() == "null");
    BOOST_TEST(params["bn_moving_var"].grad_req() == "null");
    BOOST_TEST(params["bn_gamma"].grad_req() == "write");

    const nd::NDArray x = random_array({4, 2, 3}, ctx, 11);  // flattened to 6 features
    NDG_CHECK_THROWS_WITH(net(x), mx::Error, "Parameter 'fc_weight' has not been initialized");
    net.initialize(mx::init::Normal(0.5), ctx);
    BOOST_TEST(params["fc_weight"].is_deferred());
    BOOST_TEST(params["fc_bias"].is_initialized());
    const nd::NDArray y = net(x);
    BOOST_TEST(y.shape() == (mx::Shape{4, 3}));
    BOOST_TEST(params["fc_weight"].shape() == (mx::Shape{3, 6}));
    for (const char* name : {"bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"}) {
      BOOST_TEST_CONTEXT(name) { BOOST_TEST(params[name].shape() == (mx::Shape{3})); }
    }
    // BatchNorm's running statistics by MXNet's defaults (the op's zeros, the file's "ones"),
    // gamma and beta by name.
    check_close(params["bn_moving_mean"].data(ctx), constant(3, 0.0));
    check_close(params["bn_moving_var"].data(ctx), constant(3, 1.0));
    check_close(params["bn_gamma"].data(ctx), constant(3, 1.0));
    check_close(params["bn_beta"].data(ctx), constant(3, 0.0));
    check_close(params["fc_bias"].data(ctx), constant(3, 0.0));
    check_close(y, deferred_reference(net, x, ctx), 1e-5, 1e-6);
    // Another batch size: the shapes stay.
    const nd::NDArray x2 = random_array({1, 2, 3}, ctx, 12);
    check_close(net(x2), deferred_reference(net, x2, ctx), 1e-5, 1e-6);
    // Data of another width does not fit the weight any more.
    BOOST_CHECK_THROW(net(random_array({2, 5}, ctx, 13)), mx::ShapeError);

    // Hybridized before its first forward: the deferred shapes are completed first, then traced.
    nn::SymbolBlock hybrid = nn::SymbolBlock::imports(dir.file("d-symbol.json"), {"data"});
    hybrid.initialize(mx::init::Normal(0.5), ctx);
    hybrid.hybridize();
    const nd::NDArray first = hybrid(x);
    BOOST_TEST(hybrid.collect_params()["fc_weight"].shape() == (mx::Shape{3, 6}));
    check_close(first, deferred_reference(hybrid, x, ctx), 1e-5, 1e-6);
    check_close(hybrid(x), deferred_reference(hybrid, x, ctx), 1e-5, 1e-6);  // the replay
    BOOST_TEST(hybrid.traced_graphs() == 1u);
  });
}

BOOST_AUTO_TEST_CASE(imports_without_params_names_what_it_cannot_shape) {
  const ndg_test::TempDir dir;
  const auto imports = [&](const std::string& json) {
    ndg_test::write_bytes(dir.file("e-symbol.json"), json);
    return nn::SymbolBlock::imports(dir.file("e-symbol.json"), {"data"});
  };
  // No hint, and an op whose parameter shapes ndgluon does not infer.
  NDG_CHECK_THROWS_WITH(
      imports(R"j({"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "null", "name": "scale", "inputs": []},
          {"op": "broadcast_mul", "name": "m", "inputs": [[0, 0, 0], [1, 0, 0]]}], "heads": [[2, 0, 0]]})j"),
      mx::ShapeError, "e-symbol.json", "'scale'", "__shape__");
  // A hint the op contradicts.
  NDG_CHECK_THROWS_WITH(
      imports(R"j({"nodes": [{"op": "null", "name": "data", "inputs": []},
          {"op": "null", "name": "w", "attrs": {"__shape__": "(5, 0)"}, "inputs": []},
          {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "3", "no_bias": "True"}, "inputs": [[0, 0, 0], [1, 0, 0]]}],
          "heads": [[2, 0, 0]]})j"),
      mx::ShapeError, "e-symbol.json", "'w'", "(5, 0)", "node 'fc'", "(3, 0)");
  // Malformed files are typed errors naming the file, with or without params.
  NDG_CHECK_THROWS_WITH(imports("{\"nodes\": ["), mx::FileError, "e-symbol.json", "not JSON");
  NDG_CHECK_THROWS_WITH(imports(R"j({"nodes": [], "heads": [], "attrs": {"mxnet_version": 10901}})j"), mx::FileError,
                        "e-symbol.json", "mxnet_version");
  NDG_CHECK_THROWS_WITH(nn::SymbolBlock::imports(dir.file("missing-symbol.json"), {"data"}), mx::FileError,
                        "missing-symbol.json");
}

// MXNet 0.8's file with the .params an MXNet of then would have saved (arg: and aux: keys): the
// BatchNorm's running statistics, which the JSON lacks, are the auxiliary states the upgrade added.
BOOST_AUTO_TEST_CASE(imports_an_mxnet_0_8_model) {
  const std::map<std::string, mx::Shape> shapes{
      {"fc1_weight", {128, 6}}, {"fc1_bias", {128}},      {"fc2_weight", {64, 128}},        {"fc2_bias", {64}},
      {"fc3_weight", {10, 64}}, {"fc3_bias", {10}},       {"batchnorm0_gamma", {10}},       {"batchnorm0_beta", {10}},
      {"batchnorm0_moving_mean", {10}}, {"batchnorm0_moving_var", {10}}};
  std::map<std::string, nd::NDArray> host;
  unsigned seed = 800;
  for (const auto& [name, shape] : shapes) host[name] = random_array(shape, mx::cpu(), seed++);
  host["batchnorm0_moving_var"] = host["batchnorm0_moving_var"] + 1.5;  // a variance, > 0
  const ndg_test::TempDir dir;
  ndg_test::write_bytes(dir.file("old-symbol.json"), kMxnet080Json);
  std::vector<std::string> names;
  std::vector<nd::NDArray> arrays;
  for (const auto& [name, array] : host) {
    names.push_back((name.find("moving") != std::string::npos ? "aux:" : "arg:") + name);
    arrays.push_back(array);
  }
  nd::save(dir.file("old-0000.params"), names, arrays);
  // The reference: the same model of nd ops on cpu(0), in prediction (the running statistics).
  const nd::NDArray x = random_array({3, 6}, mx::cpu(), 880);
  nd::BatchNormOptions bn;
  bn.eps = 0.001;
  bn.fix_gamma = true;
  const nd::NDArray h1 = nd::FullyConnected(x, host["fc1_weight"], host["fc1_bias"], 128, false, true, "relu");
  const nd::NDArray h2 = nd::FullyConnected(h1, host["fc2_weight"], host["fc2_bias"], 64, false, true, "relu");
  const nd::NDArray h3 = nd::FullyConnected(h2, host["fc3_weight"], host["fc3_bias"], 10);
  const Values want = values(nd::softmax(nd::BatchNorm(h3, host["batchnorm0_gamma"], host["batchnorm0_beta"],
                                                       host["batchnorm0_moving_mean"], host["batchnorm0_moving_var"], bn)));
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::SymbolBlock net = nn::SymbolBlock::imports(dir.file("old-symbol.json"), {"data"}, dir.file("old-0000.params"), ctx);
    auto params = net.collect_params();
    BOOST_TEST(params.size() == 10u);  // softmax_label left out
    BOOST_TEST(params["batchnorm0_moving_mean"].grad_req() == "null");
    BOOST_TEST(params["batchnorm0_moving_var"].grad_req() == "null");
    const nd::NDArray y = net(x.copyto(ctx));
    BOOST_TEST(y.context() == ctx);
    check_close(y, want, 1e-5, 1e-6);

    // Without its .params, as MXNet's imports(param_file=None): the upgrade's "__init__" gives the
    // running statistics zeros and ones.
    nn::SymbolBlock fresh = nn::SymbolBlock::imports(dir.file("old-symbol.json"), {"data"});
    auto fresh_params = fresh.collect_params();
    BOOST_TEST(fresh_params.size() == 10u);
    BOOST_TEST(fresh_params["batchnorm0_moving_var"].grad_req() == "null");
    BOOST_TEST(fresh_params["fc2_weight"].shape() == (mx::Shape{64, 0}));
    fresh.initialize(mx::init::Xavier(), ctx);
    BOOST_TEST(fresh(x.copyto(ctx)).shape() == (mx::Shape{3, 10}));
    BOOST_TEST(fresh_params["fc1_weight"].shape() == (mx::Shape{128, 6}));
    BOOST_TEST(fresh_params["fc2_weight"].shape() == (mx::Shape{64, 128}));
    check_close(fresh_params["batchnorm0_moving_mean"].data(ctx), constant(10, 0.0));
    check_close(fresh_params["batchnorm0_moving_var"].data(ctx), constant(10, 1.0));
  });
}

BOOST_AUTO_TEST_SUITE_END()
