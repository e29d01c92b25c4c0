#include "gluon/optimizer.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/optimizer.hpp"

namespace mx::gluon {
namespace {

// Reads the known hyper-parameters into their fields; any other name throws with the valid list.
void read_params(const char* optimizer, const HyperParams& params, const std::map<std::string, double*>& fields) {
  for (const auto& [name, value] : params) {
    const auto it = fields.find(name);
    if (it == fields.end()) {
      std::string valid;
      for (const auto& [known, field] : fields) valid += (valid.empty() ? "" : ", ") + known;
      throw ValueError(std::string(optimizer) + ": unknown hyper-parameter '" + name + "'; valid: " + valid);
    }
    *it->second = value;
  }
}

// The shortest text that reads back as value: "-1", "0.1", "nan", "inf".
std::string number(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, result.ptr);
}

// Throws unless value is finite and >= 0. `label` names it as PyTorch does ("learning rate").
void check_non_negative(const char* optimizer, const char* label, const char* name, double value) {
  if (!(std::isfinite(value) && value >= 0)) {
    throw ValueError(std::string(optimizer) + ": Invalid " + label + ": " + number(value) + " (" + name +
                     " must be a finite number >= 0)");
  }
}

// Throws unless 0 <= value < 1.
void check_fraction(const char* optimizer, const char* name, double value) {
  if (!(value >= 0 && value < 1)) {
    throw ValueError(std::string(optimizer) + ": Invalid " + name + " value: " + number(value) + " (" + name +
                     " must be in [0, 1))");
  }
}

}  // namespace

void Optimizer::check_common_params() const {
  check_non_negative(name_, "learning rate", "learning_rate", lr_);
  check_non_negative(name_, "weight decay", "wd", wd_);
  if (std::isnan(clip_)) {
    throw ValueError(std::string(name_) + ": Invalid clip_gradient value: " + number(clip_) +
                     " (a positive clip_gradient clips gradients to [-clip_gradient, clip_gradient]; zero or a "
                     "negative one turns clipping off)");
  }
  if (!std::isfinite(rescale_)) {
    throw ValueError(std::string(name_) + ": Invalid rescale_grad value: " + number(rescale_) +
                     " (rescale_grad must be a finite number)");
  }
}

nd::NDArray& Optimizer::state(const char* op, const StateKey& key, std::size_t i, const nd::NDArray& weight) {
  std::vector<nd::NDArray>& states = states_[key];
  // Sized once, for every state: a reference to state 0 stays valid while state 1 is made.
  if (states.size() <= i) states.resize(std::max(i + 1, state_names().size()));
  nd::NDArray& state = states[i];
  const DType want = uses_master(weight) ? DType::float32 : weight.dtype();
  if (state.is_none()) {
    state = nd::zeros(weight.shape(), weight.context(), want);
  } else if (state.shape() != weight.shape()) {
    throw ShapeError(std::string(op) + ": state " + nd::describe(state) + " of parameter " +
                     std::to_string(key.param) + ", copy " + std::to_string(key.copy) + " does not match weight " +
                     nd::describe(weight));
  } else {
    if (state.dtype() != want) state = state.astype(want);
    state = state.as_in_context(weight.context());
  }
  return state;
}

std::map<StateKey, CopyState> Optimizer::states() const {
  std::map<StateKey, CopyState> all;
  for (const auto& [key, arrays] : states_) all[key].states = arrays;
  for (const auto& [key, master] : master_) all[key].master = master;
  for (const auto& [key, count] : counts_) all[key].count = count;
  return all;
}

void Optimizer::set_states(const std::map<StateKey, CopyState>& states) {
  std::map<StateKey, std::vector<nd::NDArray>> arrays;
  std::map<StateKey, nd::NDArray> masters;
  std::map<StateKey, std::int64_t> counts;
  for (const auto& [key, copy] : states) {
    if (!copy.states.empty()) arrays[key] = copy.states;
    if (!copy.master.is_none()) masters[key] = copy.master;
    if (copy.count != 0) counts[key] = copy.count;
  }
  states_ = std::move(arrays);
  master_ = std::move(masters);
  counts_ = std::move(counts);
}

nd::NDArray& Optimizer::master_for(const StateKey& key, const nd::NDArray& weight) {
  nd::NDArray& master = master_[key];
  if (master.is_none() || master.shape() != weight.shape()) master = weight.detach().astype(DType::float32);
  else master = master.as_in_context(weight.context());
  return master;
}

void Optimizer::set_learning_rate(double lr) {
  check_non_negative(name_, "learning rate", "learning_rate", lr);
  lr_ = lr;
}

void Optimizer::check_update(const char* op, const nd::NDArray& weight, const nd::NDArray& grad) {
  nd::check_same_context(op, weight, grad);
  nd::check_floating(op, weight);
  if (weight.shape() != grad.shape() || weight.dtype() != grad.dtype()) {
    throw ShapeError(std::string(op) + ": gradient " + nd::describe(grad) + " does not match weight " +
                     nd::describe(weight));
  }
}

SGD::SGD(const HyperParams& params) : Optimizer("sgd") {
  read_params("sgd", params, {{"learning_rate", &lr_}, {"wd", &wd_}, {"clip_gradient", &clip_},
                              {"rescale_grad", &rescale_}, {"momentum", &momentum_},
                              {"multi_precision", &multi_precision_}});
  check_common_params();
  check_fraction("sgd", "momentum", momentum_);
}

void SGD::update(const StateKey& key, nd::NDArray& weight, const nd::NDArray& grad) {
  check_update("sgd_update", weight, grad);
  const bool master = uses_master(weight);
  if (momentum_ == 0) {
    if (master) nd::mp_sgd_update(weight, grad, master_for(key, weight), lr_, wd_, rescale_, clip_);
    else nd::sgd_update(weight, grad, lr_, wd_, rescale_, clip_);
    return;
  }
  nd::NDArray& mom = state("sgd_update", key, 0, weight);
  if (master) nd::mp_sgd_mom_update(weight, grad, mom, master_for(key, weight), lr_, momentum_, wd_, rescale_, clip_);
  else nd::sgd_mom_update(weight, grad, mom, lr_, momentum_, wd_, rescale_, clip_);
}

void SGD::update_multi(const std::vector<StateKey>& keys, std::vector<nd::NDArray>& weights,
                       const std::vector<nd::NDArray>& grads) {
  const char* op = momentum_ == 0 ? "multi_sgd_update" : "multi_sgd_mom_update";
  for (std::size_t i = 0; i < weights.size(); ++i) check_update(op, weights[i], grads[i]);
  // One list per (context, dtype), in the order the copies come.
  struct Group {
    Context ctx;
    DType dtype;
    std::vector<nd::NDArray> weights, grads, moms, masters;
  };
  std::vector<Group> groups;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const nd::NDArray& w = weights[i];
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.ctx == w.context() && g.dtype == w.dtype(); });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{w.context(), w.dtype(), {}, {}, {}, {}});
    it->weights.push_back(w);
    it->grads.push_back(grads[i]);
    if (momentum_ != 0) it->moms.push_back(state(op, keys[i], 0, w));
    if (uses_master(w)) it->masters.push_back(master_for(keys[i], w));
  }
  for (Group& g : groups) {
    const bool master = !g.masters.empty();
    if (momentum_ == 0 && master) nd::multi_mp_sgd_update(g.weights, g.grads, g.masters, lr_, wd_, rescale_, clip_);
    else if (momentum_ == 0) nd::multi_sgd_update(g.weights, g.grads, lr_, wd_, rescale_, clip_);
    else if (master) {
      nd::multi_mp_sgd_mom_update(g.weights, g.grads, g.moms, g.masters, lr_, momentum_, wd_, rescale_, clip_);
    } else {
      nd::multi_sgd_mom_update(g.weights, g.grads, g.moms, lr_, momentum_, wd_, rescale_, clip_);
    }
  }
}

void Optimizer::update_multi(const std::vector<StateKey>& keys, std::vector<nd::NDArray>& weights,
                             const std::vector<nd::NDArray>& grads) {
  for (std::size_t i = 0; i < weights.size(); ++i) check_update(name_, weights[i], grads[i]);
  for (std::size_t i = 0; i < weights.size(); ++i) prepare_state(keys[i], weights[i]);
  for (std::size_t i = 0; i < weights.size(); ++i) update(keys[i], weights[i], grads[i]);
}

Adam::Adam(const HyperParams& params) : Optimizer("adam") {
  lr_ = 0.001;
  read_params("adam", params, {{"learning_rate", &lr_}, {"wd", &wd_}, {"clip_gradient", &clip_},
                               {"rescale_grad", &rescale_}, {"beta1", &beta1_}, {"beta2", &beta2_},
                               {"epsilon", &epsilon_}, {"multi_precision", &multi_precision_}});
  check_common_params();
  check_fraction("adam", "beta1", beta1_);
  check_fraction("adam", "beta2", beta2_);
  check_non_negative("adam", "epsilon value", "epsilon", epsilon_);
}

void Adam::prepare_state(const StateKey& key, const nd::NDArray& weight) {
  const bool master = uses_master(weight);
  state("adam_update", key, 0, weight);
  state("adam_update", key, 1, weight);
  if (master) master_for(key, weight);
}

void Adam::update(const StateKey& key, nd::NDArray& weight, const nd::NDArray& grad) {
  check_update("adam_update", weight, grad);
  const bool master = uses_master(weight);
  nd::NDArray& mean = state("adam_update", key, 0, weight);
  nd::NDArray& var = state("adam_update", key, 1, weight);
  const std::int64_t steps = next_count(key);
  // MXNet's bias correction, folded into the step size as mx.optimizer.Adam does.
  const double t = static_cast<double>(steps);
  const double lr_t = lr_ * std::sqrt(1 - std::pow(beta2_, t)) / (1 - std::pow(beta1_, t));
  if (master) {
    nd::mp_adam_update(weight, grad, mean, var, master_for(key, weight), lr_t, beta1_, beta2_, epsilon_, wd_, rescale_,
                       clip_);
  } else {
    nd::adam_update(weight, grad, mean, var, lr_t, beta1_, beta2_, epsilon_, wd_, rescale_, clip_);
  }
}

std::unique_ptr<Optimizer> Optimizer::create(const std::string& name, const HyperParams& params) {
  if (name == "sgd") return std::make_unique<SGD>(params);
  if (name == "adam") return std::make_unique<Adam>(params);
  throw ValueError("unknown optimizer '" + name + "'; valid: adam, sgd");
}

}  // namespace mx::gluon
