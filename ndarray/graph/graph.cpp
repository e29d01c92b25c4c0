#include "ndarray/graph/graph.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <nlohmann/json.hpp>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/graph/trace.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/reshape_kernels.hpp"

namespace mx::graph {
namespace {

using nd::NDArray;
using Json = nlohmann::json;

// MXNet's version in the JSON's attrs: 1.9.1, the last release, whose reader takes this layout.
constexpr int kMxnetVersion = 10901;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Builds the graph while fn runs: each invocation becomes a node, and every array the trace has
// seen (inputs, named arrays, outputs) maps to the entry that produces it.
class Tracer final : public op::TraceSink {
 public:
  Tracer(Graph& g, const NameOf& name_of) : g_(g), name_of_(name_of) {}

  Entry add_variable(const std::string& name, const NDArray& x, std::optional<Shape> shape_hint = std::nullopt) {
    Node node;
    node.name = name;
    node.shape_hint = std::move(shape_hint);
    g_.nodes.push_back(std::move(node));
    const Entry e{static_cast<std::uint32_t>(g_.nodes.size() - 1), 0};
    set(x, e);
    return e;
  }

  void record(const op::Invocation& inv) override {
    Node node;
    node.op = inv.op;
    node.params = inv.params;
    node.num_inputs = static_cast<std::uint32_t>(inv.inputs.size());
    node.num_outputs = static_cast<std::uint32_t>(inv.outputs.size());
    for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
      if (inv.inputs[i].is_none()) continue;
      node.inputs.push_back(entry_of(inv.op->name, inv.inputs[i]));
      node.input_slots.push_back(static_cast<std::uint32_t>(i));
    }
    node.name = lower(inv.op->name) + std::to_string(count_[inv.op->name]++);
    g_.nodes.push_back(std::move(node));
    const auto id = static_cast<std::uint32_t>(g_.nodes.size() - 1);
    for (std::size_t j = 0; j < inv.outputs.size(); ++j) set(inv.outputs[j], {id, static_cast<std::uint32_t>(j)});
  }

  Entry head(const NDArray& y) { return entry_of("the traced function's result", y); }

 private:
  void set(const NDArray& x, Entry e) {
    for (auto& [array, entry] : seen_) {
      if (array.is(x)) {  // written in place (invoke_into): later reads see the new value
        entry = e;
        return;
      }
    }
    seen_.emplace_back(x, e);
  }

  Entry entry_of(const char* op, const NDArray& x) {
    for (const auto& [array, entry] : seen_) {
      if (array.is(x)) return entry;
    }
    if (name_of_) {
      if (const std::optional<Named> named = name_of_(x)) {
        const Entry e = add_variable(named->name, named->array, named->array.shape());
        return named->array.is(x) ? e : reshape(named->array, e, x);
      }
    }
    // A reshape is a view and runs no op: one of a traced array becomes a Reshape node.
    for (const auto& [array, entry] : seen_) {
      if (x.is_contiguous() && array.is_contiguous() && x.data() == array.data() && x.size() == array.size() &&
          x.dtype() == array.dtype() && x.shape() != array.shape()) {
        return reshape(array, entry, x);
      }
    }
    throw ValueError(std::string("hybridize: ") + op + " reads " + nd::describe(x) +
                     ", an array made outside the traced forward that is neither one of its inputs nor a "
                     "parameter; make it inside forward, or a parameter (Block::register_parameter)");
  }

  // A Flatten node where the view keeps the first axis and merges the rest, else a Reshape that
  // keeps the first extent as MXNet's code 0 (both independent of the batch size).
  Entry reshape(const NDArray& from, Entry e, const NDArray& to) {
    Node node;
    const bool flatten = to.ndim() == 2 && from.ndim() > 2 && to.shape()[0] == from.shape()[0];
    node.op = flatten ? &op::flatten_op() : &op::reshape_op();
    if (!flatten) {
      op::ReshapeParams p = op::ReshapeParams::of(to.shape());
      if (p.ndim > 0 && from.ndim() > 0 && p.shape[0] == from.shape()[0]) p.shape[0] = 0;
      node.params = p;
    }
    node.inputs = {e};
    node.input_slots = {0};
    node.num_inputs = 1;
    node.name = lower(node.op->name) + std::to_string(count_[node.op->name]++);
    g_.nodes.push_back(std::move(node));
    const Entry out{static_cast<std::uint32_t>(g_.nodes.size() - 1), 0};
    set(to, out);
    return out;
  }

  Graph& g_;
  const NameOf& name_of_;
  std::vector<std::pair<NDArray, Entry>> seen_;
  std::map<std::string, int> count_;
};

}  // namespace

std::vector<std::uint32_t> Graph::arg_nodes() const {
  std::vector<std::uint32_t> ids;
  for (std::uint32_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_variable()) ids.push_back(i);
  }
  return ids;
}

std::vector<std::string> Graph::variable_names() const {
  std::vector<std::string> names;
  for (std::uint32_t id : arg_nodes()) names.push_back(nodes[id].name);
  return names;
}

Graph trace(const std::function<std::vector<NDArray>(const std::vector<NDArray>&)>& fn, const std::vector<NDArray>& inputs,
            const std::vector<std::string>& input_names, const NameOf& name_of, std::vector<NDArray>* outputs) {
  if (inputs.size() != input_names.size()) {
    throw ValueError("hybridize: " + std::to_string(inputs.size()) + " inputs but " +
                     std::to_string(input_names.size()) + " names");
  }
  Graph g;
  Tracer tracer(g, name_of);
  // The inputs as variables that need a gradient, under record() in the caller's mode: every op's
  // recorded attributes then say that its gradients are needed (Convolution and dot skip those
  // they are told no variable needs), so a replay under record() computes them all.
  std::vector<NDArray> traced_inputs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    NDArray x = inputs[i].detach();
    autograd::mark_variable(x, nd::zeros_like(x));
    tracer.add_variable(input_names[i], x);
    traced_inputs.push_back(x);
  }
  std::vector<NDArray> results;
  {
    const autograd::Scope recording(true, autograd::is_training());
    const op::TraceScope scope(&tracer);
    results = fn(traced_inputs);
  }
  for (const NDArray& y : results) g.heads.push_back(tracer.head(y));
  if (outputs) {
    outputs->clear();
    for (const NDArray& y : results) outputs->push_back(y.detach());
  }
  return g;
}

std::vector<NDArray> run(const Graph& g, const std::map<std::string, NDArray>& variables,
                         std::vector<std::vector<NDArray>>* all_values) {
  std::vector<std::vector<NDArray>> values(g.nodes.size());
  Context ctx = cpu();
  bool have_ctx = false;
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.is_variable()) {
      const auto it = variables.find(node.name);
      if (it == variables.end()) throw ValueError("graph: no value given for the variable '" + node.name + "'");
      values[n] = {it->second};
      if (!have_ctx) ctx = it->second.context(), have_ctx = true;
      continue;
    }
    std::vector<NDArray> inputs(node.num_inputs);
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const Entry e = node.inputs[i];
      inputs[node.input_slots[i]] = values[e.node].at(e.index);
    }
    op::Params params = node.params;
    if (node.op->input_grads && autograd::is_recording()) {
      std::vector<bool> needed;
      for (const NDArray& in : inputs) needed.push_back(!in.is_none() && in.autograd_node() != nullptr);
      node.op->input_grads(params, needed);
    }
    if (node.op->mode && !node.op->mode(params, autograd::is_training())) {  // the identity in this mode
      values[n] = {inputs.at(0)};
      continue;
    }
    if (node.num_inputs > 0) {
      values[n] = op::invoke(*node.op, std::move(inputs), params);
      continue;
    }
    // An op without inputs (a constant: fill, arange, a random draw) runs on the graph's context.
    std::vector<op::OutputSpec> specs;
    node.op->infer(op::Invocation{node.op, params, {}, {}}, specs);
    std::vector<NDArray> outputs;
    for (const op::OutputSpec& spec : specs) outputs.emplace_back(spec.shape, ctx, spec.dtype);
    op::invoke_into(*node.op, {}, outputs, params);
    values[n] = std::move(outputs);
  }
  std::vector<NDArray> heads;
  for (const Entry& e : g.heads) heads.push_back(values[e.node].at(e.index));
  if (all_values) *all_values = std::move(values);
  return heads;
}

std::string to_json(const Graph& g) {
  Json nodes = Json::array(), row_ptr = Json::array({0}), heads = Json::array();
  std::uint32_t rows = 0;
  for (const Node& node : g.nodes) {
    Json j = Json::object();
    Json attrs = Json::object();
    if (node.is_variable()) {
      j["op"] = "null";
      if (node.shape_hint) attrs["__shape__"] = node.shape_hint->tuple_str();  // MXNet's "(2, 3)"
    } else {
      // MXNet's name, without the attributes that name stands for (Note [MXNet's op names] in op.cpp).
      op::AttrPairs pairs = node.op->attrs ? node.op->attrs(node.params) : op::AttrPairs{};
      j["op"] = op::mxnet_name(*node.op, pairs);
      for (const auto& [key, value] : pairs) attrs[key] = value;
    }
    j["name"] = node.name;
    if (!attrs.empty()) j["attrs"] = attrs;
    Json inputs = Json::array();
    for (const Entry& e : node.inputs) inputs.push_back({e.node, e.index, 0});
    j["inputs"] = inputs;
    nodes.push_back(j);
    rows += node.num_outputs;
    row_ptr.push_back(rows);
  }
  for (const Entry& e : g.heads) heads.push_back({e.node, e.index, 0});
  const Json doc = {{"nodes", nodes},
                    {"arg_nodes", g.arg_nodes()},
                    {"node_row_ptr", row_ptr},
                    {"heads", heads},
                    {"attrs", {{"mxnet_version", {"int", kMxnetVersion}}}}};
  return doc.dump(2);
}

namespace {

// NNVM's hidden keys, of the form __name__: hints that MXNet adds ("__shape__", "__dtype__",
// "__lr_mult__", "__profiler_scope__", ...), not op attributes.
bool is_hidden(const std::string& key) {
  return key.size() > 4 && key.starts_with("__") && key.ends_with("__");
}

// The attributes of a JSON node, the op's and the hidden ones apart: "attrs" (MXNet 1.x), else
// the older "param" (the op's) and "attr" (the hints).
struct NodeAttrs {
  op::AttrPairs op, hidden;
};

NodeAttrs node_attrs(const Json& node) {
  NodeAttrs out;
  const auto read = [&](const char* key) {
    if (!node.contains(key) || !node[key].is_object()) return;
    for (const auto& [name, value] : node[key].items()) {
      (is_hidden(name) ? out.hidden : out.op).emplace_back(name, value.is_string() ? value.get<std::string>() : value.dump());
    }
  };
  if (node.contains("attrs")) {
    read("attrs");
  } else {
    read("param");
    read("attr");
  }
  return out;
}

// A variable's "__shape__" in MXNet's spelling ("(2, 3)", "[2, 3]"): extents 0 (or -1, MXNet's
// unknown under NumPy shape semantics) are not known; "()" or "None" (no rank known) gives no hint.
std::optional<Shape> parse_shape_hint(const std::string& text, const std::string& where) {
  const std::optional<std::vector<std::int64_t>> dims = op::parse_tuple(text);
  if (!dims) throw ValueError(where + ": \"__shape__\": \"" + text + "\" is not a shape tuple such as \"(2, 3)\"");
  if (dims->empty()) return std::nullopt;
  std::vector<std::int64_t> extents;
  for (const std::int64_t d : *dims) {
    if (d < -1) throw ValueError(where + ": \"__shape__\": \"" + text + "\" has a negative extent");
    extents.push_back(d < 0 ? 0 : d);
  }
  return Shape(extents);
}

// A variable's "__dtype__": one of MXNet's type flags (mshadow's: -1 not known, 0 float32,
// 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64, 7 bool, 8 to 11 int16, uint16, uint32,
// uint64, 12 bfloat16). Only checked: the parameter file gives each array its dtype, and refuses
// those ndgluon lacks.
void check_dtype_hint(const std::string& text, const std::string& where) {
  const std::optional<std::int64_t> flag = op::parse_int(text);
  if (!flag || *flag < -1 || *flag > 12) {
    throw ValueError(where + ": \"__dtype__\": \"" + text +
                     "\" is not one of MXNet's dtype flags (0 float32, 1 float64, 3 uint8, 4 int32, 6 int64, ...)");
  }
}

}  // namespace

Graph from_json(const std::string& text, const std::string& source) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {
    throw FileError(source + ": not JSON: " + e.what());
  }
  const auto bad = [&](const std::string& what) { return FileError(source + ": " + what); };
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array() || !doc.contains("heads")) {
    throw bad("not a symbol JSON (an object with \"nodes\" and \"heads\")");
  }
  Graph g;
  const Json& nodes = doc["nodes"];
  const auto entry = [&](const Json& e, std::size_t limit, const std::string& where) {
    if (!e.is_array() || e.size() < 2 || !e[0].is_number_unsigned() || !e[1].is_number_unsigned() ||
        e[0].get<std::uint64_t>() >= limit) {
      throw bad(where + ": bad entry " + e.dump() + " (expected [node, output, version] of an earlier node)");
    }
    return Entry{e[0].get<std::uint32_t>(), e[1].get<std::uint32_t>()};
  };
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const Json& j = nodes[n];
    if (!j.is_object() || !j.contains("op") || !j["op"].is_string() || !j.contains("name") || !j["name"].is_string()) {
      throw bad("node " + std::to_string(n) + " needs a string \"op\" and \"name\"");
    }
    Node node;
    node.name = j["name"].get<std::string>();
    const std::string op = j["op"].get<std::string>();
    const std::string where = "node " + std::to_string(n) + " ('" + node.name + "')";
    NodeAttrs attrs = node_attrs(j);
    if (op == "null") {
      for (const auto& [key, value] : attrs.hidden) {
        if (key == "__shape__") node.shape_hint = parse_shape_hint(value, source + ": " + where);
        else if (key == "__dtype__") check_dtype_hint(value, source + ": " + where);
      }
      g.nodes.push_back(std::move(node));
      continue;
    }
    // MXNet's name or ndgluon's; a name that stands for attributes (_rminus_scalar) adds them.
    node.op = op::find_op(op, attrs.op);
    if (!node.op) throw ValueError(source + ": " + where + ": ndgluon has no op '" + op + "'");
    if (node.op->parse_attrs) {
      try {
        node.params = node.op->parse_attrs(attrs.op);
      } catch (const ValueError& e) {
        throw ValueError(source + ": " + where + ": " + e.what());
      }
    } else if (!attrs.op.empty()) {
      throw ValueError(source + ": " + where + ": op '" + op + "' takes no attributes, got " + attrs.op.front().first);
    }
    if (j.contains("inputs")) {
      for (const Json& e : j["inputs"]) {
        node.inputs.push_back(entry(e, n, where));
        node.input_slots.push_back(static_cast<std::uint32_t>(node.input_slots.size()));
      }
    }
    node.num_inputs = std::max(static_cast<std::uint32_t>(node.inputs.size()), node.op->arity);
    g.nodes.push_back(std::move(node));
  }
  for (const Json& e : doc["heads"]) g.heads.push_back(entry(e, g.nodes.size(), "heads"));
  // Outputs per node: as many as the entries read (ops with hidden outputs such as BatchNorm's
  // mean and variance produce them all when run).
  for (Node& node : g.nodes) node.num_outputs = 1;
  const auto use = [&](const Entry& e) { g.nodes[e.node].num_outputs = std::max(g.nodes[e.node].num_outputs, e.index + 1); };
  for (const Node& node : g.nodes) std::for_each(node.inputs.begin(), node.inputs.end(), use);
  std::for_each(g.heads.begin(), g.heads.end(), use);
  return g;
}

namespace {

// The loss heads whose label input only their gradient reads: op name and the label's input slot.
struct LossHead {
  const char* op;
  std::uint32_t label_slot;
};
constexpr LossHead kLossHeads[] = {{"SoftmaxOutput", 1}};

const LossHead* loss_head(const Node& node) {
  if (node.is_variable()) return nullptr;
  for (const LossHead& head : kLossHeads) {
    if (std::string_view(node.op->name) == head.op) return &head;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> drop_labels(Graph& g, const std::vector<std::string>& keep) {
  // How many entries read each node (the heads included).
  std::vector<std::uint32_t> readers(g.nodes.size(), 0);
  for (const Node& node : g.nodes) {
    for (const Entry& e : node.inputs) ++readers[e.node];
  }
  for (const Entry& e : g.heads) ++readers[e.node];
  std::vector<bool> dropped_node(g.nodes.size(), false);
  std::vector<std::string> dropped;
  for (Node& node : g.nodes) {
    const LossHead* head = loss_head(node);
    if (!head) continue;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.input_slots[i] != head->label_slot) continue;
      const std::uint32_t id = node.inputs[i].node;
      const Node& label = g.nodes[id];
      if (!label.is_variable() || readers[id] != 1 || std::find(keep.begin(), keep.end(), label.name) != keep.end()) {
        break;
      }
      dropped_node[id] = true;
      dropped.push_back(label.name);
      node.inputs.erase(node.inputs.begin() + static_cast<std::ptrdiff_t>(i));  // a none input from now on
      node.input_slots.erase(node.input_slots.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  if (dropped.empty()) return dropped;
  // The nodes left, renumbered in the same order.
  std::vector<std::uint32_t> new_id(g.nodes.size(), 0);
  std::vector<Node> kept;
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    if (dropped_node[n]) continue;
    new_id[n] = static_cast<std::uint32_t>(kept.size());
    kept.push_back(std::move(g.nodes[n]));
  }
  for (Node& node : kept) {
    for (Entry& e : node.inputs) e.node = new_id[e.node];
  }
  for (Entry& e : g.heads) e.node = new_id[e.node];
  g.nodes = std::move(kept);
  return dropped;
}

}  // namespace mx::graph
