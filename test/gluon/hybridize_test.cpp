// hybridize(): a traced net replays to the eager results, forward and gradients, on every context;
// running statistics count once per call; static_shape; forwards that cannot be traced; export to
// MXNet's symbol JSON and .params, and nn::SymbolBlock::imports of that export and of JSON written
// by hand in MXNet's layout; bad files.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"
#include "test/support/profile.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/ndarray.hpp>
#include <ndarray/profiler/profiler.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
using ndg_test::check_close;
using ndg_test::random_array;
using ndg_test::Values;

namespace {

// A small conv net with traced constructs: Conv2D with a fused activation, BatchNorm, a max pool,
// Flatten (a reshape view), Dense layers.
nn::Sequential small_net() {
  nn::Sequential net;
  net.add(nn::Conv2D(4, 3, {.padding = 1, .activation = "relu"}), nn::BatchNorm(), nn::MaxPool2D(2),
          nn::Flatten(), nn::Dense(8, "tanh"), nn::Dense(3));
  return net;
}

// Two nets with the same parameters on ctx: a, and b loaded from a's file.
std::pair<nn::Sequential, nn::Sequential> twin_nets(mx::Context ctx, const ndg_test::TempDir& dir) {
  nn::Sequential a = small_net(), b = small_net();
  a.initialize(mx::init::Xavier(), ctx);
  a(nd::zeros({2, 2, 6, 6}, ctx));  // completes the deferred shapes
  a.save_parameters(dir.file("twin.params"));
  b.load_parameters(dir.file("twin.params"), ctx);
  return {a, b};
}

struct Stepped {
  nd::NDArray y;
  std::vector<nd::NDArray> grads;
  nd::NDArray running_mean;
};

// One recorded forward and backward of a loss; the gradients and the BatchNorm's running mean.
Stepped step(nn::Sequential& net, const nd::NDArray& x, const nd::NDArray& label) {
  mx::gluon::loss::SoftmaxCrossEntropyLoss loss;
  Stepped s;
  {
    auto recording = ag::record();
    s.y = net(x);
    loss(s.y, label).backward();
  }
  for (const auto& [name, param] : net.collect_params()) {
    if (param.grad_req() != "null") s.grads.push_back(param.grad(x.context()));
  }
  s.running_mean = net.at<nn::BatchNorm>(1).running_mean().data(x.context());
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(hybridize)

BOOST_AUTO_TEST_CASE(replays_the_eager_forward_and_gradients_on_every_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    auto [eager, hybrid] = twin_nets(ctx, dir);
    hybrid.hybridize();
    BOOST_TEST(hybrid.is_hybridized());
    const nd::NDArray label = nd::array(std::vector<float>{0, 2, 1, 2, 0}, mx::Shape{5}, ctx);
    for (unsigned call = 0; call < 3; ++call) {  // the trace, then two replays of its graph
      BOOST_TEST_CONTEXT("call " << call) {
        const nd::NDArray x = random_array({5, 2, 6, 6}, ctx, 40 + call);
        const Stepped want = step(eager, x, label), got = step(hybrid, x, label);
        check_close(got.y, want.y.asvector<double>(), 1e-5, 1e-6);
        for (std::size_t i = 0; i < want.grads.size(); ++i) {
          BOOST_TEST_CONTEXT("gradient " << i) { check_close(got.grads[i], want.grads[i].asvector<double>(), 1e-4, 1e-6); }
        }
        // The running statistics moved once per call, the trace's call included.
        check_close(got.running_mean, want.running_mean.asvector<double>(), 1e-5, 1e-7);
      }
    }
    // Prediction is another signature: its own graph, the running statistics used.
    const nd::NDArray x = random_array({5, 2, 6, 6}, ctx, 50);
    check_close(hybrid(x), eager(x).asvector<double>(), 1e-5, 1e-6);
    hybrid.hybridize(false);
    BOOST_TEST(!hybrid.is_hybridized());
    check_close(hybrid(x), eager(x).asvector<double>(), 1e-6, 1e-7);
  });
}

// Under the profiler each replay is a row named after the block ("<name> graph"), in forward and
// under record() alike.
BOOST_AUTO_TEST_CASE(replays_are_profiled_under_the_blocks_name) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Dense dense(3, "relu", true, 4);
    dense.initialize(mx::init::Xavier(), ctx);
    dense.hybridize();
    const nd::NDArray x = nd::ones({2, 4}, ctx);
    dense(x);  // traced
    mx::profiler::reset();
    mx::profiler::set_state("run");
    dense(x);
    {
      auto recording = mx::autograd::record();
      dense(x).backward();
    }
    mx::profiler::set_state("stop");
    const std::string table = mx::profiler::dumps(true);
    BOOST_TEST_INFO(table);
    BOOST_TEST(ndg_test::profiler_calls(table, dense.name() + " graph") == 2);
  });
}

// Each input shape traces a graph of its own; 64 are kept, the least recently used dropped first
// and traced again when its shape comes back, with the eager values every time. hybridize()
// drops them all.
BOOST_AUTO_TEST_CASE(at_most_64_graphs_are_kept_the_least_recently_used_dropped) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Dense dense(3, "tanh", true, 4);
    dense.initialize(mx::init::Xavier(), ctx);
    const auto eager = [&](const nd::NDArray& x) {
      dense.hybridize(false);
      const std::vector<double> y = dense(x).asvector<double>();
      return y;
    };
    std::vector<nd::NDArray> inputs;
    std::vector<std::vector<double>> want;
    for (std::int64_t rows = 1; rows <= 70; ++rows) {
      inputs.push_back(nd::random::uniform(-1, 1, {rows, 4}, ctx));
      want.push_back(eager(inputs.back()));
    }
    dense.hybridize();
    BOOST_TEST(dense.traced_graphs() == 0u);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (i == 10) dense(inputs[0]);  // batch 1 used again: not the least recently used any more
      ndg_test::check_close(dense(inputs[i]), want[i], 0, 0);
    }
    BOOST_TEST(dense.traced_graphs() == 64u);
    // 70 shapes, 6 dropped: batches 2..7 (batch 1 was used again in between). Kept and dropped give
    // the eager values, and the count stays.
    for (const std::size_t i : {std::size_t{0}, std::size_t{69}, std::size_t{1}, std::size_t{5}}) {
      ndg_test::check_close(dense(inputs[i]), want[i], 0, 0);
    }
    BOOST_TEST(dense.traced_graphs() == 64u);
    dense.hybridize();
    BOOST_TEST(dense.traced_graphs() == 0u);
  });
}

BOOST_AUTO_TEST_CASE(static_shape_rejects_another_signature) {
  nn::Sequential net = small_net();
  net.initialize(mx::init::Xavier());
  net.hybridize(true, true, true);
  BOOST_TEST(net(nd::ones({2, 2, 6, 6})).shape() == (mx::Shape{2, 3}));
  NDG_CHECK_THROWS_WITH(net(nd::ones({3, 2, 6, 6})), mx::ValueError, "static_shape", "(2, 2, 6, 6)", "(3, 2, 6, 6)");
  net.hybridize(true);  // without static_shape, each batch size has its graph
  BOOST_TEST(net(nd::ones({3, 2, 6, 6})).shape() == (mx::Shape{3, 3}));
  BOOST_TEST(net(nd::ones({2, 2, 6, 6})).shape() == (mx::Shape{2, 3}));
}

// A forward that reads an array it neither takes nor owns as a parameter.
class Captures : public mx::gluon::Block {
 public:
  explicit Captures(nd::NDArray offset) : Block("captures"), offset_(std::move(offset)) {}
  nd::NDArray forward(const nd::NDArray& x) override { return x + offset_; }

 private:
  nd::NDArray offset_;
};

BOOST_AUTO_TEST_CASE(a_forward_that_reads_an_outside_array_cannot_be_traced) {
  Captures block(nd::ones({3}));
  BOOST_TEST(block(nd::ones({3})).asvector<float>() == (std::vector<float>{2, 2, 2}), boost::test_tools::per_element());
  block.hybridize();
  NDG_CHECK_THROWS_WITH(block(nd::ones({3})), mx::ValueError, "hybridize", "(3,) float32", "neither one of its inputs nor a parameter");
}

BOOST_AUTO_TEST_CASE(export_and_imports_on_every_context) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    nn::Sequential net = small_net();
    net.initialize(mx::init::Xavier(), ctx);
    NDG_CHECK_THROWS_WITH(net.export_model(dir.file("net")), mx::ValueError, "export", "hybridize");
    net.hybridize();
    NDG_CHECK_THROWS_WITH(net.export_model(dir.file("net")), mx::ValueError, "export", "forward");
    const nd::NDArray x = random_array({4, 2, 6, 6}, ctx, 60);
    const nd::NDArray want = net(x);  // prediction mode
    net.export_model(dir.file("net"), 7);
    const std::string json = ndg_test::read_bytes(dir.file("net-symbol.json"));
    for (const char* part : {"\"op\": \"Convolution\"", "\"op\": \"BatchNorm\"", "\"op\": \"Pooling\"", "\"op\": \"Flatten\"",
                             "\"op\": \"FullyConnected\"", "\"op\": \"null\"", "\"name\": \"data\"", "\"arg_nodes\"",
                             "\"node_row_ptr\"", "\"heads\"", "\"mxnet_version\"", "\"num_filter\": \"4\""}) {
      BOOST_TEST_CONTEXT(part) { BOOST_TEST(json.find(part) != std::string::npos); }
    }
    const nd::LoadedArrays params = nd::load(dir.file("net-0007.params"));
    std::size_t args = 0, auxes = 0;
    for (const std::string& name : params.names) {
      args += name.starts_with("arg:");
      auxes += name.starts_with("aux:");
    }
    BOOST_TEST(args == 8u);   // conv weight and bias, gamma and beta, two dense weights and biases
    BOOST_TEST(auxes == 2u);  // the running mean and variance
    nn::SymbolBlock imported =
        nn::SymbolBlock::imports(dir.file("net-symbol.json"), {"data"}, dir.file("net-0007.params"), ctx);
    check_close(imported(x), want.asvector<double>(), 1e-5, 1e-6);
    BOOST_TEST(imported.collect_params().size() == 10u);
    // Across contexts: what a GPU exported runs on cpu(0), and the other way round.
    for (const mx::Context other : ndg_test::all_contexts()) {
      BOOST_TEST_CONTEXT("imported on " << other) {
        nn::SymbolBlock moved =
            nn::SymbolBlock::imports(dir.file("net-symbol.json"), {"data"}, dir.file("net-0007.params"), other);
        check_close(moved(x.as_in_context(other)), want.asvector<double>(), 1e-4, 1e-5);
      }
    }
  });
}

// The indexing, shape and sort ops in a hybridized block: the replay gives the eager values, the
// export names MXNet's ops (SliceChannel for split, reverse for flip, SequenceMask without its
// absent sequence_length input), and the import computes the same.
BOOST_AUTO_TEST_CASE(indexing_shape_and_sort_ops_export_and_import) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    nn::Sequential net;
    net.add(nn::Dense(6), nn::HybridLambda([](const nd::NDArray& y) {  // y (4, 6)
              const std::vector<nd::NDArray> parts = nd::split(nd::clip(y, -0.5, 0.5), 3, 1);  // 3 x (4, 2)
              const nd::NDArray s = nd::SequenceReverse(nd::stack({parts[0], parts[2]}, 0));  // (2, 4, 2)
              const nd::NDArray last = nd::SequenceLast(nd::SequenceMask(s, {}, false, 0.0));  // (4, 2)
              const nd::NDArray top = nd::topk(nd::repeat(last, 3, 1) + y, -1, 2, "value");  // (4, 2)
              const nd::NDArray w = nd::where(top, top, nd::flip(top, {1}));
              const nd::NDArray taken = nd::take(w, nd::argsort(last, -1, true, mx::DType::int32), 1);  // (4, 4, 2)
              return nd::concat({nd::squeeze(nd::expand_dims(w, 1), {1}), nd::sort(taken.reshape({4, 8}))}, 1);
            }));
    net.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = random_array({4, 5}, ctx, 61);
    const nd::NDArray eager = net(x);
    BOOST_TEST(eager.shape() == (mx::Shape{4, 10}));
    net.hybridize();
    check_close(net(x), eager.asvector<double>(), 0, 0);
    net.export_model(dir.file("ops"));
    const std::string json = ndg_test::read_bytes(dir.file("ops-symbol.json"));
    for (const char* op : {"clip", "SliceChannel", "stack", "SequenceReverse", "SequenceMask", "SequenceLast", "repeat",
                           "topk", "where", "reverse", "take", "argsort", "expand_dims", "squeeze", "sort"}) {
      BOOST_TEST_CONTEXT(op) { BOOST_TEST(json.find("\"op\": \"" + std::string(op) + "\"") != std::string::npos); }
    }
    BOOST_TEST(json.find("\"num_outputs\": \"3\"") != std::string::npos);
    nn::SymbolBlock imported = nn::SymbolBlock::imports(dir.file("ops-symbol.json"), {"data"}, dir.file("ops-0000.params"), ctx);
    check_close(imported(x), eager.asvector<double>(), 1e-6, 1e-6);
  });
}

// nd::transpose returns a view and runs no op: traced, each permuted view becomes a transpose node,
// which replays, differentiates and exports as MXNet's; so does an arange made inside forward.
BOOST_AUTO_TEST_CASE(transposed_views_replay_differentiate_and_export) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    nn::Sequential net;
    nn::Dense dense(12, nn::DenseOptions{.flatten = false});
    net.add(dense, nn::HybridLambda([](const nd::NDArray& y) {  // y (2, 3, 12): heads as in attention
              const nd::NDArray heads = nd::transpose(y.reshape({2, 3, 3, 4}), {2, 0, 1, 3});  // (3, 2, 3, 4)
              const nd::NDArray q = nd::slice_axis(heads, 0, 0, 1).reshape({2, 3, 4});
              const nd::NDArray k = nd::slice_axis(heads, 0, 1, 2).reshape({2, 3, 4});
              const nd::NDArray scores = nd::batch_dot(q, nd::swapaxes(k, 1, 2));              // (2, 3, 3)
              const nd::NDArray steps = nd::arange(0, 3, 1, y.context()).reshape({1, 1, 3});  // traced as _arange
              return nd::transpose(nd::softmax(scores, -1), {0, 2, 1}) + nd::transpose(nd::transpose(scores)) + steps;
            }));
    net.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = random_array({2, 3, 5}, ctx, 71);
    const auto run = [&] {
      std::vector<nd::NDArray> grads;
      nd::NDArray y;
      {
        auto recording = ag::record();
        y = net(x);
        (y * y).sum().backward();
      }
      grads.push_back(dense.weight().grad(ctx).copy());
      grads.push_back(dense.bias().grad(ctx).copy());
      return std::make_pair(y, grads);
    };
    const auto [eager, eager_grads] = run();
    net.hybridize();
    for (int replay = 0; replay < 2; ++replay) {
      const auto [traced, traced_grads] = run();
      check_close(traced, eager.asvector<double>(), 1e-6, 1e-7);
      check_close(traced_grads[0], eager_grads[0].asvector<double>(), 1e-5, 1e-6);
      check_close(traced_grads[1], eager_grads[1].asvector<double>(), 1e-5, 1e-6);
    }
    net.export_model(dir.file("heads"));
    const std::string json = ndg_test::read_bytes(dir.file("heads-symbol.json"));
    BOOST_TEST(json.find("\"op\": \"transpose\"") != std::string::npos);
    BOOST_TEST(json.find("\"axes\": \"(2, 0, 1, 3)\"") != std::string::npos);
    BOOST_TEST(json.find("\"op\": \"_arange\"") != std::string::npos);
    nn::SymbolBlock imported =
        nn::SymbolBlock::imports(dir.file("heads-symbol.json"), {"data"}, dir.file("heads-0000.params"), ctx);
    check_close(imported(x), eager.asvector<double>(), 1e-6, 1e-7);
  });
}

namespace {

// Reads its parameter through two transposed views and a reshape: one variable in the graph.
class TransposedWeight : public mx::gluon::Block {
 public:
  TransposedWeight() : Block("transposedweight") { register_parameter("weight", {4, 5}); }
  nd::NDArray forward(const nd::NDArray& x) override {  // x (N, 5)
    const nd::NDArray w = parameter("weight").data(x.context());
    return nd::dot(nd::dot(x, nd::transpose(w)), w) + nd::transpose(w).reshape({1, 20}).sum();
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(transposed_parameters_are_one_variable) {
  ndg_test::for_each_context([](mx::Context ctx) {
    TransposedWeight net;
    net.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = random_array({3, 5}, ctx, 73);
    const mx::gluon::Parameter w = net.structural_params().at(0).second;
    const auto run = [&] {
      nd::NDArray y;
      {
        auto recording = ag::record();
        y = net(x);
        y.sum().backward();
      }
      return std::make_pair(y, w.grad(ctx).copy());
    };
    const auto [eager, eager_grad] = run();
    net.hybridize();
    for (int replay = 0; replay < 2; ++replay) {
      const auto [traced, traced_grad] = run();
      check_close(traced, eager.asvector<double>(), 1e-6, 1e-7);
      check_close(traced_grad, eager_grad.asvector<double>(), 1e-5, 1e-6);
    }
    const ndg_test::TempDir dir;
    net.export_model(dir.file("tw"));
    const std::string json = ndg_test::read_bytes(dir.file("tw-symbol.json"));
    std::size_t variables = 0;
    const std::string node = "\"name\": \"" + w.name() + "\"";
    for (std::size_t at = json.find(node); at != std::string::npos; at = json.find(node, at + 1)) {
      ++variables;
    }
    BOOST_TEST(variables == 1u);
  });
}

// JSON as MXNet 1.x writes it (attrs, hints in __shape__, node_row_ptr, a version), for
// relu(x · w0ᵀ + b0) · w1ᵀ + b1, with MXNet's extra attributes.
BOOST_AUTO_TEST_CASE(imports_json_written_by_mxnet) {
  const std::string json = R"json({
  "nodes": [
    {"op": "null", "name": "data", "attrs": {"__shape__": "(0, 3)"}, "inputs": []},
    {"op": "null", "name": "dense0_weight", "attrs": {"__dtype__": "0", "__shape__": "(2, 3)"}, "inputs": []},
    {"op": "null", "name": "dense0_bias", "inputs": []},
    {"op": "FullyConnected", "name": "dense0_fwd", "attrs": {"flatten": "True", "no_bias": "False", "num_hidden": "2"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]},
    {"op": "Activation", "name": "dense0_relu_fwd", "attrs": {"act_type": "relu"}, "inputs": [[3, 0, 0]]},
    {"op": "null", "name": "dense1_weight", "inputs": []},
    {"op": "FullyConnected", "name": "dense1_fwd", "attrs": {"no_bias": "True", "num_hidden": "1"},
     "inputs": [[4, 0, 0], [5, 0, 0]]}
  ],
  "arg_nodes": [0, 1, 2, 5],
  "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7],
  "heads": [[6, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})json";
  ndg_test::for_each_context([&](mx::Context ctx) {
    const ndg_test::TempDir dir;
    ndg_test::write_bytes(dir.file("m-symbol.json"), json);
    nd::save(dir.file("m-0000.params"), {{"arg:dense0_weight", nd::array({{1, 0, -1}, {2, 1, 0}})},
                                         {"arg:dense0_bias", nd::array({0.5, -4})},
                                         {"arg:dense1_weight", nd::array({{3, -1}})}});
    nn::SymbolBlock net = nn::SymbolBlock::imports(dir.file("m-symbol.json"), {"data"}, dir.file("m-0000.params"), ctx);
    // x = (1, 2, 3): h = relu(1 - 3 + 0.5, 2 + 2 - 4) = (0, 0) -> 0; x = (4, 0, 1): relu(3.5, 4) -> 3·3.5 - 4 = 6.5
    const nd::NDArray y = net(nd::array({{1, 2, 3}, {4, 0, 1}}, ctx));
    BOOST_TEST(y.shape() == (mx::Shape{2, 1}));
    check_close(y, {0.0, 6.5}, 1e-6, 1e-6);
    NDG_CHECK_THROWS_WITH(nn::SymbolBlock::imports(dir.file("m-symbol.json"), {"input"}, dir.file("m-0000.params"), ctx),
                          mx::ValueError, "no variable 'input'");
  });
}

// MXNet's training export: a SoftmaxOutput head and its label variable, which imports leaves out;
// and a .params array that is not the JSON's __shape__.
BOOST_AUTO_TEST_CASE(imports_a_softmax_output_head_and_checks_shapes) {
  const std::string json = R"json({
  "nodes": [
    {"op": "null", "name": "data", "inputs": []},
    {"op": "null", "name": "fc_weight", "attrs": {"__shape__": "(3, 2)"}, "inputs": []},
    {"op": "FullyConnected", "name": "fc", "attrs": {"no_bias": "True", "num_hidden": "3"}, "inputs": [[0, 0, 0], [1, 0, 0]]},
    {"op": "null", "name": "softmax_label", "inputs": []},
    {"op": "SoftmaxOutput", "name": "softmax", "inputs": [[2, 0, 0], [3, 0, 0]]}
  ],
  "arg_nodes": [0, 1, 3],
  "heads": [[4, 0, 0]]
})json";
  ndg_test::for_each_context([&](mx::Context ctx) {
    const ndg_test::TempDir dir;
    ndg_test::write_bytes(dir.file("s-symbol.json"), json);
    nd::save(dir.file("s-0000.params"), {{"arg:fc_weight", nd::array({{1, 0}, {0, 1}, {1, 1}})}});
    nn::SymbolBlock net = nn::SymbolBlock::imports(dir.file("s-symbol.json"), {"data"}, dir.file("s-0000.params"), ctx);
    BOOST_TEST(net.collect_params().size() == 1u);
    // x = (1, 2): logits (1, 2, 3), softmax e^(k - 3) / (e^-2 + e^-1 + 1)
    const double z = std::exp(-2.0) + std::exp(-1.0) + 1.0;
    check_close(net(nd::array({{1, 2}}, ctx)), {std::exp(-2.0) / z, std::exp(-1.0) / z, 1.0 / z}, 1e-6, 1e-7);
    nd::save(dir.file("bad-0000.params"), {{"arg:fc_weight", nd::array({{1, 0, 0}, {0, 1, 0}})}});
    NDG_CHECK_THROWS_WITH(nn::SymbolBlock::imports(dir.file("s-symbol.json"), {"data"}, dir.file("bad-0000.params"), ctx),
                          mx::ShapeError, "'fc_weight'", "(2, 3)", "(3, 2)");
  });
}

BOOST_AUTO_TEST_CASE(bad_symbol_files_are_typed_errors) {
  const ndg_test::TempDir dir;
  nd::save(dir.file("p.params"), std::vector<std::string>{}, std::vector<nd::NDArray>{});
  const auto imports = [&](const std::string& json) {
    ndg_test::write_bytes(dir.file("s.json"), json);
    return nn::SymbolBlock::imports(dir.file("s.json"), {"data"}, dir.file("p.params"));
  };
  NDG_CHECK_THROWS_WITH(imports("{\"nodes\": ["), mx::FileError, "s.json", "not JSON");
  NDG_CHECK_THROWS_WITH(imports("[1, 2]"), mx::FileError, "s.json", "not a symbol JSON");
  NDG_CHECK_THROWS_WITH(
      imports(R"({"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "NoSuchOp", "name": "n1", "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]})"),
      mx::ValueError, "node 1 ('n1')", "no op 'NoSuchOp'");
  NDG_CHECK_THROWS_WITH(
      imports(R"({"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "Activation", "name": "a", "attrs": {"act_type": "relu"}, "inputs": [[5, 0, 0]]}], "heads": [[1, 0, 0]]})"),
      mx::FileError, "node 1 ('a')", "bad entry [5,0,0]");
  NDG_CHECK_THROWS_WITH(
      imports(R"({"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "null", "name": "w", "inputs": []}, {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "2", "no_bias": "True"}, "inputs": [[0, 0, 0], [1, 0, 0]]}], "heads": [[2, 0, 0]]})"),
      mx::ValueError, "holds no parameter 'w'");
}

// Every layer alone, eager and hybridized with the same parameters: the same forward, input
// gradient and parameter gradients (bit for bit on the CPU, where the same kernels run on the same
// values), in training and prediction. Dropout draws from the seeded generator in both.
BOOST_AUTO_TEST_CASE(every_layer_replays_its_eager_results) {
  struct Case {
    const char* name;
    std::function<nn::Sequential()> make;
    mx::Shape input;
  };
  const std::vector<Case> cases{
      {"Dense", [] { nn::Sequential s; s.add(nn::Dense(5, "relu")); return s; }, {3, 4}},
      {"Dense no bias", [] { nn::Sequential s; s.add(nn::Dense(2, "", false)); return s; }, {3, 2, 2}},
      {"Conv2D", [] { nn::Sequential s; s.add(nn::Conv2D(3, 3, {.strides = 2, .padding = 1, .activation = "sigmoid"})); return s; }, {2, 2, 7, 7}},
      {"Conv1D", [] { nn::Sequential s; s.add(nn::Conv1D(2, 3, {.dilation = 2})); return s; }, {2, 3, 9}},
      {"MaxPool2D", [] { nn::Sequential s; s.add(nn::Conv2D(2, 1), nn::MaxPool2D(2, {.strides = 1})); return s; }, {2, 3, 5, 5}},
      {"AvgPool2D", [] { nn::Sequential s; s.add(nn::Conv2D(2, 1), nn::AvgPool2D(3, {.strides = 2, .padding = 1})); return s; }, {2, 3, 6, 6}},
      {"GlobalAvgPool2D", [] { nn::Sequential s; s.add(nn::Conv2D(2, 1), nn::GlobalAvgPool2D()); return s; }, {2, 3, 4, 4}},
      {"BatchNorm", [] { nn::Sequential s; s.add(nn::Conv2D(3, 1), nn::BatchNorm()); return s; }, {4, 2, 3, 3}},
      {"Dropout", [] { nn::Sequential s; s.add(nn::Dense(16, "tanh"), nn::Dropout(0.5)); return s; }, {8, 4}},
      {"Flatten", [] { nn::Sequential s; s.add(nn::Conv2D(2, 2), nn::Flatten(), nn::Dense(3)); return s; }, {2, 1, 3, 3}},
  };
  ndg_test::for_each_context([&](mx::Context ctx) {
    const bool exact = ctx.is_cpu();
    for (const Case& c : cases) {
      BOOST_TEST_CONTEXT(c.name << " @" << ctx) {
        nn::Sequential eager = c.make(), hybrid = c.make();
        eager.initialize(mx::init::Xavier(), ctx);
        eager(nd::zeros(c.input, ctx));
        const ndg_test::TempDir dir;
        eager.save_parameters(dir.file("p.params"));
        hybrid.load_parameters(dir.file("p.params"), ctx);
        hybrid.hybridize();
        for (unsigned call = 0; call < 3; ++call) {
          BOOST_TEST_CONTEXT("call " << call) {
            const nd::NDArray x = random_array(c.input, ctx, 70 + call);
            std::vector<nd::NDArray> y, dx;
            for (nn::Sequential* net : {&eager, &hybrid}) {
              nd::NDArray xi = x.copy();
              xi.attach_grad();
              mx::random::seed(3 + call);
              {
                auto recording = ag::record();
                nd::NDArray out = (*net)(xi);
                (out * out).sum().backward();
                y.push_back(out);
              }
              dx.push_back(xi.grad());
            }
            const double rtol = exact ? 0 : 1e-5, atol = exact ? 0 : 1e-6;
            check_close(y[1], y[0].asvector<double>(), rtol, atol);
            check_close(dx[1], dx[0].asvector<double>(), rtol, atol);
            const auto want = eager.collect_params(), got = hybrid.collect_params();
            auto g = got.begin();
            for (auto w = want.begin(); w != want.end(); ++w, ++g) {
              BOOST_TEST_CONTEXT(w->first) {
                if (w->second.grad_req() != "null") {
                  check_close(g->second.grad(ctx), w->second.grad(ctx).asvector<double>(), rtol, 1e-5);
                } else {
                  check_close(g->second.data(ctx), w->second.data(ctx).asvector<double>(), rtol, atol);
                }
              }
            }
            // Prediction: its own graph; Dropout is the identity, BatchNorm reads the running statistics.
            check_close(hybrid(x), eager(x).asvector<double>(), rtol, atol);
          }
        }
      }
    }
  });
}

// Trainer updates the parameters in place, and each replay reads them: a hybridized net trains as
// the eager one does, step for step.
BOOST_AUTO_TEST_CASE(trainer_updates_are_seen_by_the_next_replay) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    auto [eager, hybrid] = twin_nets(ctx, dir);
    hybrid.hybridize(true, true, true);
    mx::gluon::Trainer eager_trainer(eager.collect_params(), "sgd", {{"learning_rate", 0.5}, {"momentum", 0.9}});
    mx::gluon::Trainer hybrid_trainer(hybrid.collect_params(), "sgd", {{"learning_rate", 0.5}, {"momentum", 0.9}});
    const nd::NDArray label = nd::array(std::vector<float>{0, 2, 1, 2, 0}, mx::Shape{5}, ctx);
    for (unsigned s = 0; s < 4; ++s) {
      const nd::NDArray x = random_array({5, 2, 6, 6}, ctx, 90 + s);
      step(eager, x, label);
      step(hybrid, x, label);
      eager_trainer.step(5);
      hybrid_trainer.step(5);
    }
    const auto want = eager.collect_params(), got = hybrid.collect_params();
    auto g = got.begin();
    for (auto w = want.begin(); w != want.end(); ++w, ++g) {
      BOOST_TEST_CONTEXT(w->first) { check_close(g->second.data(ctx), w->second.data(ctx).asvector<double>(), 1e-4, 1e-5); }
    }
    const nd::NDArray x = random_array({5, 2, 6, 6}, ctx, 99);
    check_close(hybrid(x), eager(x).asvector<double>(), 1e-4, 1e-5);
  });
}

// Two recorded calls before one backward: each keeps its own values for its gradient.
BOOST_AUTO_TEST_CASE(two_forwards_before_one_backward) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    auto [eager, hybrid] = twin_nets(ctx, dir);
    hybrid.hybridize();
    const nd::NDArray x1 = random_array({3, 2, 6, 6}, ctx, 11), x2 = random_array({3, 2, 6, 6}, ctx, 12);
    std::vector<std::vector<nd::NDArray>> grads;
    for (nn::Sequential* net : {&eager, &hybrid}) {
      for (unsigned round = 0; round < 2; ++round) {  // the second round replays the graphs
        auto recording = ag::record();
        nd::NDArray y1 = (*net)(x1), y2 = (*net)(x2);
        (y1 * y2).sum().backward();
      }
      std::vector<nd::NDArray> g;
      for (const auto& [name, param] : net->collect_params()) {
        if (param.grad_req() != "null") g.push_back(param.grad(ctx));
      }
      grads.push_back(g);
    }
    for (std::size_t i = 0; i < grads[0].size(); ++i) {
      BOOST_TEST_CONTEXT("gradient " << i) { check_close(grads[1][i], grads[0][i].asvector<double>(), 1e-4, 1e-6); }
    }
  });
}

// A block with a hybridized child, itself hybridized: the child's ops are traced into the parent's
// graph. Eagerly, the child replays its own graph.
class Outer : public mx::gluon::Block {
 public:
  explicit Outer(nn::Sequential inner)
      : Block("outer"), inner_(register_child(inner, "inner")), out_(register_child(nn::Dense(2), "out")) {}
  nd::NDArray forward(const nd::NDArray& x) override { return out_(inner_(x) * 2.0 + 1.0); }

 private:
  nn::Sequential inner_;
  nn::Dense out_;
};

BOOST_AUTO_TEST_CASE(a_hybridized_child_inside_a_hybridized_block) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential inner;
    inner.add(nn::Dense(4, "relu"));
    Outer outer(inner);
    outer.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray x = random_array({3, 5}, ctx, 21);
    const nd::NDArray want = outer(x);
    inner.hybridize();
    check_close(outer(x), want.asvector<double>(), 1e-6, 1e-7);
    outer.hybridize();
    for (int call = 0; call < 2; ++call) check_close(outer(x), want.asvector<double>(), 1e-6, 1e-7);
    const ndg_test::TempDir dir;
    outer.export_model(dir.file("outer"));
    const std::string json = ndg_test::read_bytes(dir.file("outer-symbol.json"));
    BOOST_TEST(json.find("\"op\": \"_mul") != std::string::npos);  // the parent's op and the child's, one graph
    BOOST_TEST(json.find("FullyConnected") != std::string::npos);
  });
}

BOOST_AUTO_TEST_CASE(hybrid_names_are_the_same_blocks) {
  nn::HybridSequential net;
  net.add(nn::Dense(3));
  mx::gluon::HybridBlock& block = net;
  block.initialize();
  block.hybridize();
  BOOST_TEST(block(nd::ones({2, 4})).shape() == (mx::Shape{2, 3}));
}

// The backward graph hands its gradients out without copying them; a gradient the caller keeps
// (autograd::grad) is not overwritten by the next step.
BOOST_AUTO_TEST_CASE(a_kept_gradient_survives_the_next_replay) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    net.add(nn::Dense(6, "relu"), nn::Dense(3));
    net.initialize(mx::init::Xavier(), ctx);
    net.hybridize();
    const auto input_grad = [&](unsigned seed) {
      nd::NDArray x = random_array({4, 5}, ctx, seed);
      x.attach_grad();
      auto recording = ag::record();
      const nd::NDArray y = net(x);
      return ag::grad((y * y).sum(), {x}).at(0);
    };
    input_grad(1);  // the trace
    const nd::NDArray kept = input_grad(2);
    const std::vector<double> want = kept.asvector<double>();
    for (unsigned seed = 3; seed < 6; ++seed) {
      const nd::NDArray other = input_grad(seed);
      BOOST_TEST(other.asvector<double>() != want);
    }
    check_close(kept, want, 0, 0);
  });
}

// A hybridized backward leaves each parameter's gradient in the parameter's own gradient buffer
// (on cpu(0) its graph computes it there, the buffer backward() offers; on a GPU backward copies
// it in): the values are the eager net's, and the buffers are the same arrays as before.
// autograd::grad through the same graph leaves those buffers alone.
BOOST_AUTO_TEST_CASE(backward_writes_the_gradient_buffers_and_grad_leaves_them) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const auto make = [&] {
      nn::Sequential net;
      net.add(nn::Dense(16, "relu"), nn::Dense(3));
      net.initialize(mx::init::Xavier(), ctx);
      return net;
    };
    nn::Sequential eager = make(), hybrid = make();
    const auto e_params = eager.collect_params(), h_params = hybrid.collect_params();
    const nd::NDArray x0 = random_array({4, 5}, ctx, 60);
    eager(x0);
    hybrid(x0);
    {  // the same parameters in both
      auto e = e_params.begin();
      for (auto h = h_params.begin(); h != h_params.end(); ++h, ++e) {
        nd::NDArray dst = h->second.data(ctx);
        e->second.data(ctx).copyto(dst);
      }
    }
    hybrid.hybridize(true, true, true);
    std::vector<nd::NDArray> buffers;
    for (const auto& [name, p] : h_params) buffers.push_back(p.grad(ctx));
    for (unsigned seed = 61; seed < 64; ++seed) {
      const nd::NDArray x = random_array({4, 5}, ctx, seed);
      for (nn::Sequential* net : {&eager, &hybrid}) {
        auto recording = ag::record();
        const nd::NDArray y = (*net)(x);
        (y * y).sum().backward();
      }
      auto e = e_params.begin();
      std::size_t i = 0;
      for (auto h = h_params.begin(); h != h_params.end(); ++h, ++e, ++i) {
        BOOST_TEST_CONTEXT("input " << seed << ", " << h->first) {
          BOOST_TEST(h->second.grad(ctx).is(buffers[i]));
          check_close(buffers[i], e->second.grad(ctx).asvector<double>(), 0, 0);
        }
      }
    }
    std::vector<std::vector<double>> before;
    for (const nd::NDArray& b : buffers) before.push_back(b.asvector<double>());
    nd::NDArray x = random_array({4, 5}, ctx, 70);
    x.attach_grad();
    {
      auto recording = ag::record();
      const nd::NDArray y = hybrid(x);
      ag::grad((y * y).sum(), {x});
    }
    for (std::size_t i = 0; i < buffers.size(); ++i) check_close(buffers[i], before[i], 0, 0);
  });
}

// Predictions are handed out as a replay's own buffers when nobody holds the last one; a result
// that is held is never written by a later call: six results held at once, and results dropped
// one by one as y = net(x) drops them, each equal to the eager net's for its input.
BOOST_AUTO_TEST_CASE(held_predictions_survive_later_replays) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    net.add(nn::Dense(16, "relu"), nn::Dense(3));
    net.initialize(mx::init::Xavier(), ctx);
    std::vector<nd::NDArray> inputs;
    std::vector<std::vector<double>> eager;
    for (unsigned seed = 0; seed < 6; ++seed) {
      inputs.push_back(random_array({2, 5}, ctx, 20 + seed));
      eager.push_back(net(inputs.back()).asvector<double>());
    }
    net.hybridize(true, true, true);
    std::vector<nd::NDArray> held;
    for (const nd::NDArray& x : inputs) held.push_back(net(x));
    for (std::size_t i = 0; i < held.size(); ++i) {
      BOOST_TEST_CONTEXT("held result " << i) { check_close(held[i], eager[i], 0, 0); }
    }
    nd::NDArray y;
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        y = net(inputs[i]);
        BOOST_TEST_CONTEXT("round " << round << ", input " << i) { check_close(y, eager[i], 0, 0); }
      }
    }
    y += 1.0;  // a result written by its owner is the owner's: the next call does not see it
    check_close(net(inputs[0]), eager[0], 0, 0);
  });
}

// A user block whose FullyConnected weight is computed in the forward (2 * weight): in a captured
// replay only the parameters themselves are read before the kernel ahead has finished, never an
// array a step of the graph writes.
class DoubledDense : public mx::gluon::Block {
 public:
  DoubledDense()
      : Block("doubled"), weight_(register_parameter("weight", {3, 5})), bias_(register_parameter("bias", {3})) {}
  nd::NDArray forward(const nd::NDArray& x) override {
    const mx::Context ctx = x.context();
    return nd::FullyConnected(x.relu(), weight_.data(ctx) * 2.0, bias_.data(ctx), 3);
  }
  mx::gluon::Parameter weight_, bias_;
};

BOOST_AUTO_TEST_CASE(weights_computed_in_the_graph_and_new_parameters_are_read_fresh) {
  ndg_test::for_each_context([](mx::Context ctx) {
    DoubledDense block;
    block.initialize(mx::init::Uniform(1.0), ctx);
    block.hybridize(true, true);
    for (const std::int64_t batch : {1, 2}) {
      const nd::NDArray x = random_array({batch, 5}, ctx, 60 + static_cast<unsigned>(batch));
      for (unsigned round = 0; round < 4; ++round) {
        // Rounds 2 and 3 first give the parameters new values (set_data).
        if (round >= 2) {
          block.weight_.set_data(random_array({3, 5}, ctx, 70 + round));
          block.bias_.set_data(random_array({3}, ctx, 80 + round));
        }
        const std::vector<double> xs = x.asvector<double>(), w = block.weight_.data(ctx).asvector<double>(),
                                  b = block.bias_.data(ctx).asvector<double>();
        std::vector<double> want(static_cast<std::size_t>(batch) * 3);
        for (std::size_t m = 0; m < static_cast<std::size_t>(batch); ++m) {
          for (std::size_t n = 0; n < 3; ++n) {
            double sum = b[n];
            for (std::size_t k = 0; k < 5; ++k) sum += std::max(xs[m * 5 + k], 0.0) * 2 * w[n * 5 + k];
            want[m * 3 + n] = sum;
          }
        }
        // The same ops run eagerly; the block's calls: traced, captured, replayed.
        const nd::NDArray eager = nd::FullyConnected(x.relu(), block.weight_.data(ctx) * 2.0, block.bias_.data(ctx), 3);
        check_close(eager, want, 1e-5, 1e-6);
        for (int call = 0; call < 3; ++call) {
          BOOST_TEST_CONTEXT("batch " << batch << ", round " << round << ", call " << call) {
            check_close(block(x), eager.asvector<double>(), 0, 0);
          }
        }
      }
    }
  });
}

// Ops without a gradient inside a hybridized forward (Note [zero gradients]): the parameter that
// reaches the head through sign and a comparison alone gets zero, the other the gradient of its
// differentiable branch, as eagerly; a parameter the forward does not read keeps its gradient
// buffer as it was. y = sum(sign(x * a) + (x * a > 0)) + sum(x * b), so dy/da = 0 and dy/db =
// sum(x) over the batch.
class ZeroGradientBranch : public mx::gluon::Block {
 public:
  ZeroGradientBranch()
      : Block("zerograd"), a_(register_parameter("a", {4})), b_(register_parameter("b", {4})),
        unused_(register_parameter("unused", {4})) {}
  nd::NDArray forward(const nd::NDArray& x) override {
    const mx::Context ctx = x.context();
    const nd::NDArray xa = x * a_.data(ctx);
    return (nd::sign(xa) + (xa > 0.0)).sum() + (x * b_.data(ctx)).sum();
  }
  mx::gluon::Parameter a_, b_, unused_;  // unused_: read by no op, so never reached
};

BOOST_AUTO_TEST_CASE(zero_gradient_ops_replay_with_zero_gradients) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const bool hybridized : {false, true}) {
      ZeroGradientBranch block;
      block.initialize(mx::init::Uniform(1.0), ctx);
      if (hybridized) block.hybridize();
      for (unsigned call = 0; call < 3; ++call) {  // eager, or the trace and two replays
        BOOST_TEST_CONTEXT((hybridized ? "hybridized" : "eager") << ", call " << call) {
          const nd::NDArray x = random_array({3, 4}, ctx, 90 + call);
          block.a_.data(ctx).grad().fill(5);
          block.unused_.data(ctx).grad().fill(5);
          {
            auto recording = mx::autograd::record();
            block(x).backward();
          }
          std::vector<double> column_sums(4, 0.0);
          const std::vector<double> xs = x.asvector<double>();
          for (std::size_t i = 0; i < xs.size(); ++i) column_sums[i % 4] += xs[i];
          check_close(block.a_.data(ctx).grad(), std::vector<double>(4, 0.0), 0, 0);
          check_close(block.b_.data(ctx).grad(), column_sums, 1e-5, 1e-6);
          check_close(block.unused_.data(ctx).grad(), std::vector<double>(4, 5.0), 0, 0);  // as it was
        }
      }
    }
  });
}

// save_parameters and load_parameters on a hybridized net: the file is the eager net's, and the
// next replay reads what was loaded.
BOOST_AUTO_TEST_CASE(save_and_load_on_a_hybridized_net) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const ndg_test::TempDir dir;
    auto [eager, hybrid] = twin_nets(ctx, dir);
    hybrid.hybridize();
    const nd::NDArray x = random_array({3, 2, 6, 6}, ctx, 31);
    check_close(hybrid(x), eager(x).asvector<double>(), 1e-5, 1e-6);
    // Other values into the eager net, saved, loaded into the hybridized one.
    eager.initialize(mx::init::Uniform(0.5), ctx, true);
    eager.save_parameters(dir.file("other.params"));
    hybrid.load_parameters(dir.file("other.params"), ctx);
    check_close(hybrid(x), eager(x).asvector<double>(), 1e-5, 1e-6);
    // And saved from the hybridized net, loaded into a fresh eager one.
    hybrid.save_parameters(dir.file("back.params"));
    nn::Sequential fresh = small_net();
    fresh.load_parameters(dir.file("back.params"), ctx);
    check_close(fresh(x), eager(x).asvector<double>(), 1e-5, 1e-6);
  });
}

// What changes a block after its trace: a frozen or unfrozen parameter, a child added, a second
// backward through one forward, a forward with nothing to differentiate.
BOOST_AUTO_TEST_CASE(changes_after_the_trace_are_followed) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::Sequential net;
    nn::Dense first(4, "relu"), second(3);
    net.add(first, second);
    net.initialize(mx::init::Xavier(), ctx);
    net.hybridize();
    const nd::NDArray x = random_array({2, 5}, ctx, 41);
    const auto weight_grad_norm = [&](nn::Dense& layer) {
      {
        auto recording = ag::record();
        (net(x) * net(x)).sum().backward();
      }
      return nd::sum(layer.weight().grad(ctx) * layer.weight().grad(ctx)).asscalar<double>();
    };
    BOOST_TEST(weight_grad_norm(first) > 0.0);
    // Frozen: no gradient flows to it, and a result with nothing to differentiate is not recorded.
    for (auto& [name, param] : net.collect_params()) param.set_grad_req("null");
    {
      auto recording = ag::record();
      const nd::NDArray y = net(x);
      BOOST_TEST(y.autograd_node() == nullptr);
    }
    // Unfrozen: traced again, gradients flow.
    for (auto& [name, param] : net.collect_params()) param.set_grad_req("write");
    first.weight().zero_grad();
    BOOST_TEST(weight_grad_norm(first) > 0.0);
    // A child added after the trace is part of the next call.
    nn::Dense third(1);
    third.initialize(mx::init::Xavier(), ctx);
    net.add(third);
    BOOST_TEST(net(x).shape() == (mx::Shape{2, 1}));
    // autograd::grad twice through one recorded forward: the first result stays.
    nd::NDArray xv = x.copy();
    xv.attach_grad();
    nd::NDArray once, thrice;
    {
      auto recording = ag::record();
      const nd::NDArray y = net(xv);
      once = y.sum();
      thrice = (y * 3.0).sum();
    }
    const nd::NDArray g1 = ag::grad(once, {xv}).at(0);
    const std::vector<double> want = g1.asvector<double>();
    const nd::NDArray g2 = ag::grad(thrice, {xv}).at(0);
    check_close(g1, want, 0, 0);
    std::vector<double> tripled = want;
    for (double& v : tripled) v *= 3;
    check_close(g2, tripled, 1e-5, 1e-6);
  });
}

BOOST_AUTO_TEST_SUITE_END()
