#include "gluon/parameter_dict.hpp"

#include <algorithm>

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
  if (attribute != "grad_req") {
    throw ValueError("ParameterDict::setattr: unknown attribute '" + attribute + "' (supported: grad_req)");
  }
  for (auto& p : params_) p.second.set_grad_req(value);
}

}  // namespace mx::gluon
