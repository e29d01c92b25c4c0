// Symbol JSON in MXNet 1.x's spelling (ndarray/graph/graph.hpp): a traced graph written with MXNet's op
// names (broadcast_add, _plus_scalar, _rminus_scalar: no "reverse" attribute) and its parameters'
// "__shape__" hints, read back to the same ops and values; JSON as MXNet writes it (broadcast_mul,
// _rdiv_scalar, elemwise_add, identity, BlockGrad, LeakyReLU, SoftmaxOutput with its label
// variable, "__shape__" / "__dtype__" hints) imported, its label dropped by graph::drop_labels and
// run on every context against hand-computed values; MXNet 0.8's JSON upgraded as MXNet 1.9 loads
// it (hidden keys, BatchNorm's auxiliary states, argmax's axis) and run against nd ops; and the
// typed errors naming the node or the file.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>
#include <ndarray/ops/nn.hpp>
#include <ndarray/ops/softmax.hpp>

#include "ndarray/graph/graph.hpp"
#include "ndarray/ops/op.hpp"

namespace nd = mx::nd;
namespace op = mx::op;
namespace graph = mx::graph;
namespace tt = boost::test_tools;
using ndg_test::check_close;
using ndg_test::Values;
using ndg_test::values;

namespace {

const op::OpDef& op_named(const std::string& name) {
  const op::OpDef* def = op::find_op(name);
  BOOST_TEST_REQUIRE(def != nullptr, name << " is not registered");
  return *def;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const graph::Node& node_named(const graph::Graph& g, const std::string& name) {
  const auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const graph::Node& n) { return n.name == name; });
  BOOST_TEST_REQUIRE((it != g.nodes.end()), "no node " << name);
  return *it;
}

// The attributes a node's op writes for its params.
op::AttrPairs attrs_of(const graph::Node& node) { return node.op->attrs ? node.op->attrs(node.params) : op::AttrPairs{}; }

// tanh(FullyConnected(x, w, b)) followed by an add, scalar ops plain and reversed, and comparisons
// with the scalar first (heads: the arithmetic and the two masks).
std::vector<nd::NDArray> small_model(const std::vector<nd::NDArray>& in, const nd::NDArray& w, const nd::NDArray& b) {
  const op::OpDef* activation = op::find_op("Activation");
  BOOST_TEST_REQUIRE(activation != nullptr);
  const nd::NDArray h =
      op::invoke1(*activation, {nd::FullyConnected(in[0], w, b, 4)}, activation->parse_attrs({{"act_type", "tanh"}}));
  const nd::NDArray sum = h + h;           // add
  const nd::NDArray plus = sum + 2.0;      // _add_scalar
  const nd::NDArray minus = 3.0 - plus;    // _subtract_scalar, reverse
  const nd::NDArray quotient = 2.0 / (minus * minus + 1.0);  // _divide_scalar, reverse
  const nd::NDArray above = 2.5 > plus;    // _greater_scalar, reverse: plus < 2.5
  const nd::NDArray below = 0.5 <= quotient;  // _less_equal_scalar, reverse: quotient >= 0.5
  return {quotient, above, below};
}

// What small_model computes, in double, for x (rows, 3), w (4, 3), b (4,).
std::vector<Values> small_model_reference(const Values& x, const Values& w, const Values& b, std::size_t rows) {
  std::vector<Values> out(3);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < 4; ++j) {
      double t = b[j];
      for (std::size_t k = 0; k < 3; ++k) t += x[r * 3 + k] * w[j * 3 + k];
      const double plus = 2 * std::tanh(t) + 2, minus = 3 - plus, quotient = 2 / (minus * minus + 1);
      out[0].push_back(quotient);
      out[1].push_back(2.5 > plus ? 1 : 0);
      out[2].push_back(0.5 <= quotient ? 1 : 0);
    }
  }
  return out;
}

// softmax of each row of x (rows, classes), in double.
Values softmax_rows(const Values& x, std::size_t classes) {
  Values y(x.size());
  for (std::size_t r = 0; r < x.size() / classes; ++r) {
    double max = x[r * classes], sum = 0;
    for (std::size_t k = 0; k < classes; ++k) max = std::max(max, x[r * classes + k]);
    for (std::size_t k = 0; k < classes; ++k) sum += std::exp(x[r * classes + k] - max);
    for (std::size_t k = 0; k < classes; ++k) y[r * classes + k] = std::exp(x[r * classes + k] - max) / sum;
  }
  return y;
}

// A model as MXNet 1.9 writes it: fc = FullyConnected(data, w, no_bias), m = broadcast_mul(fc,
// scale), a = LeakyReLU(m, slope 0.1), q = _rdiv_scalar(_plus_scalar(a, 3), 10) (10 / (a + 3)),
// s = identity(elemwise_add(q, a)), softmax = SoftmaxOutput(BlockGrad(s), softmax_label).
const char* kMxnetJson = R"json({
  "nodes": [
    {"op": "null", "name": "data", "attrs": {"__shape__": "(0, 3)"}, "inputs": []},
    {"op": "null", "name": "w", "attrs": {"__dtype__": "0", "__shape__": "(2, 3)", "__lr_mult__": "1.0"}, "inputs": []},
    {"op": "FullyConnected", "name": "fc", "attrs": {"no_bias": "True", "num_hidden": "2", "flatten": "True"},
     "inputs": [[0, 0, 0], [1, 0, 0]]},
    {"op": "null", "name": "scale", "attrs": {"__shape__": "(1, 2)", "__dtype__": "0"}, "inputs": []},
    {"op": "broadcast_mul", "name": "m", "inputs": [[2, 0, 0], [3, 0, 0]]},
    {"op": "LeakyReLU", "name": "a", "attrs": {"act_type": "leaky", "slope": "0.1", "lower_bound": "0.125",
     "upper_bound": "0.334"}, "inputs": [[4, 0, 0]]},
    {"op": "_plus_scalar", "name": "p", "attrs": {"scalar": "3.0", "is_int": "False"}, "inputs": [[5, 0, 0]]},
    {"op": "_rdiv_scalar", "name": "q", "attrs": {"scalar": "10.0"}, "inputs": [[6, 0, 0]]},
    {"op": "elemwise_add", "name": "e", "attrs": {"__profiler_scope__": "model:"}, "inputs": [[7, 0, 0], [5, 0, 0]]},
    {"op": "identity", "name": "s", "inputs": [[8, 0, 0]]},
    {"op": "BlockGrad", "name": "blockgrad0", "inputs": [[9, 0, 0]]},
    {"op": "null", "name": "softmax_label", "inputs": []},
    {"op": "SoftmaxOutput", "name": "softmax", "attrs": {"grad_scale": "1.0", "ignore_label": "-1.0",
     "multi_output": "False", "normalization": "batch", "preserve_shape": "False", "use_ignore": "False"},
     "inputs": [[10, 0, 0], [11, 0, 0]]}
  ],
  "arg_nodes": [0, 1, 3, 11],
  "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
  "heads": [[12, 0, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})json";

// kMxnetJson's values for data = [[1, 2, 3], [-1, 0, 1]], w = [[1, 0, 0], [0, 1, 1]],
// scale = [[2, 0.5]]: fc = [[1, 5], [-1, 1]], m = [[2, 2.5], [-2, 0.5]], a = [[2, 2.5], [-0.2, 0.5]],
// q = 10 / (a + 3), s = q + a, and the softmax of s's rows.
Values mxnet_model_reference() {
  const Values a{2, 2.5, -0.2, 0.5};
  Values s;
  for (const double v : a) s.push_back(10 / (v + 3) + v);
  return softmax_rows(s, 2);
}

// The node's annotation `key`, or none.
std::optional<std::string> annotation(const graph::Node& node, const std::string& key) {
  for (const auto& [name, value] : node.annotations) {
    if (name == key) return value;
  }
  return std::nullopt;
}

// MXNet 0.8's save_000800.json, byte for byte as MXNet's own test_load_000800 reads it
// (tests/python/unittest/save_000800.json): op attributes under "param", ctx_group / lr_mult /
// wd_mult / weight_lr_mult under "attr", "backward_source_id", [node, index] entries, no
// node_row_ptr and no attrs.mxnet_version, and BatchNorm saved with data, gamma and beta only.
const char* kMxnet080Json = R"json({
  "nodes": [
    {
      "op": "null", 
      "param": {}, 
      "name": "data", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "lr_mult": "0.2"
      }
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc1_weight", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "wd_mult": "0.3", 
        "weight_lr_mult": "1.2"
      }
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc1_bias", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "wd_mult": "0.3", 
        "weight_lr_mult": "1.2"
      }
    }, 
    {
      "op": "FullyConnected", 
      "param": {
        "no_bias": "False", 
        "num_hidden": "128"
      }, 
      "name": "fc1", 
      "inputs": [[0, 0], [1, 0], [2, 0]], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage1", 
        "wd_mult": "0.3", 
        "weight_lr_mult": "1.2"
      }
    }, 
    {
      "op": "Activation", 
      "param": {"act_type": "relu"}, 
      "name": "relu1", 
      "inputs": [[3, 0]], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage1"}
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc2_weight", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage2", 
        "lr_mult": "0.01"
      }
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc2_bias", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage2", 
        "lr_mult": "0.01"
      }
    }, 
    {
      "op": "FullyConnected", 
      "param": {
        "no_bias": "False", 
        "num_hidden": "64"
      }, 
      "name": "fc2", 
      "inputs": [[4, 0], [5, 0], [6, 0]], 
      "backward_source_id": -1, 
      "attr": {
        "ctx_group": "stage2", 
        "lr_mult": "0.01"
      }
    }, 
    {
      "op": "Activation", 
      "param": {"act_type": "relu"}, 
      "name": "relu2", 
      "inputs": [[7, 0]], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc3_weight", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "fc3_bias", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "FullyConnected", 
      "param": {
        "no_bias": "False", 
        "num_hidden": "10"
      }, 
      "name": "fc3", 
      "inputs": [[8, 0], [9, 0], [10, 0]], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "batchnorm0_gamma", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "batchnorm0_beta", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "BatchNorm", 
      "param": {
        "eps": "0.001", 
        "fix_gamma": "True", 
        "momentum": "0.9", 
        "use_global_stats": "False"
      }, 
      "name": "batchnorm0", 
      "inputs": [[11, 0], [12, 0], [13, 0]], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "null", 
      "param": {}, 
      "name": "softmax_label", 
      "inputs": [], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }, 
    {
      "op": "SoftmaxOutput", 
      "param": {
        "grad_scale": "1", 
        "ignore_label": "-1", 
        "multi_output": "False", 
        "normalization": "null", 
        "out_grad": "False", 
        "preserve_shape": "False", 
        "use_ignore": "False"
      }, 
      "name": "softmax", 
      "inputs": [[14, 0], [15, 0]], 
      "backward_source_id": -1, 
      "attr": {"ctx_group": "stage2"}
    }
  ], 
  "arg_nodes": [0, 1, 2, 5, 6, 9, 10, 12, 13, 15], 
  "heads": [[16, 0]]
})json";

}  // namespace

BOOST_AUTO_TEST_SUITE(graph_json)

BOOST_AUTO_TEST_CASE(a_traced_graph_is_written_with_mxnet_names_and_read_back) {
  const Values xv = ndg_test::uniform_values(2 * 3, 31), wv = ndg_test::uniform_values(4 * 3, 32),
               bv = ndg_test::uniform_values(4, 33);
  const nd::NDArray w = nd::array(wv, {4, 3}), b = nd::array(bv, {4});
  const graph::NameOf name_of = [&](const nd::NDArray& a) -> std::optional<graph::Named> {
    if (a.is(w)) return graph::Named{"dense0_weight", w};
    if (a.is(b)) return graph::Named{"dense0_bias", b};
    return std::nullopt;
  };
  const graph::Graph g = graph::trace([&](const std::vector<nd::NDArray>& in) { return small_model(in, w, b); },
                                      {nd::array(xv, {2, 3})}, {"data"}, name_of);
  const std::string json = graph::to_json(g);
  for (const char* part : {"\"op\": \"broadcast_add\"", "\"op\": \"_plus_scalar\"", "\"op\": \"_rminus_scalar\"",
                           "\"op\": \"_rdiv_scalar\"", "\"op\": \"broadcast_mul\"", "\"op\": \"_lesser_scalar\"",
                           "\"op\": \"_greater_equal_scalar\"", "\"op\": \"Activation\"", "\"act_type\": \"tanh\"",
                           "\"op\": \"FullyConnected\"", "\"__shape__\": \"(4, 3)\"", "\"__shape__\": \"(4,)\""}) {
    BOOST_TEST_CONTEXT(part) { BOOST_TEST(contains(json, part)); }
  }
  for (const char* absent : {"reverse", "\"op\": \"add\"", "\"op\": \"_add_scalar\"", "\"op\": \"_subtract_scalar\""}) {
    BOOST_TEST_CONTEXT(absent) { BOOST_TEST(!contains(json, absent)); }
  }

  const graph::Graph back = graph::from_json(json);
  BOOST_TEST_REQUIRE(back.nodes.size() == g.nodes.size());
  BOOST_TEST((back.variable_names() == std::vector<std::string>{"data", "dense0_weight", "dense0_bias"}));
  BOOST_TEST(!back.nodes[0].shape_hint.has_value());  // the input's batch extent varies
  BOOST_TEST((node_named(back, "dense0_weight").shape_hint == std::optional<mx::Shape>(mx::Shape{4, 3})));
  BOOST_TEST((node_named(back, "dense0_bias").shape_hint == std::optional<mx::Shape>(mx::Shape{4})));
  // The same op and attributes, the reversed scalar ops included; the comparisons with the scalar
  // first come back turned around (2.5 > x as x < 2.5), which computes the same.
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const graph::Node &before = g.nodes[n], &after = back.nodes[n];
    BOOST_TEST_CONTEXT("node " << n << " " << before.name) {
      BOOST_TEST(after.name == before.name);
      BOOST_TEST(after.is_variable() == before.is_variable());
      BOOST_TEST((after.inputs == before.inputs));
      const std::string name = before.is_variable() ? "" : before.op->name;
      if (before.is_variable() || name == "_greater_scalar" || name == "_less_equal_scalar") continue;
      BOOST_TEST(std::string(after.op->name) == before.op->name);
      BOOST_TEST((attrs_of(after) == attrs_of(before)));
    }
  }
  const op::AttrPairs reversed{{"scalar", "3.0"}, {"reverse", "True"}};
  BOOST_TEST((attrs_of(node_named(back, "_subtract_scalar0")) == reversed));
  BOOST_TEST(std::string(node_named(back, "_greater_scalar0").op->name) == "_less_scalar");
  BOOST_TEST(std::string(node_named(back, "_less_equal_scalar0").op->name) == "_greater_equal_scalar");

  // Run on every context on new data: the written graph, the read one and the reference agree.
  const std::size_t rows = 3;
  const Values x2 = ndg_test::uniform_values(rows * 3, 34);
  const std::vector<Values> want = small_model_reference(x2, wv, bv, rows);
  ndg_test::for_each_context([&](mx::Context ctx) {
    const std::map<std::string, nd::NDArray> variables{{"data", nd::array(x2, {3, 3}, ctx)},
                                                       {"dense0_weight", w.copyto(ctx)},
                                                       {"dense0_bias", b.copyto(ctx)}};
    const std::vector<nd::NDArray> traced = graph::run(g, variables), read = graph::run(back, variables);
    BOOST_TEST_REQUIRE(read.size() == 3u);
    for (std::size_t h = 0; h < 3; ++h) {
      BOOST_TEST_CONTEXT("head " << h) {
        BOOST_TEST(read[h].context() == ctx);
        BOOST_TEST(values(read[h]) == values(traced[h]), tt::per_element());
        check_close(read[h], want[h], 1e-5, 1e-6);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(mxnet_names_stand_for_ops_and_attributes_both_ways) {
  const std::vector<std::pair<std::string, std::string>> plain{
      {"add", "broadcast_add"}, {"subtract", "broadcast_sub"}, {"less", "broadcast_lesser"},
      {"_add_scalar", "_plus_scalar"}, {"_multiply_scalar", "_mul_scalar"}, {"_copy", "_copy"},
      {"BlockGrad", "BlockGrad"}, {"LeakyReLU", "LeakyReLU"}, {"SoftmaxOutput", "SoftmaxOutput"}};
  for (const auto& [ndgluon, mxnet] : plain) {
    BOOST_TEST_CONTEXT(ndgluon) {
      op::AttrPairs attrs;
      BOOST_TEST(op::mxnet_name(op_named(ndgluon), attrs) == mxnet);
      BOOST_TEST(op::find_op(mxnet, attrs) == &op_named(ndgluon));
      BOOST_TEST(attrs.empty());
    }
  }
  // reverse=True is in the name, and comes back from it.
  for (const auto& [ndgluon, mxnet] : std::vector<std::pair<std::string, std::string>>{
           {"_subtract_scalar", "_rminus_scalar"}, {"_divide_scalar", "_rdiv_scalar"}, {"_power_scalar", "_rpower_scalar"}}) {
    BOOST_TEST_CONTEXT(ndgluon) {
      op::AttrPairs attrs{{"scalar", "2.0"}, {"reverse", "True"}};
      BOOST_TEST(op::mxnet_name(op_named(ndgluon), attrs) == mxnet);
      BOOST_TEST((attrs == op::AttrPairs{{"scalar", "2.0"}}));
      BOOST_TEST(op::find_op(mxnet, attrs) == &op_named(ndgluon));
      BOOST_TEST((attrs == op::AttrPairs{{"scalar", "2.0"}, {"reverse", "True"}}));
    }
  }
  // MXNet's other names of the same ops.
  for (const auto& [mxnet, ndgluon] : std::vector<std::pair<std::string, std::string>>{
           {"elemwise_add", "add"}, {"_plus", "add"}, {"elemwise_mul", "multiply"}, {"identity", "_copy"},
           {"stop_gradient", "BlockGrad"}, {"Softmax", "SoftmaxOutput"}, {"flatten", "Flatten"}}) {
    BOOST_TEST_CONTEXT(mxnet) {
      op::AttrPairs attrs;
      BOOST_TEST(op::find_op(mxnet, attrs) == &op_named(ndgluon));
    }
  }
  op::AttrPairs none;
  BOOST_TEST(op::find_op("_rminus_scalar") == nullptr);  // the form without attributes cannot say reverse
  BOOST_TEST(op::find_op("no_such_op", none) == nullptr);
}

BOOST_AUTO_TEST_CASE(mxnet_json_imports_drops_its_label_and_runs_on_every_context) {
  graph::Graph g = graph::from_json(kMxnetJson, "model-symbol.json");
  BOOST_TEST((g.variable_names() == std::vector<std::string>{"data", "w", "scale", "softmax_label"}));
  // The hints: 0 for the extent not known.
  BOOST_TEST((node_named(g, "data").shape_hint == std::optional<mx::Shape>(mx::Shape{0, 3})));
  BOOST_TEST((node_named(g, "w").shape_hint == std::optional<mx::Shape>(mx::Shape{2, 3})));
  BOOST_TEST(!node_named(g, "softmax_label").shape_hint.has_value());
  // MXNet's names as ndgluon's ops; _rdiv_scalar as _divide_scalar with reverse.
  BOOST_TEST(std::string(node_named(g, "m").op->name) == "multiply");
  BOOST_TEST(std::string(node_named(g, "e").op->name) == "add");
  BOOST_TEST(std::string(node_named(g, "s").op->name) == "_copy");
  BOOST_TEST(std::string(node_named(g, "p").op->name) == "_add_scalar");
  BOOST_TEST(std::string(node_named(g, "q").op->name) == "_divide_scalar");
  BOOST_TEST((attrs_of(node_named(g, "q")) == op::AttrPairs{{"scalar", "10.0"}, {"reverse", "True"}}));

  const Values data{1, 2, 3, -1, 0, 1}, w{1, 0, 0, 0, 1, 1};
  const Values want = mxnet_model_reference();
  ndg_test::for_each_context([&](mx::Context ctx) {
    std::map<std::string, nd::NDArray> variables{{"data", nd::array(data, {2, 3}, ctx, mx::DType::float32)},
                                                 {"w", nd::array(w, {2, 3}, ctx, mx::DType::float32)},
                                                 {"scale", nd::array({{2, 0.5}}, ctx)}};
    // With its label, as trained; without, the label variable is missing.
    NDG_CHECK_THROWS_WITH(graph::run(g, variables), mx::ValueError, "softmax_label");
    variables["softmax_label"] = nd::array({1, 0}, ctx);
    check_close(graph::run(g, variables).at(0), want);
    variables.erase("softmax_label");
    graph::Graph predict = g;
    BOOST_TEST((graph::drop_labels(predict, {"data"}) == std::vector<std::string>{"softmax_label"}));
    BOOST_TEST((predict.variable_names() == std::vector<std::string>{"data", "w", "scale"}));
    const nd::NDArray y = graph::run(predict, variables).at(0);
    BOOST_TEST(y.context() == ctx);
    BOOST_TEST(y.shape() == (mx::Shape{2, 2}));
    check_close(y, want);
    // The graph without its label still writes and reads as MXNet's JSON.
    const std::string json = graph::to_json(predict);
    BOOST_TEST(!contains(json, "softmax_label"));
    BOOST_TEST(contains(json, "\"op\": \"SoftmaxOutput\""));
    BOOST_TEST(contains(json, "\"op\": \"BlockGrad\""));
    BOOST_TEST(contains(json, "\"op\": \"LeakyReLU\""));
    check_close(graph::run(graph::from_json(json), variables).at(0), want);
  });
}

BOOST_AUTO_TEST_CASE(drop_labels_keeps_labels_that_are_read_or_named) {
  const graph::Graph g = graph::from_json(kMxnetJson);
  graph::Graph kept = g;
  BOOST_TEST(graph::drop_labels(kept, {"data", "softmax_label"}).empty());
  BOOST_TEST(kept.nodes.size() == g.nodes.size());
  // A label that another node reads too stays.
  std::string json = kMxnetJson;
  const std::string head = "\"heads\": [[12, 0, 0]]";
  json.replace(json.find(head), head.size(), "\"heads\": [[12, 0, 0], [11, 0, 0]]");
  graph::Graph read_twice = graph::from_json(json);
  BOOST_TEST(graph::drop_labels(read_twice, {"data"}).empty());
  BOOST_TEST(read_twice.variable_names().size() == 4u);
  // A graph without a loss head is left as it is.
  graph::Graph plain = graph::from_json(
      R"({"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "null", "name": "label", "inputs": []},
          {"op": "broadcast_sub", "name": "d", "inputs": [[0, 0, 0], [1, 0, 0]]}], "heads": [[2, 0, 0]]})");
  BOOST_TEST(graph::drop_labels(plain, {"data"}).empty());
  BOOST_TEST(plain.nodes.size() == 3u);
}

BOOST_AUTO_TEST_CASE(bad_hints_and_unknown_ops_name_the_node) {
  const auto with_variable_attrs = [](const std::string& attrs) {
    return R"j({"nodes": [{"op": "null", "name": "data", "attrs": )j" + attrs +
           R"j(, "inputs": []}, {"op": "BlockGrad", "name": "b", "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]})j";
  };
  NDG_CHECK_THROWS_WITH(graph::from_json(with_variable_attrs(R"j({"__shape__": "(2, x)"})j"), "m.json"), mx::ValueError,
                        "m.json", "node 0 ('data')", "__shape__", "(2, x)");
  NDG_CHECK_THROWS_WITH(graph::from_json(with_variable_attrs(R"j({"__shape__": "(2, -3)"})j"), "m.json"),
                        mx::ValueError, "node 0 ('data')", "(2, -3)");
  NDG_CHECK_THROWS_WITH(graph::from_json(with_variable_attrs(R"j({"__dtype__": "float32"})j"), "m.json"),
                        mx::ValueError, "node 0 ('data')", "__dtype__", "float32");
  // Unknown extents (-1 under NumPy shape semantics, 0) and hidden keys ndgluon has no use for.
  const graph::Graph g =
      graph::from_json(with_variable_attrs(R"j({"__shape__": "(-1, 3)", "__dtype__": "1", "__init__": "zeros"})j"));
  BOOST_TEST((g.nodes[0].shape_hint == std::optional<mx::Shape>(mx::Shape{0, 3})));
  BOOST_TEST(!graph::from_json(with_variable_attrs(R"j({"__shape__": "()"})j")).nodes[0].shape_hint.has_value());

  NDG_CHECK_THROWS_WITH(
      graph::from_json(R"j({"nodes": [{"op": "null", "name": "data", "inputs": []},
          {"op": "LeakyReLU", "name": "act", "attrs": {"act_type": "prelu"}, "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]})j",
                       "m.json"),
      mx::ValueError, "m.json", "node 1 ('act')", "LeakyReLU", "act_type", "prelu");
  NDG_CHECK_THROWS_WITH(
      graph::from_json(R"j({"nodes": [{"op": "null", "name": "data", "inputs": []},
          {"op": "SoftmaxOutput", "name": "out", "attrs": {"multi_output": "True"}, "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]})j",
                       "m.json"),
      mx::ValueError, "node 1 ('out')", "SoftmaxOutput", "multi_output");
  NDG_CHECK_THROWS_WITH(
      graph::from_json(R"j({"nodes": [{"op": "null", "name": "data", "inputs": []},
          {"op": "_rfancy_scalar", "name": "f", "attrs": {"scalar": "1"}, "inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]})j",
                       "m.json"),
      mx::ValueError, "node 1 ('f')", "_rfancy_scalar");
}

BOOST_AUTO_TEST_CASE(mxnet_0_8_json_is_upgraded_as_mxnet_1_9_loads_it) {
  const graph::Graph g = graph::from_json(kMxnet080Json, "save_000800.json");
  // BatchNorm's auxiliary states, added as its inputs 3 and 4 just before it (UpgradeJSON_000800_000900).
  BOOST_TEST(g.nodes.size() == 19u);
  BOOST_TEST((g.variable_names() ==
              std::vector<std::string>{"data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "fc3_weight", "fc3_bias",
                                       "batchnorm0_gamma", "batchnorm0_beta", "batchnorm0_moving_mean",
                                       "batchnorm0_moving_var", "softmax_label"}));
  const graph::Node& bn = node_named(g, "batchnorm0");
  BOOST_TEST_REQUIRE(bn.inputs.size() == 5u);
  BOOST_TEST(g.nodes[bn.inputs[3].node].name == "batchnorm0_moving_mean");
  BOOST_TEST(g.nodes[bn.inputs[4].node].name == "batchnorm0_moving_var");
  BOOST_TEST((attrs_of(bn) == op::AttrPairs{{"eps", "0.001"}, {"momentum", "0.9"}, {"fix_gamma", "True"},
                                             {"use_global_stats", "False"}, {"axis", "1"}}));
  // The old keys as MXNet's hidden ones (UpgradeJSON_FixParsing): fc1's weight_lr_mult onto its
  // weight variable; a variable's own weight_lr_mult stays as written.
  const auto check = [&](const std::string& node, const std::string& key, const std::optional<std::string>& want) {
    BOOST_TEST_CONTEXT(node << " " << key) { BOOST_TEST((annotation(node_named(g, node), key) == want)); }
  };
  check("data", "__ctx_group__", "stage1");
  check("data", "__lr_mult__", "0.2");
  check("data", "ctx_group", std::nullopt);
  check("fc1_weight", "__lr_mult__", "1.2");
  check("fc1_weight", "__wd_mult__", "0.3");
  check("fc1_weight", "weight_lr_mult", "1.2");
  check("fc1_bias", "__lr_mult__", std::nullopt);
  check("fc1_bias", "weight_lr_mult", "1.2");
  check("fc1", "__ctx_group__", "stage1");
  check("fc1", "__wd_mult__", "0.3");
  check("fc1", "weight_lr_mult", std::nullopt);
  check("fc2", "__lr_mult__", "0.01");
  check("softmax", "__ctx_group__", "stage2");
  // The new variables carry a copy of their node's dict, and BatchNorm's compose-time __init__
  // (UpgradeJSON_000903_000904).
  check("batchnorm0_moving_mean", "__ctx_group__", "stage2");
  check("batchnorm0_moving_mean", "eps", "0.001");
  check("batchnorm0_moving_mean", "__init__", "[\"zero\", {}]");
  check("batchnorm0_moving_var", "__init__", "[\"one\", {}]");
  check("batchnorm0_gamma", "__init__", std::nullopt);

  // Written as MXNet 1.9 saves the upgraded symbol, and read back to the same graph.
  const std::string json = graph::to_json(g);
  for (const char* part : {"\"__ctx_group__\": \"stage2\"", "\"__lr_mult__\": \"1.2\"", "\"__wd_mult__\": \"0.3\"",
                           "\"name\": \"batchnorm0_moving_var\"", "\"__init__\": \"[\\\"one\\\", {}]\"",
                           "\"mxnet_version\"", "\"node_row_ptr\""}) {
    BOOST_TEST_CONTEXT(part) { BOOST_TEST(contains(json, part)); }
  }
  for (const char* absent : {"\"ctx_group\"", "\"lr_mult\"", "\"param\"", "backward_source_id"}) {
    BOOST_TEST_CONTEXT(absent) { BOOST_TEST(!contains(json, absent)); }
  }
  BOOST_TEST(graph::to_json(graph::from_json(json)) == json);

  // Run on every context, label dropped, in prediction, against the same model of nd ops on cpu(0).
  graph::Graph predict = g;
  BOOST_TEST((graph::drop_labels(predict, {"data"}) == std::vector<std::string>{"softmax_label"}));
  const std::map<std::string, mx::Shape> shapes{
      {"data", {3, 7}},      {"fc1_weight", {128, 7}}, {"fc1_bias", {128}},         {"fc2_weight", {64, 128}},
      {"fc2_bias", {64}},    {"fc3_weight", {10, 64}}, {"fc3_bias", {10}},          {"batchnorm0_gamma", {10}},
      {"batchnorm0_beta", {10}}, {"batchnorm0_moving_mean", {10}}, {"batchnorm0_moving_var", {10}}};
  std::map<std::string, nd::NDArray> host;
  unsigned seed = 80;
  for (const auto& [name, shape] : shapes) host[name] = ndg_test::random_array(shape, mx::cpu(), seed++);
  host["batchnorm0_moving_var"] = host["batchnorm0_moving_var"] + 1.5;  // a variance, > 0
  nd::BatchNormOptions bn_options;
  bn_options.eps = 0.001;
  bn_options.fix_gamma = true;
  const nd::NDArray h1 = nd::FullyConnected(host["data"], host["fc1_weight"], host["fc1_bias"], 128, false, true, "relu");
  const nd::NDArray h2 = nd::FullyConnected(h1, host["fc2_weight"], host["fc2_bias"], 64, false, true, "relu");
  const nd::NDArray h3 = nd::FullyConnected(h2, host["fc3_weight"], host["fc3_bias"], 10);
  const Values want = values(nd::softmax(nd::BatchNorm(h3, host["batchnorm0_gamma"], host["batchnorm0_beta"],
                                                       host["batchnorm0_moving_mean"], host["batchnorm0_moving_var"],
                                                       bn_options)));
  ndg_test::for_each_context([&](mx::Context ctx) {
    std::map<std::string, nd::NDArray> variables;
    for (const auto& [name, array] : host) variables[name] = array.copyto(ctx);
    const nd::NDArray y = graph::run(predict, variables).at(0);
    BOOST_TEST(y.context() == ctx);
    BOOST_TEST(y.shape() == (mx::Shape{3, 10}));
    check_close(y, want, 1e-5, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(files_of_today_load_as_before) {
  // MXNet 1.9's layout: no node added, the hidden keys kept as annotations and written back.
  const graph::Graph g = graph::from_json(kMxnetJson);
  BOOST_TEST(g.nodes.size() == 13u);
  BOOST_TEST((annotation(node_named(g, "w"), "__lr_mult__") == std::optional<std::string>("1.0")));
  BOOST_TEST((annotation(node_named(g, "w"), "__shape__") == std::nullopt));  // the shape_hint
  BOOST_TEST((annotation(node_named(g, "e"), "__profiler_scope__") == std::optional<std::string>("model:")));
  const std::string json = graph::to_json(g);
  BOOST_TEST(contains(json, "\"__profiler_scope__\": \"model:\""));
  BOOST_TEST(graph::to_json(graph::from_json(json)) == json);
  // A file of 1.9.1 is not upgraded: a bare ctx_group is an attribute the op refuses, as MXNet does.
  NDG_CHECK_THROWS_WITH(
      graph::from_json(R"j({"nodes": [{"op": "null", "name": "data", "inputs": []},
          {"op": "Activation", "name": "a", "attrs": {"act_type": "relu", "ctx_group": "dev1"}, "inputs": [[0, 0, 0]]}],
          "heads": [[1, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}})j",
                       "m.json"),
      mx::ValueError, "m.json", "node 1 ('a')", "ctx_group");
  // An older one is: the same key becomes __ctx_group__.
  const graph::Graph old = graph::from_json(R"j({"nodes": [{"op": "null", "name": "data", "inputs": []},
      {"op": "Activation", "name": "a", "attrs": {"act_type": "relu", "ctx_group": "dev1"}, "inputs": [[0, 0, 0]]}],
      "heads": [[1, 0, 0]], "attrs": {"mxnet_version": ["int", 10600]}})j");
  BOOST_TEST((annotation(old.nodes[1], "__ctx_group__") == std::optional<std::string>("dev1")));
}

BOOST_AUTO_TEST_CASE(legacy_argmax_axis_minus_one_meant_every_element) {
  const auto argmax = [](const std::string& version) {
    return graph::from_json(R"j({"nodes": [{"op": "null", "name": "x", "inputs": []},
        {"op": "argmax", "name": "a", "param": {"axis": "-1"}, "inputs": [[0, 0]]}], "arg_nodes": [0], "heads": [[1, 0]])j" +
                            version + "}");
  };
  BOOST_TEST((attrs_of(argmax("").nodes[1]) == op::AttrPairs{{"keepdims", "False"}}));  // 0.8.0: UpgradeJSON_000904_000905
  BOOST_TEST((attrs_of(argmax(R"(, "attrs": {"mxnet_version": ["int", 905]})").nodes[1]) ==
              op::AttrPairs{{"axis", "-1"}, {"keepdims", "False"}}));
}

BOOST_AUTO_TEST_CASE(malformed_json_names_the_file) {
  NDG_CHECK_THROWS_WITH(graph::from_json("{\"nodes\": [", "old-symbol.json"), mx::FileError, "old-symbol.json", "not JSON");
  std::string json = kMxnet080Json;
  json.replace(json.rfind('}'), 1, R"(, "attrs": {"mxnet_version": "0.8.0"}})");
  NDG_CHECK_THROWS_WITH(graph::from_json(json, "old-symbol.json"), mx::FileError, "old-symbol.json", "mxnet_version");
  json = kMxnet080Json;
  json.replace(json.find("[[11, 0], [12, 0], [13, 0]]"), 27, "[[11, 0], [12, 0], [19, 0]]");
  NDG_CHECK_THROWS_WITH(graph::from_json(json, "old-symbol.json"), mx::FileError, "old-symbol.json",
                        "node 14 ('batchnorm0')", "bad entry [19,0]");
}

BOOST_AUTO_TEST_SUITE_END()
