#include "gluon/block.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "gluon/parameter_file.hpp"
#include "context/device.hpp"
#include "ndarray/describe.hpp"
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
  save_parameter_file(path, entries);
}

void Block::load_parameters(const std::string& path, Context ctx) {
  load_parameters(path, std::vector<Context>{ctx});
}

void Block::load_parameters(const std::string& path, const std::vector<Context>& ctxs) {
  if (ctxs.empty()) throw ValueError("load_parameters: '" + path + "' needs at least one context to load onto");
  for (Context ctx : ctxs) check_context(ctx);
  // Everything is read and checked into temporaries first, so that a bad file changes nothing.
  const auto loaded = load_parameter_file(path);
  const auto params = structural_params();
  std::map<std::string, nd::NDArray> by_name(loaded.begin(), loaded.end());
  for (const auto& [key, param] : params) {
    const auto it = by_name.find(key);
    if (it == by_name.end()) {
      throw FileError("load_parameters: '" + path + "' has no parameter '" + key + "' (" + param.name() +
                      ") that block '" + name() + "' needs");
    }
    const Shape& want = param.shape();
    const nd::NDArray& value = it->second;
    bool fits = want.ndim() == value.ndim() && param.dtype() == value.dtype();
    for (int d = 0; fits && d < want.ndim(); ++d) fits = want[d] == 0 || want[d] == value.shape()[d];
    if (!fits) {
      throw ShapeError("load_parameters: parameter '" + key + "' (" + param.name() + ") is " + want.tuple_str() +
                       " " + dtype_name(param.dtype()) + " in block '" + name() + "' but " +
                       nd::describe(value) + " in '" + path + "'");
    }
  }
  if (loaded.size() != params.size()) {
    std::set<std::string> known;
    for (const auto& [key, param] : params) known.insert(key);
    for (const auto& [key, value] : loaded) {
      if (!known.count(key)) {
        throw FileError("load_parameters: '" + path + "' has parameter '" + key + "' which block '" + name() +
                        "' does not have");
      }
    }
  }
  for (auto [key, param] : params) param.load_init(by_name.at(key), ctxs);
}

}  // namespace mx::gluon
