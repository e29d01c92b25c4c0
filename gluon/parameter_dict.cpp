#include "gluon/parameter_dict.hpp"

#include <algorithm>
#include <cstdlib>

#include "context/device.hpp"
#include "gluon/parameter_file.hpp"

namespace mx::gluon {

void ParameterDict::add(const Parameter& param) {
  for (const auto& [key, existing] : params_) {
    if (key != param.name()) continue;
    // One parameter reached twice (a block added twice, shared weights) is kept once, as MXNet's
    // ParameterDict.update; two parameters with one name are an error.
    if (existing.is(param)) return;
    throw ValueError("ParameterDict: duplicate parameter name '" + param.name() + "'");
  }
  params_.emplace_back(param.name(), param);
}

bool ParameterDict::contains(const std::string& name) const {
  return std::any_of(params_.begin(), params_.end(), [&](const auto& p) { return p.first == name; });
}

Parameter ParameterDict::operator[](const std::string& name) const {
  for (const auto& [key, param] : params_) {
    if (key == name) return param;
  }
  std::string known;
  for (const auto& key : keys()) known += (known.empty() ? "" : ", ") + key;
  throw ValueError("ParameterDict has no parameter '" + name + "'; it has: " + known);
}

std::vector<std::string> ParameterDict::keys() const {
  std::vector<std::string> out;
  for (const auto& p : params_) out.push_back(p.first);
  return out;
}

void ParameterDict::initialize(const init::Initializer& init, const std::vector<Context>& ctxs, bool force_reinit) {
  for (auto& p : params_) p.second.initialize(init, ctxs, force_reinit);
}

void ParameterDict::reset_ctx(const std::vector<Context>& ctxs) {
  for (auto& p : params_) p.second.reset_ctx(ctxs);
}

void ParameterDict::zero_grad() {
  for (auto& p : params_) p.second.zero_grad();
}

void ParameterDict::setattr(const std::string& attribute, const std::string& value) {
  if (attribute == "grad_req") {
    for (auto& p : params_) p.second.set_grad_req(value);
    return;
  }
  if (attribute != "lr_mult" && attribute != "wd_mult") {
    throw ValueError("ParameterDict::setattr: unknown attribute '" + attribute + "' (supported: grad_req, lr_mult, wd_mult)");
  }
  char* end = nullptr;
  const double mult = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0') {
    throw ValueError("ParameterDict::setattr: " + attribute + " '" + value + "' is not a number");
  }
  for (auto& p : params_) p.second.check_multiplier(attribute.c_str(), mult);  // all or nothing
  for (auto& p : params_) {
    if (attribute == "lr_mult") p.second.set_lr_mult(mult);
    else p.second.set_wd_mult(mult);
  }
}

void ParameterDict::save(const std::string& path, const std::string& strip_prefix) const {
  std::vector<std::pair<std::string, nd::NDArray>> entries;
  for (const auto& [name, param] : params_) {
    if (!name.starts_with(strip_prefix)) {
      throw ValueError("ParameterDict::save: prefix '" + strip_prefix + "' is to be stripped before saving, but " +
                       "parameter '" + name + "' does not start with it");
    }
    entries.emplace_back(name.substr(strip_prefix.size()), param.list_data().front());
  }
  save_parameter_file(path, entries, "ParameterDict::save");
}

void ParameterDict::load(const std::string& path, Context ctx, bool allow_missing, bool ignore_extra,
                         const std::string& restore_prefix) {
  load(path, std::vector<Context>{ctx}, allow_missing, ignore_extra, restore_prefix);
}

void ParameterDict::load(const std::string& path, const std::vector<Context>& ctxs, bool allow_missing,
                         bool ignore_extra, const std::string& restore_prefix) {
  const char* op = "ParameterDict::load";
  if (ctxs.empty()) throw ValueError(std::string(op) + ": '" + path + "' needs at least one context to load onto");
  for (Context ctx : ctxs) check_context(ctx);
  for (const auto& [name, param] : params_) {
    if (!name.starts_with(restore_prefix)) {
      throw ValueError(std::string(op) + ": restore_prefix is '" + restore_prefix + "' but parameter '" + name +
                       "' does not start with it");
    }
  }
  const auto entries = load_parameter_file(path, op);
  std::vector<ParameterSlot> slots;
  for (const auto& [name, param] : params_) slots.push_back({name, param});
  std::vector<std::vector<std::size_t>> entry_slots(entries.size());
  for (std::size_t j = 0; j < entries.size(); ++j) {
    std::string key = entries[j].first;
    if (key.starts_with("arg:") || key.starts_with("aux:")) key.erase(0, 4);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].key == restore_prefix + key) entry_slots[j].push_back(i);
    }
  }
  load_parameter_slots(path, op, "the ParameterDict", slots, entries, entry_slots, ctxs, allow_missing, ignore_extra);
}

}  // namespace mx::gluon
