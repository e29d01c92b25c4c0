#include "gluon/nn/symbol_block.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <nlohmann/json.hpp>

#include "context/file.hpp"
#include "ndarray/graph/graph.hpp"
#include "ndarray/io/ndarray_file.hpp"

namespace mx::gluon::nn {
namespace {

// The initializer a variable's "__init__" names, as MXNet writes it: a registered name ("zeros",
// "ones") or Initializer.dumps()'s ["name", {kwargs}] ("[\"zero\", {}]", "[\"normal\",
// {\"sigma\": 0.01}]"). Empty for one ndgluon lacks or cannot read: initialize()'s initializer
// then applies, as MXNet's Gluon applies its own to every parameter of a SymbolBlock.
init::InitializerRef initializer_of(const std::string& text) {
  using Json = nlohmann::json;
  std::string name = text;
  Json kwargs = Json::object();
  if (!text.empty() && text.front() == '[') {
    const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_array() || j.empty() || !j[0].is_string()) return {};
    name = j[0].get<std::string>();
    if (j.size() > 1 && j[1].is_object()) kwargs = j[1];
  }
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto real = [&](const char* key, double fallback) -> std::optional<double> {
    if (!kwargs.contains(key)) return fallback;
    return kwargs[key].is_number() ? std::optional(kwargs[key].get<double>()) : std::nullopt;
  };
  const auto text_of = [&](const char* key, const char* fallback) {
    return kwargs.contains(key) && kwargs[key].is_string() ? kwargs[key].get<std::string>() : std::string(fallback);
  };
  if (name == "zero" || name == "zeros") return init::Zero();
  if (name == "one" || name == "ones") return init::One();
  if (name == "constant" && kwargs.contains("value") && real("value", 0)) return init::Constant(*real("value", 0));
  if (name == "uniform" && real("scale", 0.07)) return init::Uniform(*real("scale", 0.07));
  if (name == "normal" && real("sigma", 0.01)) return init::Normal(*real("sigma", 0.01));
  if (name == "xavier" && real("magnitude", 3)) {
    try {
      return init::Xavier(text_of("rnd_type", "uniform"), text_of("factor_type", "avg"), *real("magnitude", 3));
    } catch (const ValueError&) {  // a kind of Xavier ndgluon lacks
      return {};
    }
  }
  return {};
}

const std::string* annotation(const graph::Node& node, const std::string& key) {
  for (const auto& [name, value] : node.annotations) {
    if (name == key) return &value;
  }
  return nullptr;
}

// The shape `from` declares, with the extents (0: not known) that `more` knows added; none where
// the two disagree.
std::optional<Shape> merge_shapes(const Shape& from, const Shape& more) {
  if (from.ndim() != more.ndim()) return std::nullopt;
  std::vector<std::int64_t> dims(from.begin(), from.end());
  for (int d = 0; d < from.ndim(); ++d) {
    if (dims[d] == 0) dims[d] = more[d];
    if (more[d] != 0 && dims[d] != more[d]) return std::nullopt;
  }
  return Shape(dims);
}

bool shape_known(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](std::int64_t d) { return d > 0; });
}

}  // namespace

SymbolBlock::SymbolBlock(std::shared_ptr<const graph::Graph> graph, std::string input)
    : Block("symbolblock"), graph_(std::move(graph)), input_(std::move(input)) {}

SymbolBlock SymbolBlock::imports(const std::string& symbol_file, const std::vector<std::string>& input_names,
                                 const std::string& param_file, Context ctx) {
  if (input_names.size() != 1) {
    throw ValueError("SymbolBlock::imports: one input name is supported, got " + std::to_string(input_names.size()));
  }
  graph::Graph parsed = graph::from_json(read_file(symbol_file, "SymbolBlock::imports"), symbol_file);
  // The file's arrays by plain name, and which of them are auxiliary states.
  std::map<std::string, std::pair<nd::NDArray, bool>> values;
  if (!param_file.empty()) {
    const nd::LoadedArrays loaded = nd::load(param_file, ctx);
    for (std::size_t i = 0; i < loaded.arrays.size(); ++i) {
      std::string name = i < loaded.names.size() ? loaded.names[i] : std::to_string(i);
      const bool aux = name.starts_with("aux:");
      if (aux || name.starts_with("arg:")) name.erase(0, 4);
      values[name] = {loaded.arrays[i], aux};
    }
  }
  // A model exported with its training head (SoftmaxOutput and its label) runs on its data alone,
  // unless the label is an input or a parameter after all.
  std::vector<std::string> keep = input_names;
  for (const auto& [name, value] : values) keep.push_back(name);
  graph::drop_labels(parsed, keep);
  auto g = std::make_shared<const graph::Graph>(std::move(parsed));
  bool has_input = false;
  for (const std::string& name : g->variable_names()) has_input |= name == input_names[0];
  if (!has_input) {
    throw ValueError("SymbolBlock::imports: " + symbol_file + " has no variable '" + input_names[0] + "'");
  }
  SymbolBlock block(g, input_names[0]);
  // The op nodes that read each node, with the input slot they read it at.
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> readers(g->nodes.size());
  for (std::uint32_t n = 0; n < g->nodes.size(); ++n) {
    const graph::Node& node = g->nodes[n];
    for (std::size_t i = 0; i < node.inputs.size(); ++i) readers[node.inputs[i].node].emplace_back(n, node.input_slots[i]);
  }
  for (std::uint32_t n = 0; n < g->nodes.size(); ++n) {
    const graph::Node& node = g->nodes[n];
    if (!node.is_variable() || node.name == input_names[0]) continue;
    const std::string& name = node.name;
    if (!param_file.empty()) {
      const auto it = values.find(name);
      if (it == values.end()) {
        throw ValueError("SymbolBlock::imports: " + param_file + " holds no parameter '" + name + "' that " +
                         symbol_file + " uses");
      }
      const auto& [value, aux] = it->second;
      // The JSON's __shape__ hint, where it gives every extent, must be the file's shape.
      if (node.shape_hint && node.shape_hint->numel() > 0 && *node.shape_hint != value.shape()) {
        throw ShapeError("SymbolBlock::imports: parameter '" + name + "' is " + value.shape().tuple_str() + " in " +
                         param_file + ", but " + symbol_file + " declares " + node.shape_hint->tuple_str());
      }
      Parameter p = block.register_named_parameter(name, value.shape(), value.dtype(), aux ? "null" : "write");
      p.load_init(value, {ctx});
      continue;
    }
    // No parameter file (MXNet's param_file=None): the shape as far as the hint and the readers'
    // attributes give it, the rest at the first forward; an auxiliary state is an input its op
    // writes (MXNet's FMutateInputs).
    std::optional<Shape> shape = node.shape_hint;
    bool aux = false;
    std::string op_init;  // the reader's compose-time "__init__"
    for (const auto& [reader, slot] : readers[n]) {
      const graph::Node& op = g->nodes[reader];
      aux |= ((op.op->written_inputs >> slot) & 1u) != 0;
      if (op_init.empty()) op_init = graph::compose_init(*op.op, slot);
      const std::optional<Shape> inferred = graph::infer_input_shape(op, slot, std::nullopt);
      if (!inferred) continue;
      const std::optional<Shape> merged = shape ? merge_shapes(*shape, *inferred) : inferred;
      if (!merged) {
        throw ShapeError("SymbolBlock::imports: " + symbol_file + ": parameter '" + name + "' is " +
                         shape->tuple_str() + " (\"__shape__\" or another reader), but node '" + op.name + "' (" +
                         op.op->name + ") reads it as " + inferred->tuple_str() + " (0: not known yet)");
      }
      shape = merged;
    }
    if (!shape) {
      throw ShapeError("SymbolBlock::imports: " + symbol_file + " gives no shape for parameter '" + name +
                       "': it has no \"__shape__\" hint and no op that ndgluon infers parameter shapes of reads it; "
                       "give a param_file, or a \"__shape__\" on the variable");
    }
    Parameter p = block.register_named_parameter(name, *shape, DType::float32, aux ? "null" : "write");
    const std::string* own = annotation(node, "__init__");
    init::InitializerRef init = own ? initializer_of(*own) : init::InitializerRef();
    if (!init && !op_init.empty()) init = initializer_of(op_init);
    if (init) p.set_initializer(init);
  }
  return block;
}

nd::NDArray SymbolBlock::forward(const nd::NDArray& x) {
  std::map<std::string, nd::NDArray> variables{{input_, x}};
  std::map<std::string, Parameter> deferred;
  for (const auto& [key, param] : structural_params()) {
    param.check_initialized();  // mx::Error before initialize(), as every block's
    if (param.is_deferred()) deferred.emplace(param.name(), param);
    else variables.emplace(param.name(), param.data(x.context()));
  }
  // A deferred parameter's shape from the op that reads it, when that op runs (MXNet's deferred
  // initialisation at the first forward).
  const graph::Resolve resolve = [&](const graph::Node& variable, const graph::Node& reader, std::uint32_t slot,
                                     const std::vector<nd::NDArray>& inputs) {
    const auto it = deferred.find(variable.name);
    if (it == deferred.end()) throw ValueError("graph: no value given for the variable '" + variable.name + "'");
    Parameter param = it->second;
    if (param.is_deferred()) {
      const std::optional<Shape> data =
          inputs.empty() || inputs[0].is_none() ? std::nullopt : std::optional<Shape>(inputs[0].shape());
      const std::optional<Shape> shape = graph::infer_input_shape(reader, slot, data);
      if (!shape || !shape_known(*shape)) {
        throw ShapeError("SymbolBlock: the shape of parameter '" + param.name() + "' " + param.shape().tuple_str() +
                         " is not known and cannot be inferred from node '" + reader.name + "' (" + reader.op->name +
                         ")" + (data ? " reading data " + data->tuple_str() : std::string(" whose data is not known")) +
                         "; give it a \"__shape__\" hint or load its values");
      }
      param.infer_shape(*shape);  // mx::ShapeError where a declared extent disagrees
    }
    return param.data(x.context());
  };
  return graph::run(*graph_, variables, nullptr, resolve).at(0);
}

}  // namespace mx::gluon::nn
