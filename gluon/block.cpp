#include "gluon/block.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "gluon/parameter_file.hpp"
#include "context/device.hpp"
#include "ndarray/profiler.hpp"

namespace mx::gluon {

struct Block::Core {
  std::string prefix;
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
  if (!profiler::is_running()) return forward(x);
  const std::string label = name() + " forward";
  const profiler::Range range(label);
  return forward(x);
}

std::string Block::name() const {
  const std::string& p = core_->prefix;
  return !p.empty() && p.back() == '_' ? p.substr(0, p.size() - 1) : p;
}

Parameter Block::register_parameter(const std::string& short_name, Shape shape, init::InitializerRef init, DType dtype) {
  core_->params.emplace_back(short_name, Parameter(core_->prefix + short_name, std::move(shape), dtype, "write", std::move(init)));
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
