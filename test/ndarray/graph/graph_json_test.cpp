// Symbol JSON in MXNet 1.x's spelling (ndarray/graph/graph.hpp): a traced graph written with MXNet's op
// names (broadcast_add, _plus_scalar, _rminus_scalar: no "reverse" attribute) and its parameters'
// "__shape__" hints, read back to the same ops and values; JSON as MXNet writes it (broadcast_mul,
// _rdiv_scalar, elemwise_add, identity, BlockGrad, LeakyReLU, SoftmaxOutput with its label
// variable, "__shape__" / "__dtype__" hints) imported, its label dropped by graph::drop_labels and
// run on every context against hand-computed values; and the typed errors naming the node.
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

const op::OpDef& def_of(const std::string& name) {
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
      BOOST_TEST(op::mxnet_name(def_of(ndgluon), attrs) == mxnet);
      BOOST_TEST(op::find_op(mxnet, attrs) == &def_of(ndgluon));
      BOOST_TEST(attrs.empty());
    }
  }
  // reverse=True is in the name, and comes back from it.
  for (const auto& [ndgluon, mxnet] : std::vector<std::pair<std::string, std::string>>{
           {"_subtract_scalar", "_rminus_scalar"}, {"_divide_scalar", "_rdiv_scalar"}, {"_power_scalar", "_rpower_scalar"}}) {
    BOOST_TEST_CONTEXT(ndgluon) {
      op::AttrPairs attrs{{"scalar", "2.0"}, {"reverse", "True"}};
      BOOST_TEST(op::mxnet_name(def_of(ndgluon), attrs) == mxnet);
      BOOST_TEST((attrs == op::AttrPairs{{"scalar", "2.0"}}));
      BOOST_TEST(op::find_op(mxnet, attrs) == &def_of(ndgluon));
      BOOST_TEST((attrs == op::AttrPairs{{"scalar", "2.0"}, {"reverse", "True"}}));
    }
  }
  // MXNet's other names of the same ops.
  for (const auto& [mxnet, ndgluon] : std::vector<std::pair<std::string, std::string>>{
           {"elemwise_add", "add"}, {"_plus", "add"}, {"elemwise_mul", "multiply"}, {"identity", "_copy"},
           {"stop_gradient", "BlockGrad"}, {"Softmax", "SoftmaxOutput"}, {"flatten", "Flatten"}}) {
    BOOST_TEST_CONTEXT(mxnet) {
      op::AttrPairs attrs;
      BOOST_TEST(op::find_op(mxnet, attrs) == &def_of(ndgluon));
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

BOOST_AUTO_TEST_SUITE_END()
