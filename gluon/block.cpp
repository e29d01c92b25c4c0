#include "gluon/block.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "gluon/parameter_file.hpp"
#include "context/device.hpp"
#include "context/file.hpp"
#include "ndarray/autograd.hpp"
#include "ndarray/describe.hpp"
#include "ndarray/graph.hpp"
#include "ndarray/io.hpp"
#include "ndarray/profiler.hpp"

namespace mx::gluon {

// hybridize()'s state: the graph of each input signature traced so far.
struct Signature {
  Shape shape;
  DType dtype;
  Context ctx;
  bool training;
  bool operator==(const Signature&) const = default;
};

struct Block::Core {
  std::string prefix;
  bool hybridized = false, static_shape = false;
  std::vector<std::pair<Signature, std::shared_ptr<const graph::Graph>>> graphs;
  std::shared_ptr<const graph::Graph> last_graph;
  std::vector<std::pair<std::string, Parameter>> params;                 // short name -> parameter
  std::vector<std::pair<std::string, std::shared_ptr<Block>>> children;  // structural name -> child
};

namespace {

// MXNet 1.x naming: a per-kind counter gives dense0_, dense1_, ...
std::string next_prefix(const std::string& kind) {
  static std::mutex mutex;
  static std::map<std::string, int> counters;
  std::lock_guard lock(mutex);
  return kind + std::to_string(counters[kind]++) + "_";
}

}  // namespace

Block::Block(const std::string& kind, const std::string& prefix) : core_(std::make_shared<Core>()) {
  core_->prefix = prefix.empty() ? next_prefix(kind) : prefix;
}

const std::string& Block::prefix() const { return core_->prefix; }

nd::NDArray Block::operator()(const nd::NDArray& x) {
  if (core_->hybridized) return call_graph(x);
  if (!profiler::is_running()) return forward(x);
  const std::string label = name() + " forward";
  const profiler::Range range(label);
  return forward(x);
}

void Block::hybridize(bool active, bool /*static_alloc*/, bool static_shape) {
  core_->hybridized = active;
  core_->static_shape = active && static_shape;
  if (!active) {
    core_->graphs.clear();
    core_->last_graph.reset();
  }
}

bool Block::is_hybridized() const { return core_->hybridized; }

nd::NDArray Block::call_graph(const nd::NDArray& x) {
  nd::check_not_none(("block '" + name() + "'").c_str(), x);
  const Signature signature{x.shape(), x.dtype(), x.context(), autograd::is_training()};
  std::shared_ptr<const graph::Graph> g;
  for (const auto& [sig, cached] : core_->graphs) {
    if (sig == signature) g = cached;
  }
  const std::vector<std::pair<std::string, Parameter>> params = structural_params();
  if (!g) {
    if (core_->static_shape && !core_->graphs.empty()) {
      const Signature& first = core_->graphs.front().first;
      throw ValueError("block '" + name() + "' was hybridized with static_shape, for input " + first.shape.tuple_str() +
                       " " + dtype_name(first.dtype) + " @" + first.ctx.str() + "; got " + nd::describe(x));
    }
    g = std::make_shared<const graph::Graph>(trace_forward(x, params));
    core_->graphs.emplace_back(signature, g);
  }
  core_->last_graph = g;
  std::map<std::string, nd::NDArray> variables{{"data", x}};
  for (const auto& [key, param] : params) variables.emplace(param.name(), param.data(x.context()));
  const profiler::Range range(profiler::is_running() ? name() + " graph" : std::string());
  return graph::run(*g, variables).at(0);
}

// The forward traced on x. The trace runs the ops for real: running statistics that they update
// (grad_req "null" parameters) are put back afterwards, so that the replay that follows counts once.
graph::Graph Block::trace_forward(const nd::NDArray& x, const std::vector<std::pair<std::string, Parameter>>& params) {
  // Deferred shapes are completed (and their parameters initialised) by an eager forward first, in
  // prediction so that no running statistic moves: initialisers are not part of the graph.
  const bool deferred = std::any_of(params.begin(), params.end(), [](const auto& p) { return !p.second.is_initialized(); });
  if (deferred) {
    const autograd::Scope predicting(false, false);
    forward(x);
  }
  std::vector<std::pair<nd::NDArray, nd::NDArray>> saved;  // (parameter array, its values before)
  for (const auto& [key, param] : params) {
    if (param.grad_req() == "null" && param.is_initialized()) {
      for (const nd::NDArray& a : param.list_data()) saved.emplace_back(a, a.copy());
    }
  }
  const auto name_of = [&](const nd::NDArray& a) -> std::optional<std::string> {
    for (const auto& [key, param] : params) {
      if (!param.is_initialized()) continue;
      for (const nd::NDArray& d : param.list_data()) {
        if (d.is(a)) return param.name();
      }
    }
    return std::nullopt;
  };
  graph::Graph g = graph::trace([&](const std::vector<nd::NDArray>& in) { return std::vector{forward(in[0])}; }, {x},
                                {"data"}, name_of);
  for (auto& [array, before] : saved) before.copyto(array);
  return g;
}

void Block::export_model(const std::string& path, int epoch) const {
  if (!core_->last_graph) {
    throw ValueError("export: block '" + name() + "' has no graph yet; call hybridize() and run forward once first");
  }
  const graph::Graph& g = *core_->last_graph;
  // Running statistics (BatchNorm's moving mean and variance) are MXNet's auxiliary states.
  std::set<std::string> aux;
  for (const graph::Node& node : g.nodes) {
    if (node.is_variable() || std::string(node.op->name) != "BatchNorm") continue;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.input_slots[i] >= 3) aux.insert(g.nodes[node.inputs[i].node].name);
    }
  }
  std::vector<std::string> names;
  std::vector<nd::NDArray> arrays;
  for (const auto& [key, param] : structural_params()) {
    for (const std::string& variable : g.variable_names()) {
      if (variable != param.name()) continue;
      names.push_back((aux.count(variable) ? "aux:" : "arg:") + variable);
      arrays.push_back(param.list_data().front());
      break;
    }
  }
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%04d.params", epoch);
  write_file_atomically(path + "-symbol.json", graph::to_json(g), "export");
  nd::save(path + suffix, names, arrays);
}

std::string Block::name() const {
  const std::string& p = core_->prefix;
  return !p.empty() && p.back() == '_' ? p.substr(0, p.size() - 1) : p;
}

Parameter Block::register_parameter(const std::string& short_name, Shape shape, init::InitializerRef init, DType dtype) {
  core_->params.emplace_back(short_name, Parameter(core_->prefix + short_name, std::move(shape), dtype, "write", std::move(init)));
  return core_->params.back().second;
}

Parameter Block::register_named_parameter(const std::string& name, Shape shape, DType dtype, const std::string& grad_req) {
  core_->params.emplace_back(name, Parameter(name, std::move(shape), dtype, grad_req));
  return core_->params.back().second;
}

Parameter Block::parameter(const std::string& short_name) const {
  for (auto& [key, param] : core_->params) {
    if (key == short_name) return param;
  }
  throw ValueError("block '" + name() + "' has no parameter '" + short_name + "'");
}

void Block::throw_sliced(const Block& block, const std::type_info& as) {
  const auto demangled = [](const std::type_info& type) {
    int status = 0;
    char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
    const std::string out = status == 0 && name ? name : type.name();
    std::free(name);
    return out;
  };
  throw ValueError("register_child: block '" + block.name() + "' is a " + demangled(typeid(block)) +
                   " passed as a " + demangled(as) + "; a copy of the " + demangled(as) +
                   " would lose its forward. Pass it as its own type");
}

void Block::add_child(std::shared_ptr<Block> child, std::string name) {
  if (name.empty()) name = std::to_string(core_->children.size());
  core_->children.emplace_back(std::move(name), std::move(child));
}

std::size_t Block::num_children() const { return core_->children.size(); }

Block& Block::child(std::size_t i) const {
  if (i >= core_->children.size()) {
    throw IndexError("block '" + name() + "' has " + std::to_string(core_->children.size()) +
                     " children; index " + std::to_string(i) + " is out of range");
  }
  return *core_->children[i].second;
}

ParameterDict Block::collect_params() const {
  ParameterDict dict;
  for (const auto& [key, param] : structural_params()) dict.add(param);
  return dict;
}

std::vector<std::pair<std::string, Parameter>> Block::structural_params(const std::string& prefix) const {
  std::vector<std::pair<std::string, Parameter>> out;
  for (const auto& [key, param] : core_->params) out.emplace_back(prefix + key, param);
  for (const auto& [key, child] : core_->children) {
    for (auto& entry : child->structural_params(prefix + key + ".")) out.push_back(std::move(entry));
  }
  return out;
}

void Block::initialize(const init::Initializer& init, Context ctx, bool force_reinit) {
  initialize(init, std::vector<Context>{ctx}, force_reinit);
}

void Block::initialize(const init::Initializer& init, const std::vector<Context>& ctxs, bool force_reinit) {
  collect_params().initialize(init, ctxs, force_reinit);
}

void Block::save_parameters(const std::string& path) const {
  std::vector<std::pair<std::string, nd::NDArray>> entries;
  for (const auto& [key, param] : structural_params()) entries.emplace_back(key, param.list_data().front());
  save_parameter_file(path, entries, "save_parameters");
}

void Block::load_parameters(const std::string& path, Context ctx, bool allow_missing, bool ignore_extra) {
  load_parameters(path, std::vector<Context>{ctx}, allow_missing, ignore_extra);
}

void Block::load_parameters(const std::string& path, const std::vector<Context>& ctxs, bool allow_missing,
                            bool ignore_extra) {
  if (ctxs.empty()) throw ValueError("load_parameters: '" + path + "' needs at least one context to load onto");
  for (Context ctx : ctxs) check_context(ctx);
  // Everything is read and checked into temporaries first, so that a bad file changes nothing.
  auto entries = load_parameter_file(path, "load_parameters");
  // MXNet's export names its entries "arg:dense0_weight" and "aux:batchnorm0_running_mean".
  for (auto& [key, value] : entries) {
    if (key.starts_with("arg:") || key.starts_with("aux:")) key.erase(0, 4);
  }
  std::vector<ParameterSlot> slots;
  for (auto& [key, param] : structural_params()) slots.push_back({std::move(key), std::move(param)});
  // Keys are structural names ("0.weight"), as save_parameters writes, unless none has a dot and
  // some is no structural name: then they are parameter names (collect_params().save, export),
  // which MXNet's load_parameters reads through collect_params().load with restore_prefix = prefix().
  const auto is_structural = [&](const std::string& key) {
    for (const ParameterSlot& slot : slots) {
      if (slot.key == key) return true;
    }
    return false;
  };
  bool by_name = false;
  for (const auto& [key, value] : entries) by_name = by_name || !is_structural(key);
  for (const auto& [key, value] : entries) by_name = by_name && key.find('.') == std::string::npos;
  std::vector<std::vector<std::size_t>> entry_slots(entries.size());
  for (std::size_t j = 0; j < entries.size(); ++j) {
    const std::string& key = entries[j].first;
    const auto match = [&](const std::string& wanted, bool as_name) {
      for (std::size_t i = 0; i < slots.size(); ++i) {
        if ((as_name ? slots[i].param.name() : slots[i].key) == wanted) entry_slots[j].push_back(i);
      }
    };
    if (!by_name) {
      match(key, false);
    } else {
      match(key, true);
      if (entry_slots[j].empty()) match(prefix() + key, true);
    }
  }
  load_parameter_slots(path, "load_parameters", "block '" + name() + "'", slots, entries, entry_slots, ctxs,
                       allow_missing, ignore_extra);
}

}  // namespace mx::gluon
