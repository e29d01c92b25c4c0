#include "ndarray/graph/graph.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>
#include <nlohmann/json.hpp>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/core/strided_index.hpp"
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
        const auto variable = [&] {  // one variable per parameter, however many views read it
          for (const auto& [array, entry] : seen_) {
            if (array.is(named->array)) return entry;
          }
          return add_variable(named->name, named->array, named->array.shape());
        };
        if (named->array.is(x)) return variable();
        if (const std::optional<Permuted> p = permutation_of(named->array, x)) return permute(named->array, variable(), x, *p);
        if (x.is_contiguous()) return reshape(named->array, variable(), x);
      }
    }
    // A broadcast view (nd::broadcast_to: a sum's gradient spreads its head so) runs no op either:
    // one of a traced or named array becomes a broadcast_to node.
    if (const std::optional<NDArray> source = broadcast_source(x)) {
      const Entry from = entry_of(op, *source);
      return broadcast(from, *source, x);
    }
    // A reshape is a view and runs no op: one of a traced array becomes a Reshape node.
    for (const auto& [array, entry] : seen_) {
      if (x.is_contiguous() && array.is_contiguous() && x.data() == array.data() && x.size() == array.size() &&
          x.dtype() == array.dtype() && x.shape() != array.shape()) {
        return reshape(array, entry, x);
      }
    }
    // So is a transpose (nd::transpose, swapaxes): a permuted view of a traced array becomes a
    // transpose node.
    for (const auto& [array, entry] : seen_) {
      if (const std::optional<Permuted> p = permutation_of(array, x)) return permute(array, entry, x, *p);
    }
    throw ValueError(std::string("hybridize: ") + op + " reads " + nd::describe(x) +
                     ", an array made outside the traced forward that is neither one of its inputs nor a "
                     "parameter; make it inside forward, or a parameter (Block::register_parameter)");
  }

  // When x is a permutation of the axes of a dense array over from's elements (the same storage,
  // first element, size and dtype; from itself or a reshape of it): that array's shape and, per
  // axis d of x, the axis of it that d reads. The dense array's axes are x's in order of
  // decreasing stride.
  struct Permuted {
    Shape dense;
    std::vector<int> axes;
  };
  static std::optional<Permuted> permutation_of(const NDArray& from, const NDArray& x) {
    if (x.is_contiguous() || !from.is_contiguous() || x.data() != from.data() || x.size() != from.size() ||
        x.dtype() != from.dtype() || x.size() == 0) {
      return std::nullopt;
    }
    const std::vector<std::int64_t> strides = x.strides();
    std::vector<int> order(static_cast<std::size_t>(x.ndim()));
    for (int d = 0; d < x.ndim(); ++d) order[static_cast<std::size_t>(d)] = d;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return strides[static_cast<std::size_t>(a)] > strides[static_cast<std::size_t>(b)];
    });
    std::vector<std::int64_t> dims;
    for (int d : order) dims.push_back(x.shape()[d]);
    Permuted p{Shape(dims), std::vector<int>(order.size())};
    const std::vector<std::int64_t> dense = contiguous_strides(p.dense);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto d = static_cast<std::size_t>(order[i]);
      if (x.shape()[order[i]] > 1 && strides[d] != dense[i]) return std::nullopt;  // a slice, not a permutation
      p.axes[d] = static_cast<int>(i);
    }
    return p;
  }

  // A transpose node of the array at `from` (reshaped to p.dense first where it differs) to x.
  Entry permute(const NDArray& array, Entry from, const NDArray& x, const Permuted& p) {
    if (array.shape() != p.dense) from = reshape(array, from, array.reshape(p.dense));
    return transpose(from, x, p.axes);
  }

  Entry transpose(Entry from, const NDArray& x, const std::vector<int>& axes) {
    return view_node(op::transpose_op(), op::transpose_params(axes), from, x);
  }

  // The node of a view's op from `from`, whose output stands for x; named as record() names ops.
  Entry view_node(const op::OpDef& def, op::Params params, Entry from, const NDArray& x) {
    Node node;
    node.op = &def;
    node.params = std::move(params);
    node.inputs = {from};
    node.input_slots = {0};
    node.num_inputs = 1;
    node.name = lower(def.name) + std::to_string(count_[def.name]++);
    g_.nodes.push_back(std::move(node));
    const Entry out{static_cast<std::uint32_t>(g_.nodes.size() - 1), 0};
    set(x, out);
    return out;
  }

  // The dense array that the strided x repeats along its axes of stride 0, when x is such a view
  // (the same storage and first element); none for any other view.
  static std::optional<NDArray> broadcast_source(const NDArray& x) {
    if (x.is_none() || x.is_contiguous()) return std::nullopt;
    const std::vector<std::int64_t> strides = x.strides();
    std::vector<std::int64_t> dims(static_cast<std::size_t>(x.ndim())), dense(dims.size());
    bool repeats = false;
    std::int64_t step = 1;
    for (int d = x.ndim() - 1; d >= 0; --d) {
      const auto i = static_cast<std::size_t>(d);
      dims[i] = strides[i] == 0 ? 1 : x.shape()[d];
      repeats = repeats || (strides[i] == 0 && x.shape()[d] > 1);
      if (dims[i] > 1 && strides[i] != step) return std::nullopt;  // a transpose or a slice
      dense[i] = step;
      step *= dims[i];
    }
    if (!repeats) return std::nullopt;
    return x.as_strided(Shape(dims), dense);
  }

  // A broadcast_to node from the entry of x's dense source to x: shape code 0 on the axes the
  // source keeps (a batch axis stays free), x's extent on those it repeats.
  Entry broadcast(Entry from, const NDArray& source, const NDArray& x) {
    op::ReshapeParams p = op::ReshapeParams::of(x.shape());
    for (int d = 0; d < p.ndim; ++d) {
      if (source.shape()[d] == x.shape()[d]) p.shape[d] = 0;
    }
    return view_node(op::broadcast_to_op(), p, from, x);
  }

  // A Flatten node where the view keeps the first axis and merges the rest, else a Reshape that
  // keeps the first extent as MXNet's code 0 (both independent of the batch size).
  Entry reshape(const NDArray& from, Entry e, const NDArray& to) {
    if (to.ndim() == 2 && from.ndim() > 2 && to.shape()[0] == from.shape()[0]) {
      return view_node(op::flatten_op(), {}, e, to);
    }
    op::ReshapeParams p = op::ReshapeParams::of(to.shape());
    if (p.ndim > 0 && from.ndim() > 0 && p.shape[0] == from.shape()[0]) p.shape[0] = 0;
    return view_node(op::reshape_op(), p, e, to);
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
                         std::vector<std::vector<NDArray>>* all_values, const Resolve& resolve) {
  std::vector<std::vector<NDArray>> values(g.nodes.size());
  Context ctx = cpu();
  bool have_ctx = false;
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.is_variable()) {
      const auto it = variables.find(node.name);
      if (it == variables.end()) {
        if (resolve) continue;  // asked for when an op reads it
        throw ValueError("graph: no value given for the variable '" + node.name + "'");
      }
      values[n] = {it->second};
      if (!have_ctx) ctx = it->second.context(), have_ctx = true;
      continue;
    }
    std::vector<NDArray> inputs(node.num_inputs);
    std::vector<std::size_t> unresolved;  // positions in node.inputs of variables still without a value
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const Entry e = node.inputs[i];
      if (values[e.node].empty()) unresolved.push_back(i);
      else inputs[node.input_slots[i]] = values[e.node].at(e.index);
    }
    for (const std::size_t i : unresolved) {
      const std::uint32_t var = node.inputs[i].node;
      if (values[var].empty()) values[var] = {resolve(g.nodes[var], node, node.input_slots[i], inputs)};
      inputs[node.input_slots[i]] = values[var].at(node.inputs[i].index);
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
  for (const Entry& e : g.heads) {
    if (values[e.node].empty()) throw ValueError("graph: no value given for the variable '" + g.nodes[e.node].name + "'");
    heads.push_back(values[e.node].at(e.index));
  }
  if (all_values) *all_values = std::move(values);
  return heads;
}

std::string to_json(const Graph& g) {
  Json nodes = Json::array(), row_ptr = Json::array({0}), heads = Json::array();
  std::uint32_t rows = 0;
  for (const Node& node : g.nodes) {
    Json j = Json::object();
    Json attrs = Json::object();
    for (const auto& [key, value] : node.annotations) attrs[key] = value;
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

// MXNET_MAKE_VERSION: 1.9.1 is 10901.
constexpr std::int64_t make_version(int major, int minor, int patch) { return major * 10000 + minor * 100 + patch; }

const std::string* find_key(const op::AttrPairs& dict, const std::string& key) {
  for (const auto& [name, value] : dict) {
    if (name == key) return &value;
  }
  return nullptr;
}

// dict[key] = value, as NNVM's attrs.dict (a map) assigns.
void set_key(op::AttrPairs& dict, const std::string& key, std::string value) {
  for (auto& [name, old] : dict) {
    if (name == key) {
      old = std::move(value);
      return;
    }
  }
  dict.emplace_back(key, std::move(value));
}

// One node as NNVM's LoadJSON holds it, before MXNet's upgrade and before its op parses the
// attributes: every key of the node in one dict, op attributes and hints alike.
struct JsonNode {
  std::size_t index = 0;           // the node's position in the file, for messages
  std::string name;
  std::string written_op;          // the op's name in the file: "null", "FullyConnected", "_rminus_scalar"
  const op::OpDef* op = nullptr;   // null: a variable
  op::AttrPairs dict;
  std::vector<Entry> inputs;
};

// The node's dict as NNVM's LoadJSON builds it: "attrs" (MXNet 1.x) or "attr" (0.8's hints), then
// "param" (0.8's op attributes) for the keys those lack. Values that are not strings keep their
// JSON text.
op::AttrPairs node_dict(const Json& node) {
  op::AttrPairs dict;
  const auto text = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  for (const char* key : {"attrs", "attr"}) {
    if (!node.contains(key) || !node[key].is_object()) continue;
    const bool first = dict.empty();  // an object's keys are unique: only a second one may repeat them
    for (const auto& [name, value] : node[key].items()) {
      if (first) dict.emplace_back(name, text(value));
      else set_key(dict, name, text(value));
    }
  }
  if (node.contains("param") && node["param"].is_object()) {
    for (const auto& [name, value] : node["param"].items()) {
      if (!find_key(dict, name)) dict.emplace_back(name, text(value));
    }
  }
  return dict;
}

// The file's attrs.mxnet_version (["int", 10901]); MXNet's 0.8.0 when it has none.
std::int64_t mxnet_version(const Json& doc, const std::string& source) {
  if (!doc.contains("attrs") || !doc["attrs"].is_object() || !doc["attrs"].contains("mxnet_version")) {
    return make_version(0, 8, 0);
  }
  const Json& v = doc["attrs"]["mxnet_version"];
  if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer()) {
    throw FileError(source + ": attrs.mxnet_version must be [\"int\", version] such as [\"int\", 10901], got " + v.dump());
  }
  return v[1].get<std::int64_t>();
}

// Note [MXNet's legacy symbol JSON]
// MXNet 1.9 reads a symbol file through its LoadLegacyJSON pass (src/nnvm/legacy_json_util.cc,
// applied by MXSymbolCreateFromFile / MXSymbolCreateFromJSON in src/c_api/c_api_symbolic.cc).
// NNVM's LoadJSON (src/pass/saveload_json.cc, JSONNode::Load) first reads each node's "attrs" or
// "attr" (0.8's hints) and then "param" (0.8's op attributes) into one dict, "param" adding only
// keys not there yet, and skips "backward_source_id" (ndgluon also ignores "control_deps", which
// only order the execution). Then every upgrader
// newer than the file's attrs.mxnet_version (0.8.0 when it has none) runs, in this order:
//   UpgradeJSON_FixParsing, for files older than the running MXNet (1.9.1 here): a key that is
//     one of kHiddenKeys (ctx_group, lr_mult, wd_mult, force_mirroring, mirror_stage;
//     c_api_symbolic.cc) becomes hidden: "ctx_group" -> "__ctx_group__". A key that ends in "_"
//     and such a key on an op node ("weight_lr_mult") is set, as "__lr_mult__", on the variable
//     that the op reads as that input (FListInputNames: "weight"). Any other key stays as written,
//     and the op's parser then refuses it.
//   UpgradeJSON_000800_000900 (before 0.9.0, when auxiliary states were not saved): an op node
//     with fewer inputs than its op takes gets, for each missing one, a new variable
//     "<node>_<input>" (BatchNorm's "bn0_moving_mean", "bn0_moving_var") whose dict is a copy of
//     the node's.
//   UpgradeJSON_000903_000904 (before 0.9.4): each op's FSetInputVarAttrOnCompose runs on its
//     variable inputs: BatchNorm's moving_mean and moving_var get "__init__" ["zero", {}] and
//     ["one", {}] unless they have one.
//   UpgradeJSON_000904_000905 (before 0.9.5): argmax's and argmin's axis -1 meant "no axis" and is
//     removed.
// upgrade_legacy does the same, in the same order, on the nodes as read, before the ops parse
// their attributes. What MXNet asks of each op comes from two tables that hold the ops ndgluon
// has: mxnet_input_names (FListInputNames) and compose_init (FSetInputVarAttrOnCompose). A file
// of 1.9.1, which to_json writes, is read as it is.

constexpr std::string_view kHiddenKeys[] = {"ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage"};

// MXNet's input names of the ops that have named parameter inputs (their FListInputNames);
// empty for the others, which MXNet's upgrade then leaves alone.
std::vector<std::string> mxnet_input_names(const op::OpDef& op, const op::AttrPairs& dict) {
  const std::string_view name = op.name;
  if (name == "FullyConnected" || name == "Convolution" || name == "Deconvolution") {
    const std::string* text = find_key(dict, "no_bias");
    const std::optional<bool> no_bias = text ? op::parse_bool(*text) : std::nullopt;
    std::vector<std::string> names{"data", "weight"};
    if (!no_bias.value_or(name == "Deconvolution")) names.emplace_back("bias");  // MXNet's defaults
    return names;
  }
  if (name == "BatchNorm" || name == "_contrib_SyncBatchNorm") return {"data", "gamma", "beta", "moving_mean", "moving_var"};
  if (name == "SoftmaxOutput") return {"data", "label"};
  return {};
}

// UpgradeJSON_FixParsing.
void fix_hidden_keys(std::vector<JsonNode>& nodes) {
  for (JsonNode& node : nodes) {
    op::AttrPairs held, kept;
    for (auto& pair : node.dict) {
      const std::string& key = pair.first;
      const bool hidden = std::any_of(std::begin(kHiddenKeys), std::end(kHiddenKeys), [&](std::string_view h) {
        const std::size_t pos = key.rfind(h);
        return pos == 0 || (pos != std::string::npos && pos == key.size() - h.size());
      });
      (hidden ? held : kept).push_back(std::move(pair));
    }
    node.dict = std::move(kept);
    for (auto& [key, value] : held) {
      bool moved = false;
      for (const std::string_view h : kHiddenKeys) {
        const std::size_t pos = key.rfind(h);
        const std::string hidden = "__" + std::string(h) + "__";
        if (pos == 0 && key.size() == h.size()) {
          set_key(node.dict, hidden, value);
          moved = true;
          break;
        }
        if (pos != std::string::npos && pos > 1 && pos == key.size() - h.size()) {
          if (node.op) {  // "weight_lr_mult": onto the op's input variable "weight"
            const std::vector<std::string> names = mxnet_input_names(*node.op, node.dict);
            const auto it = std::find(names.begin(), names.end(), key.substr(0, pos - 1));
            const auto slot = static_cast<std::size_t>(it - names.begin());
            if (it != names.end() && slot < node.inputs.size() && !nodes[node.inputs[slot].node].op) {
              set_key(nodes[node.inputs[slot].node].dict, hidden, value);
              moved = true;
            }
          }
          break;
        }
      }
      if (!moved) set_key(node.dict, key, value);
    }
  }
}

// UpgradeJSON_000800_000900: the missing inputs as new variables just before their node.
void add_missing_inputs(std::vector<JsonNode>& nodes, std::vector<Entry>& heads) {
  std::vector<JsonNode> upgraded;
  std::vector<std::uint32_t> new_id(nodes.size(), 0);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    JsonNode node = std::move(nodes[n]);
    for (Entry& e : node.inputs) e.node = new_id[e.node];
    if (node.op) {
      const std::vector<std::string> names = mxnet_input_names(*node.op, node.dict);
      for (std::size_t i = node.inputs.size(); i < names.size(); ++i) {
        JsonNode variable;
        variable.index = node.index;
        variable.written_op = "null";
        variable.name = node.name.empty() ? names[i] : node.name + "_" + names[i];
        variable.dict = node.dict;
        upgraded.push_back(std::move(variable));
        node.inputs.push_back({static_cast<std::uint32_t>(upgraded.size() - 1), 0});
      }
    }
    new_id[n] = static_cast<std::uint32_t>(upgraded.size());
    upgraded.push_back(std::move(node));
  }
  for (Entry& e : heads) e.node = new_id[e.node];
  nodes = std::move(upgraded);
}

void upgrade_legacy(std::vector<JsonNode>& nodes, std::vector<Entry>& heads, std::int64_t version) {
  if (version < kMxnetVersion) fix_hidden_keys(nodes);
  if (version < make_version(0, 9, 0)) add_missing_inputs(nodes, heads);
  if (version < make_version(0, 9, 4)) {  // UpgradeJSON_000903_000904
    for (const JsonNode& node : nodes) {
      if (!node.op) continue;
      for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
        JsonNode& input = nodes[node.inputs[slot].node];
        const std::string init = compose_init(*node.op, static_cast<std::uint32_t>(slot));
        if (!input.op && !init.empty() && !find_key(input.dict, "__init__")) set_key(input.dict, "__init__", init);
      }
    }
  }
  if (version < make_version(0, 9, 5)) {  // UpgradeJSON_000904_000905
    for (JsonNode& node : nodes) {
      if (!node.op || (std::string_view(node.op->name) != "argmax" && std::string_view(node.op->name) != "argmin")) continue;
      const std::string* axis = find_key(node.dict, "axis");
      if (axis && *axis == "-1") {
        std::erase_if(node.dict, [](const auto& pair) { return pair.first == "axis"; });
      }
    }
  }
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

std::string compose_init(const op::OpDef& op, std::uint32_t slot) {
  if (op.written_inputs & (1u << slot)) {  // BatchNorm's running statistics
    if (slot == 3) return "[\"zero\", {}]";
    if (slot == 4) return "[\"one\", {}]";
  }
  return "";
}

std::optional<Shape> infer_input_shape(const Node& reader, std::uint32_t slot, const std::optional<Shape>& data) {
  if (reader.is_variable() || !reader.op->attrs) return std::nullopt;
  const op::AttrPairs attrs = reader.op->attrs(reader.params);  // MXNet's texts: "(3, 3)", "True"
  const auto integer = [&](const char* key, std::int64_t fallback) {
    const std::string* text = find_key(attrs, key);
    return (text ? op::parse_int(*text) : std::nullopt).value_or(fallback);
  };
  const auto boolean = [&](const char* key, bool fallback) {
    const std::string* text = find_key(attrs, key);
    return (text ? op::parse_bool(*text) : std::nullopt).value_or(fallback);
  };
  // The data's extent on axis (negative: from the end), 0 where not known.
  const auto extent = [&](int axis) -> std::int64_t {
    if (!data) return 0;
    if (axis < 0) axis += data->ndim();
    return axis >= 0 && axis < data->ndim() ? (*data)[axis] : 0;
  };
  const std::string_view op = reader.op->name;
  if (op == "FullyConnected") {
    const std::int64_t hidden = integer("num_hidden", 0);
    if (slot == 2) return Shape{hidden};
    if (slot != 1) return std::nullopt;
    std::int64_t in = 0;  // (batch, in...) flattened, or the last axis
    if (data && data->ndim() >= 2 && boolean("flatten", true)) {
      in = 1;
      for (int d = 1; d < data->ndim(); ++d) in *= (*data)[d];
    } else if (data && data->ndim() >= 1 && !boolean("flatten", true)) {
      in = extent(-1);
    }
    return Shape{hidden, in};
  }
  if (op == "Convolution" || op == "Deconvolution") {
    const std::int64_t filters = integer("num_filter", 0), groups = std::max<std::int64_t>(integer("num_group", 1), 1);
    if (slot == 2) return Shape{filters};
    const std::string* kernel_text = find_key(attrs, "kernel");
    const std::optional<std::vector<std::int64_t>> kernel = kernel_text ? op::parse_tuple(*kernel_text) : std::nullopt;
    if (slot != 1 || !kernel) return std::nullopt;
    const std::string* layout = find_key(attrs, "layout");
    const bool channels_last = layout && layout->size() >= 3 && layout->back() == 'C';  // NWC, NHWC, NDHWC
    const std::int64_t channels = extent(channels_last ? -1 : 1);
    std::vector<std::int64_t> dims;
    if (op == "Deconvolution") {  // (channels, num_filter / num_group, kernel...)
      dims = {channels, filters / groups};
      dims.insert(dims.end(), kernel->begin(), kernel->end());
    } else if (channels_last) {  // (num_filter, kernel..., channels / num_group)
      dims = {filters};
      dims.insert(dims.end(), kernel->begin(), kernel->end());
      dims.push_back(channels / groups);
    } else {  // (num_filter, channels / num_group, kernel...)
      dims = {filters, channels / groups};
      dims.insert(dims.end(), kernel->begin(), kernel->end());
    }
    return Shape(dims);
  }
  if (op == "BatchNorm" && slot >= 1 && slot <= 4) return Shape{extent(static_cast<int>(integer("axis", 1)))};
  if (op == "_contrib_SyncBatchNorm" && slot >= 1 && slot <= 4) return Shape{extent(1)};
  return std::nullopt;
}

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
  const std::int64_t version = mxnet_version(doc, source);
  const Json& nodes = doc["nodes"];
  const auto entry = [&](const Json& e, std::size_t limit, const std::string& where) {
    if (!e.is_array() || e.size() < 2 || !e[0].is_number_unsigned() || !e[1].is_number_unsigned() ||
        e[0].get<std::uint64_t>() >= limit) {
      throw bad(where + ": bad entry " + e.dump() + " (expected [node, output, version] of an earlier node)");
    }
    return Entry{e[0].get<std::uint32_t>(), e[1].get<std::uint32_t>()};
  };
  const auto where_of = [](const JsonNode& node) { return "node " + std::to_string(node.index) + " ('" + node.name + "')"; };
  // The nodes as NNVM's LoadJSON reads them.
  std::vector<JsonNode> read;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const Json& j = nodes[n];
    if (!j.is_object() || !j.contains("op") || !j["op"].is_string() || !j.contains("name") || !j["name"].is_string()) {
      throw bad("node " + std::to_string(n) + " needs a string \"op\" and \"name\"");
    }
    JsonNode node;
    node.index = n;
    node.name = j["name"].get<std::string>();
    node.dict = node_dict(j);
    const std::string op = j["op"].get<std::string>();
    node.written_op = op;
    if (op != "null") {
      // MXNet's name or ndgluon's; a name that stands for attributes (_rminus_scalar) adds them.
      node.op = op::find_op(op, node.dict);
      if (!node.op) throw ValueError(source + ": " + where_of(node) + ": ndgluon has no op '" + op + "'");
      if (j.contains("inputs")) {
        for (const Json& e : j["inputs"]) node.inputs.push_back(entry(e, n, where_of(node)));
      }
    }
    read.push_back(std::move(node));
  }
  std::vector<Entry> heads;
  for (const Json& e : doc["heads"]) heads.push_back(entry(e, read.size(), "heads"));
  upgrade_legacy(read, heads, version);

  Graph g;
  for (JsonNode& j : read) {
    Node node;
    node.name = j.name;
    const std::string where = source + ": " + where_of(j);
    if (!j.op) {
      for (auto& [key, value] : j.dict) {
        if (key == "__shape__") {
          node.shape_hint = parse_shape_hint(value, where);
          continue;
        }
        if (key == "__dtype__") check_dtype_hint(value, where);
        node.annotations.emplace_back(key, std::move(value));
      }
      g.nodes.push_back(std::move(node));
      continue;
    }
    node.op = j.op;
    op::AttrPairs attrs;  // the op's; the hidden keys are the node's annotations
    for (auto& [key, value] : j.dict) (is_hidden(key) ? node.annotations : attrs).emplace_back(key, std::move(value));
    if (node.op->parse_attrs) {
      try {
        node.params = node.op->parse_attrs(attrs);
      } catch (const ValueError& e) {
        throw ValueError(where + ": " + e.what());
      }
    } else if (!attrs.empty()) {
      throw ValueError(where + ": op '" + j.written_op + "' takes no attributes, got " + attrs.front().first);
    }
    node.inputs = std::move(j.inputs);
    for (std::size_t i = 0; i < node.inputs.size(); ++i) node.input_slots.push_back(static_cast<std::uint32_t>(i));
    node.num_inputs = std::max(static_cast<std::uint32_t>(node.inputs.size()), node.op->arity);
    g.nodes.push_back(std::move(node));
  }
  g.heads = std::move(heads);
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
