#include "gluon/nn/symbol_block.hpp"

#include <map>

#include "context/file.hpp"
#include "ndarray/graph/graph.hpp"
#include "ndarray/io/ndarray_file.hpp"

namespace mx::gluon::nn {

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
  const nd::LoadedArrays loaded = nd::load(param_file, ctx);
  for (std::size_t i = 0; i < loaded.arrays.size(); ++i) {
    std::string name = i < loaded.names.size() ? loaded.names[i] : std::to_string(i);
    const bool aux = name.starts_with("aux:");
    if (aux || name.starts_with("arg:")) name.erase(0, 4);
    values[name] = {loaded.arrays[i], aux};
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
  for (const graph::Node& node : g->nodes) {
    if (!node.is_variable() || node.name == input_names[0]) continue;
    const std::string& name = node.name;
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
  }
  return block;
}

nd::NDArray SymbolBlock::forward(const nd::NDArray& x) {
  std::map<std::string, nd::NDArray> variables{{input_, x}};
  for (const auto& [key, param] : structural_params()) variables.emplace(param.name(), param.data(x.context()));
  return graph::run(*graph_, variables).at(0);
}

}  // namespace mx::gluon::nn
