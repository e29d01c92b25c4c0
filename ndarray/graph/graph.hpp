#pragma once
// A graph of registered ops, as NNVM's: nodes in topological order, each an op with its attributes
// and inputs, or a variable (an input, a parameter, an auxiliary state); the heads are the
// outputs. hybridize() traces a block's forward into one; export writes it as MXNet's symbol JSON
// and SymbolBlock::imports reads MXNet's (or ndgluon's) JSON back. Internal header.
//
//   graph::Graph g = graph::trace([&](auto& in) { return std::vector{net(in[0])}; }, {x}, {"data"},
//                                 parameter_name_of);
//   graph::run(g, {{"data", x2}, ...});   // through op::invoke: recorded by autograd
//   graph::to_json(g);                    // {"nodes": [...], "arg_nodes": [...], "heads": [...]}
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ndarray/core/array.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::graph {

// Output `index` of node `node`.
struct Entry {
  std::uint32_t node = 0, index = 0;
  bool operator==(const Entry&) const = default;
};

struct Node {
  const op::OpDef* op = nullptr;  // null: a variable
  std::string name;               // "data", "dense0_weight", "fullyconnected0"
  op::Params params;
  std::vector<Entry> inputs;      // none for a variable; an op's absent optional input is left out
  std::vector<std::uint32_t> input_slots;  // each input's position among the op's inputs
  std::uint32_t num_inputs = 0;   // the op's input count, absent ones included
  std::uint32_t num_outputs = 1;
  // A variable's shape as MXNet's "__shape__" hint gives it (an extent 0: not known); a traced
  // parameter's own shape. None for the inputs, whose batch extent varies.
  std::optional<Shape> shape_hint;
  // The keys of the JSON node that are not the op's attributes, kept as read and written back:
  // NNVM's hidden keys ("__ctx_group__", "__lr_mult__", "__init__", "__dtype__", ...) and, on a
  // variable, whatever else it carries ("__shape__" is shape_hint). Empty for traced nodes.
  op::AttrPairs annotations;
  bool is_variable() const { return op == nullptr; }
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<Entry> heads;
  // The variables' node ids, in node order (NNVM's arg_nodes).
  std::vector<std::uint32_t> arg_nodes() const;
  // The variables' names, in node order.
  std::vector<std::string> variable_names() const;
};

// An array the traced function reads from outside (a parameter), by name: the array itself, or
// the named array it is a contiguous view of (a reshape, recorded as a Reshape or Flatten node).
struct Named {
  std::string name;
  nd::NDArray array;
};
using NameOf = std::function<std::optional<Named>(const nd::NDArray&)>;

// Runs fn on inputs with every op it calls recorded, and returns the graph with fn's results as
// heads (fn's own results are also returned through `outputs`). The inputs become variables named
// input_names; an array that name_of names (a parameter) becomes a variable of that name the first
// time an op reads it. An op reading an array of neither kind, made outside fn, throws
// mx::ValueError naming the op: a graph may not capture arrays it cannot name. A reshape of a
// traced array (a view, which runs no op) is recorded as MXNet's Reshape or Flatten.
Graph trace(const std::function<std::vector<nd::NDArray>(const std::vector<nd::NDArray>&)>& fn,
            const std::vector<nd::NDArray>& inputs, const std::vector<std::string>& input_names,
            const NameOf& name_of, std::vector<nd::NDArray>* outputs = nullptr);

// The value of a variable that run() was not given, asked for when an op first reads it: the
// variable's node, the op's node, the input slot it is read at and the op's inputs gathered so
// far (none arrays for those still to come; the data, slot 0, comes first). SymbolBlock completes
// a parameter's deferred shape here, from the op's data (infer_input_shape).
using Resolve = std::function<nd::NDArray(const Node& variable, const Node& reader, std::uint32_t slot,
                                          const std::vector<nd::NDArray>& inputs)>;

// The heads' values for the given variables (every variable of g by name; mx::ValueError naming a
// missing one unless `resolve` gives it), each op run through op::invoke on the variables'
// context: recorded by autograd inside autograd::record(). An op's mx::ShapeError or mx::DTypeError
// comes back as the same type naming the node, its op and the variables it reads with their
// shapes (a parameter that does not fit the model).
// `values`, when given, receives every node's outputs (a variable's: its array).
std::vector<nd::NDArray> run(const Graph& g, const std::map<std::string, nd::NDArray>& variables,
                             std::vector<std::vector<nd::NDArray>>* values = nullptr, const Resolve& resolve = {});

// The shape MXNet's shape inference (FInferShape) gives the variable that op node `reader` reads
// at input `slot`, from the node's attributes and its data's shape (`data`, input 0; none when not
// known yet), 0 for an extent not known: FullyConnected's weight (num_hidden, in) and bias,
// Convolution's weight (num_filter, channels / num_group, kernel...) and Deconvolution's
// (channels, num_filter / num_group, kernel...) and their bias (num_filter,), BatchNorm's gamma,
// beta, moving_mean and moving_var (channels,). None for any other op or input: its shape is not
// inferred (a "__shape__" hint or a parameter file must give it).
std::optional<Shape> infer_input_shape(const Node& reader, std::uint32_t slot, const std::optional<Shape>& data);

// The "__init__" MXNet's op gives a variable it reads at input `slot` when a symbol is composed
// (the op's FSetInputVarAttrOnCompose): BatchNorm's moving_mean "[\"zero\", {}]" and moving_var
// "[\"one\", {}]". Empty for every other op and input.
std::string compose_init(const op::OpDef& op, std::uint32_t slot);

// MXNet's symbol JSON (NNVM's graph JSON): nodes with op ("null" for a variable), name, attrs and
// inputs ([node, index, version]), arg_nodes, node_row_ptr, heads, and attrs.mxnet_version. Ops
// are written under MXNet 1.x's names (op::mxnet_name: broadcast_add, _rminus_scalar, ...),
// variables with a shape hint get "__shape__", and every node its annotations, so that MXNet reads
// the file.
std::string to_json(const Graph& g);
// Reads JSON written by to_json, by MXNet 1.x or by MXNet since 0.8 (a node's "attrs", or the
// older "attr" and "param", merged as NNVM's LoadJSON does; op names ndgluon's or MXNet's,
// op::find_op; a variable's "__shape__" kept as its shape_hint, the other keys that are not the
// op's as its annotations). A file older than attrs.mxnet_version 10901 (none: 0.8.0) is upgraded
// as MXNet 1.9's loader upgrades it (Note [MXNet's legacy symbol JSON] in graph.cpp): ctx_group,
// lr_mult, ... become hidden "__ctx_group__", ...; BatchNorm nodes saved without their auxiliary
// inputs get "<name>_moving_mean" / "<name>_moving_var" variables. mx::FileError naming `source`
// for malformed JSON or structure; mx::ValueError naming the node for an op ndgluon lacks or
// attributes it cannot read.
Graph from_json(const std::string& json, const std::string& source = "symbol JSON");

// Leaves out the label inputs of loss heads (SoftmaxOutput's, which only its gradient reads)
// where the label is a variable that no other node reads and `keep` does not name, and those
// variables: a model exported with its training head runs with its data alone. The heads then
// get a none label (SoftmaxOutput's gradient is then its softmax's). Returns the names dropped.
std::vector<std::string> drop_labels(Graph& g, const std::vector<std::string>& keep);

}  // namespace mx::graph
