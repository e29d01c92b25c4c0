#include "gluon/optimizer.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/optimizer.hpp"
#include "ndarray/ops/reduce.hpp"

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

// Throws unless value is finite and >= 0. `label` names it as PyTorch does ("learning rate").
void check_non_negative(const char* optimizer, const char* label, const char* name, double value) {
  if (!(std::isfinite(value) && value >= 0)) {
    throw ValueError(std::string(optimizer) + ": Invalid " + label + ": " + nd::shortest_text(value) + " (" + name +
                     " must be a finite number >= 0)");
  }
}

// Throws unless 0 <= value < 1.
void check_fraction(const char* optimizer, const char* name, double value) {
  if (!(value >= 0 && value < 1)) {
    throw ValueError(std::string(optimizer) + ": Invalid " + name + " value: " + nd::shortest_text(value) + " (" + name +
                     " must be in [0, 1))");
  }
}

}  // namespace

void Optimizer::check_common_params() const {
  check_non_negative(name_, "learning rate", "learning_rate", lr_);
  check_non_negative(name_, "weight decay", "wd", wd_);
  if (std::isnan(clip_)) {
    throw ValueError(std::string(name_) + ": Invalid clip_gradient value: " + nd::shortest_text(clip_) +
                     " (a positive clip_gradient clips gradients to [-clip_gradient, clip_gradient]; zero or a "
                     "negative one turns clipping off)");
  }
  if (!std::isfinite(rescale_)) {
    throw ValueError(std::string(name_) + ": Invalid rescale_grad value: " + nd::shortest_text(rescale_) +
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
    ++generation_;
  } else if (state.shape() != weight.shape()) {
    throw ShapeError(std::string(op) + ": state " + nd::describe(state) + " of parameter " +
                     std::to_string(key.param) + ", copy " + std::to_string(key.copy) + " does not match weight " +
                     nd::describe(weight));
  } else if (state.dtype() != want || state.context() != weight.context()) {
    if (state.dtype() != want) state = state.astype(want);
    state = state.as_in_context(weight.context());
    ++generation_;
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
  ++generation_;
}

void Optimizer::set_scalars(const std::map<std::string, double>& scalars) {
  if (!scalars.empty()) {
    throw ValueError(std::string(name_) + ": keeps no scalars between steps, given '" + scalars.begin()->first + "'");
  }
}

nd::NDArray& Optimizer::master_for(const StateKey& key, const nd::NDArray& weight) {
  nd::NDArray& master = master_[key];
  if (master.is_none() || master.shape() != weight.shape()) {
    master = weight.detach().astype(DType::float32);
    ++generation_;
  } else if (master.context() != weight.context()) {
    master = master.as_in_context(weight.context());
    ++generation_;
  }
  return master;
}

double Optimizer::lr_for(const StateKey& key) const {
  const auto it = multipliers_.find(key.param);
  return it == multipliers_.end() ? lr_ : lr_ * it->second.first;
}

double Optimizer::wd_for(const StateKey& key) const {
  const auto it = multipliers_.find(key.param);
  return it == multipliers_.end() ? wd_ : wd_ * it->second.second;
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

void Optimizer::update_multi(const std::vector<StateKey>& keys, std::vector<nd::NDArray>& weights,
                             const std::vector<nd::NDArray>& grads) {
  for (std::size_t i = 0; i < weights.size(); ++i) check_update(name_, weights[i], grads[i]);
  for (std::size_t i = 0; i < weights.size(); ++i) prepare_state(keys[i], weights[i]);
  for (std::size_t i = 0; i < weights.size(); ++i) update(keys[i], weights[i], grads[i]);
}

// --- the rule optimizers -------------------------------------------------------------------------

namespace {

// (n, 2) float32: the L2 norms of a[i] and b[i] (as MXNet's LARS and LAMB take them: float32
// whatever the dtype), on their context, from two multi_sum_sq passes; nothing waits for them.
nd::NDArray norm_pairs(const std::vector<nd::NDArray>& a, const std::vector<nd::NDArray>& b) {
  const std::int64_t n = static_cast<std::int64_t>(a.size());
  return nd::sqrt(nd::concat({nd::multi_sum_sq(a).reshape({n, 1}), nd::multi_sum_sq(b).reshape({n, 1})}, 1));
}

// A rule optimizer's hyper-parameters beyond the shared ones: MXNet 1.9's name, default, and
// where it goes (RuleParams' h0..h3; or nowhere, for the flags read below).
struct Hyper {
  const char* name;
  double value;
  int slot;  // 0..3: RuleParams::h<slot>; -1: read by the constructor itself
};

struct RuleSpec {
  const char* name;
  op::UpdateRule rule;
  double learning_rate;  // MXNet 1.9's default
  std::vector<Hyper> hyper;
  std::vector<std::string> states;
};

const std::vector<RuleSpec>& rule_specs() {
  using R = op::UpdateRule;
  static const std::vector<RuleSpec> specs = {
      {"sgd", R::sgd, 0.01, {{"momentum", 0.0, 0}}, {"mom"}},
      {"adam", R::adam, 0.001, {{"beta1", 0.9, 0}, {"beta2", 0.999, 1}, {"epsilon", 1e-8, 2}}, {"mean", "var"}},
      {"nag", R::nag, 0.01, {{"momentum", 0.0, 0}}, {"mom"}},
      {"signum", R::signum, 0.01, {{"momentum", 0.9, 0}, {"wd_lh", 0.0, 1}}, {"mom"}},
      {"adagrad", R::adagrad, 0.01, {{"eps", 1e-7, 0}}, {"history"}},
      {"rmsprop", R::rmsprop, 0.001,
       {{"gamma1", 0.9, 0}, {"gamma2", 0.9, -1}, {"epsilon", 1e-8, -1}, {"centered", 0, -1}, {"clip_weights", -1, -1}},
       {"n"}},
      {"adadelta", R::adadelta, 1.0, {{"rho", 0.9, 0}, {"epsilon", 1e-5, 1}}, {"acc_g", "acc_delta"}},
      {"adamax", R::adamax, 0.002, {{"beta1", 0.9, 0}, {"beta2", 0.999, 1}}, {"m", "u"}},
      {"nadam", R::nadam, 0.001,
       {{"beta1", 0.9, 0}, {"beta2", 0.999, 1}, {"epsilon", 1e-8, 2}, {"schedule_decay", 0.004, -1}}, {"m", "v"}},
      {"adamw", R::adamw, 0.001, {{"beta1", 0.9, 0}, {"beta2", 0.999, 1}, {"epsilon", 1e-8, 2}, {"eta", 1.0, 3}},
       {"mean", "var"}},
      {"ftrl", R::ftrl, 0.1, {{"lamda1", 0.01, 0}, {"beta", 1.0, 1}}, {"z", "n"}},
      {"ftml", R::ftml, 0.0025, {{"beta1", 0.6, 0}, {"beta2", 0.999, 1}, {"epsilon", 1e-8, 2}}, {"d", "v", "z"}},
      {"lamb", R::lamb_direction, 0.001,
       {{"beta1", 0.9, 0}, {"beta2", 0.999, 1}, {"epsilon", 1e-6, 2}, {"lower_bound", -1, -1}, {"upper_bound", -1, -1},
        {"bias_correction", 1, -1}},
       {"mean", "var"}},
      {"lars", R::lars, 0.01, {{"momentum", 0.0, 0}, {"eta", 0.001, 1}, {"eps", 0.0, 2}, {"momentum_correction", 1, -1}},
       {"mom"}},
  };
  return specs;
}

}  // namespace

const std::vector<std::string>& RuleOptimizer::names() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v;
    for (const RuleSpec& spec : rule_specs()) v.push_back(spec.name);
    return v;
  }();
  return all;
}

RuleOptimizer::RuleOptimizer(const std::string& name, const HyperParams& params)
    : Optimizer(nullptr) {
  const auto spec = std::find_if(rule_specs().begin(), rule_specs().end(), [&](const RuleSpec& s) { return name == s.name; });
  if (spec == rule_specs().end()) throw ValueError("RuleOptimizer: unknown rule '" + name + "'");
  name_ = spec->name;
  lr_ = spec->learning_rate;
  std::map<std::string, double> hyper;
  for (const Hyper& h : spec->hyper) hyper[h.name] = h.value;
  std::map<std::string, double*> fields = {{"learning_rate", &lr_}, {"wd", &wd_}, {"clip_gradient", &clip_},
                                           {"rescale_grad", &rescale_}, {"multi_precision", &multi_precision_}};
  for (auto& [key, value] : hyper) fields[key] = &value;
  read_params(name_, params, fields);
  check_common_params();
  params_.rule = spec->rule;
  for (const Hyper& h : spec->hyper) {
    if (h.slot == 0) params_.h0 = hyper[h.name];
    if (h.slot == 1) params_.h1 = hyper[h.name];
    if (h.slot == 2) params_.h2 = hyper[h.name];
    if (h.slot == 3) params_.h3 = hyper[h.name];
  }
  state_names_ = spec->states;
  // Ranges, named as MXNet names them.
  for (const char* fraction : {"momentum", "beta1", "beta2", "gamma1", "gamma2", "rho"}) {
    if (hyper.count(fraction)) check_fraction(name_, fraction, hyper[fraction]);
  }
  for (const char* positive : {"eps", "epsilon", "lamda1", "beta", "eta", "wd_lh", "schedule_decay"}) {
    const std::string label = std::string(positive) == "epsilon" ? "epsilon value" : positive;
    if (hyper.count(positive)) check_non_negative(name_, label.c_str(), positive, hyper[positive]);
  }
  // sgd_update, signsgd_update, and nag's and lars's sgd_update, when momentum is 0: no state, as MXNet.
  if ((spec->rule == op::UpdateRule::sgd || spec->rule == op::UpdateRule::signum || spec->rule == op::UpdateRule::nag ||
       spec->rule == op::UpdateRule::lars) &&
      params_.h0 == 0) {
    state_names_.clear();
  }
  if (spec->rule == op::UpdateRule::lamb_direction) {
    lower_bound_ = hyper["lower_bound"];
    upper_bound_ = hyper["upper_bound"];
    bias_correction_ = hyper["bias_correction"] != 0;
  }
  if (spec->rule == op::UpdateRule::lars) momentum_correction_ = hyper["momentum_correction"] != 0;
  if (spec->rule == op::UpdateRule::rmsprop) {
    const double clip_weights = hyper["clip_weights"];
    if (std::isnan(clip_weights)) throw ValueError("rmsprop: Invalid clip_weights value: nan");
    if (hyper["centered"] != 0) {  // rmspropalex_update
      params_.rule = op::UpdateRule::rmsprop_centered;
      params_.h1 = hyper["gamma2"];
      params_.h2 = clip_weights;
      params_.h3 = hyper["epsilon"];
      state_names_ = {"n", "g", "delta"};
    } else {
      params_.h1 = hyper["epsilon"];
      params_.h2 = clip_weights;
    }
  }
  if (spec->rule == op::UpdateRule::nadam) schedule_decay_ = hyper["schedule_decay"];
  params_.num_states = static_cast<std::int32_t>(state_names_.size());
}

std::map<std::string, double> RuleOptimizer::scalars() const {
  if (params_.rule == op::UpdateRule::nadam) return {{"m_schedule", m_schedule_}};
  if (params_.rule == op::UpdateRule::lars) return {{"last_lr", last_lr_}};
  return {};
}

void RuleOptimizer::set_scalars(const std::map<std::string, double>& scalars) {
  const std::map<std::string, double> mine = this->scalars();
  for (const auto& [name, value] : scalars) {
    if (!mine.count(name)) {
      throw ValueError(std::string(name_) + ": no scalar '" + name + "' between steps" +
                       (mine.empty() ? std::string(" (it keeps none)") : " (it keeps '" + mine.begin()->first + "')"));
    }
  }
  for (const auto& [name, value] : scalars) {
    if (name == "m_schedule") m_schedule_ = value;
    if (name == "last_lr") last_lr_ = value;
  }
}

void RuleOptimizer::update(const StateKey& key, nd::NDArray& weight, const nd::NDArray& grad) {
  std::vector<nd::NDArray> weights{weight};
  update_multi({key}, weights, {grad});
}

// Note [the update plan]
// A Trainer's step hands update_multi the same copies every time. The first step with a list
// checks them, makes their states and groups them into _multi_update's lists (one per context,
// dtype and master copy or not, in the order the copies come); the next steps with the same
// arrays (the same keys, weights and gradients, and no state made, moved or replaced since:
// Optimizer::generation_) reuse those lists and only compute each tensor's scalars, so that the
// host's share of a step grows by a few hundred nanoseconds per tensor, not by the checks and
// lookups of a whole op call.
struct RuleOptimizer::Plan {
  struct Group {
    std::vector<std::size_t> tensors;  // places in the step's lists
    std::optional<nd::MultiRuleUpdate> lists;
    std::vector<nd::NDArray> norms_of, norms_with;  // lamb, lars: what norm_pairs takes
  };
  std::vector<StateKey> keys;
  std::vector<nd::NDArray> weights, grads;  // held, so that no other array can take their place
  std::uint64_t generation = 0;
  std::vector<std::int64_t*> counts;  // each copy's update count, in counts_
  std::vector<Group> groups;

  bool matches(const std::vector<StateKey>& k, const std::vector<nd::NDArray>& w, const std::vector<nd::NDArray>& g,
               std::uint64_t current) const {
    if (generation != current || k != keys || w.size() != weights.size() || g.size() != grads.size()) return false;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (!w[i].is(weights[i]) || !g[i].is(grads[i])) return false;
    }
    return true;
  }
};

RuleOptimizer::~RuleOptimizer() = default;

std::unique_ptr<RuleOptimizer::Plan> RuleOptimizer::make_plan(const std::vector<StateKey>& keys,
                                                              std::vector<nd::NDArray>& weights,
                                                              const std::vector<nd::NDArray>& grads) {
  // Every check, state and master copy before any update runs (the lists' own checks included).
  for (std::size_t i = 0; i < weights.size(); ++i) check_update(name_, weights[i], grads[i]);
  auto plan = std::make_unique<Plan>();
  plan->keys = keys;
  plan->weights = weights;
  plan->grads = grads;
  struct Lists {
    Context ctx;
    DType dtype;
    bool master;
    std::vector<std::size_t> tensors;
    std::vector<nd::NDArray> weights, grads, masters;
    std::vector<std::vector<nd::NDArray>> states;
  };
  std::vector<Lists> lists;
  const bool lamb = params_.rule == op::UpdateRule::lamb_direction;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const nd::NDArray& w = weights[i];
    const bool master = uses_master(w);
    auto it = std::find_if(lists.begin(), lists.end(), [&](const Lists& l) {
      return l.ctx == w.context() && l.dtype == w.dtype() && l.master == master;
    });
    if (it == lists.end()) it = lists.insert(lists.end(), Lists{w.context(), w.dtype(), master, {}, {}, {}, {}, {}});
    it->tensors.push_back(i);
    it->weights.push_back(w);
    it->grads.push_back(grads[i]);
    std::vector<nd::NDArray> states;
    for (std::size_t k = 0; k < state_names_.size(); ++k) states.push_back(state(name_, keys[i], k, w));
    // LAMB's phase 1 writes each direction into a third array, which phase 2 steps along.
    if (lamb) states.push_back(nd::empty(w.shape(), w.context(), master ? DType::float32 : w.dtype()));
    it->states.push_back(std::move(states));
    if (master) it->masters.push_back(master_for(keys[i], w));
  }
  for (Lists& l : lists) {
    Plan::Group group;
    group.tensors = l.tensors;
    group.lists.emplace(static_cast<std::int32_t>(l.states.empty() ? 0 : l.states[0].size()), l.weights, l.grads,
                        l.states, l.master ? &l.masters : nullptr);
    if (lamb || params_.rule == op::UpdateRule::lars) {
      group.norms_of = l.master ? l.masters : l.weights;
      for (std::size_t i = 0; i < l.weights.size(); ++i) group.norms_with.push_back(lamb ? l.states[i].back() : l.grads[i]);
    }
    plan->groups.push_back(std::move(group));
  }
  for (const StateKey& key : keys) plan->counts.push_back(&counts_[key]);
  plan->generation = generation_;
  return plan;
}

void RuleOptimizer::update_multi(const std::vector<StateKey>& keys, std::vector<nd::NDArray>& weights,
                                 const std::vector<nd::NDArray>& grads) {
  // A Trainer whose gradients are summed in buckets updates each bucket's parameters as they come:
  // several lists per step, a plan each.
  constexpr std::size_t kMaxPlans = 16;
  auto it = std::find_if(plans_.begin(), plans_.end(),
                         [&](const std::unique_ptr<Plan>& p) { return p->matches(keys, weights, grads, generation_); });
  if (it == plans_.end()) {
    // Plans of another generation hold states that were replaced: none of them can match again.
    std::erase_if(plans_, [&](const std::unique_ptr<Plan>& p) { return p->generation != generation_; });
    if (plans_.size() == kMaxPlans) plans_.erase(plans_.begin());
    std::unique_ptr<Plan> made = make_plan(keys, weights, grads);  // a list that fails its checks leaves no plan
    // make_plan may have made states (a new generation): the other plans are then stale too.
    std::erase_if(plans_, [&](const std::unique_ptr<Plan>& p) { return p->generation != generation_; });
    plans_.push_back(std::move(made));
    it = plans_.end() - 1;
  }
  const Plan& plan = **it;
  const double beta1 = params_.h0, beta2 = params_.h1;
  double m_schedule = m_schedule_;  // kept, with the update counts, only once every group is updated
  std::vector<op::TensorScalars> scalars(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    // The step scalars, from this copy's update count t.
    const double t = static_cast<double>(*plan.counts[i] + 1);
    op::TensorScalars& s = scalars[i];
    s.lr = lr_for(keys[i]);
    s.wd = wd_for(keys[i]);
    switch (params_.rule) {
      case op::UpdateRule::adam:  // MXNet's bias correction, folded into the step size as mx.optimizer.Adam does
        s.lr = s.lr * std::sqrt(1 - std::pow(beta2, t)) / (1 - std::pow(beta1, t));
        break;
      case op::UpdateRule::adamax:
        s.c0 = s.lr / (1 - std::pow(beta1, t));
        break;
      case op::UpdateRule::nadam: {
        // MXNet's m_schedule: a product over every update, of any parameter; once per parameter
        // whatever its number of copies (MXNet's multiplies once per device, so that its copies
        // drift apart), the copies of one parameter coming one after the other.
        const double momentum_t = beta1 * (1 - 0.5 * std::pow(0.96, t * schedule_decay_));
        const double momentum_next = beta1 * (1 - 0.5 * std::pow(0.96, (t + 1) * schedule_decay_));
        if (i == 0 || keys[i].param != keys[i - 1].param) m_schedule *= momentum_t;
        s.c0 = m_schedule;
        s.c1 = m_schedule * momentum_next;
        s.c2 = momentum_t;
        s.c3 = momentum_next;
        s.c4 = 1 - std::pow(beta2, t);
        break;
      }
      case op::UpdateRule::ftml:
        s.c0 = 1 - std::pow(beta1, t);
        s.c1 = 1 - std::pow(beta2, t);
        break;
      case op::UpdateRule::lamb_direction:
        s.c0 = bias_correction_ ? 1 - std::pow(beta1, t) : 1;
        s.c1 = bias_correction_ ? 1 - std::pow(beta2, t) : 1;
        break;
      default:
        break;
    }
  }
  op::RuleParams p = params_;
  p.rescale = rescale_;
  p.clip = clip_;
  if (params_.rule == op::UpdateRule::lars) {
    // MXNet's momentum_correction: the momentum scaled by the rate's change since the last step.
    const double last = last_lr_ < 0 ? lr_ : last_lr_;
    if (momentum_correction_ && last != 0) p.h0 = params_.h0 * lr_ / last;
  }
  for (const Plan::Group& g : plan.groups) {
    std::vector<op::TensorScalars> group_scalars;
    group_scalars.reserve(g.tensors.size());
    for (const std::size_t i : g.tensors) group_scalars.push_back(scalars[i]);
    if (params_.rule == op::UpdateRule::lamb_direction) {
      op::RuleParams phase1 = p;
      phase1.num_states = p.num_states + 1;
      (*g.lists)(phase1, group_scalars);
      op::RuleParams phase2 = phase1;
      phase2.rule = op::UpdateRule::lamb_step;
      phase2.h0 = lower_bound_;
      phase2.h1 = upper_bound_;
      (*g.lists)(phase2, group_scalars, norm_pairs(g.norms_of, g.norms_with));
    } else if (params_.rule == op::UpdateRule::lars) {
      (*g.lists)(p, group_scalars, norm_pairs(g.norms_of, g.norms_with));
    } else {
      (*g.lists)(p, group_scalars);
    }
  }
  for (std::int64_t* count : plan.counts) ++*count;
  m_schedule_ = m_schedule;
  last_lr_ = lr_;
}

std::unique_ptr<Optimizer> Optimizer::create(const std::string& given, const HyperParams& params) {
  std::string name = given;  // as MXNet's registry: "SGD" is sgd
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::vector<std::string>& rules = RuleOptimizer::names();
  if (std::find(rules.begin(), rules.end(), name) != rules.end()) return std::make_unique<RuleOptimizer>(name, params);
  std::vector<std::string> valid = rules;
  std::sort(valid.begin(), valid.end());
  std::string list;
  for (const std::string& v : valid) list += (list.empty() ? "" : ", ") + v;
  throw ValueError("unknown optimizer '" + given + "'; valid: " + list);
}

}  // namespace mx::gluon
