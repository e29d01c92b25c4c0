#pragma once
// Optimizers, as mx.optimizer: SGD (with momentum) and Adam. Each update is one fused pass over a
// parameter copy (a CUDA kernel on a GPU), reading weight, gradient and state once.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"
#include "ndarray/ops/update_rules.hpp"

namespace mx::gluon {

using HyperParams = std::map<std::string, double>;

// Which state an update uses: the parameter's index in its Trainer (fixed when the Trainer is
// made, so freezing a parameter does not move the others' state) and the copy's index.
struct StateKey {
  std::size_t param = 0, copy = 0;
  auto operator<=>(const StateKey&) const = default;
};

// What an optimizer keeps for one parameter copy between steps (Trainer::save_states): its state
// arrays in the order of Optimizer::state_names() (float32 for a 16-bit weight under
// multi_precision), the float32 master copy of a 16-bit weight under multi_precision (none
// otherwise), and the updates applied to that copy so far (the `t` of Adam's bias correction).
struct CopyState {
  std::vector<nd::NDArray> states;
  nd::NDArray master;
  std::int64_t count = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one step to weight from grad (scaled by rescale_grad), keeping per-copy state under
  // key. State follows its weight to another context (Parameter::reset_ctx) or dtype.
  virtual void update(const StateKey& key, nd::NDArray& weight, const nd::NDArray& grad) = 0;
  // The same step for a list of copies (a Trainer's whole step): update() for each, unless the
  // optimizer has a multi-tensor update (RuleOptimizer: one launch per context and dtype).
  // Everything is checked, and every state made (prepare_state), before
  // anything changes: a step that fails, out of memory included, leaves weights and state as they
  // were.
  virtual void update_multi(const std::vector<StateKey>& keys, std::vector<nd::NDArray>& weights,
                            const std::vector<nd::NDArray>& grads);
  // Drops key's float32 master copy: the next update makes it again from the weight (which was
  // given new values from outside, Parameter::data_version).
  void forget_master(const StateKey& key) {
    master_.erase(key);
    ++generation_;
  }
  double learning_rate() const { return lr_; }
  // Throws mx::ValueError naming the value, and keeps the old rate, unless lr is finite and >= 0.
  void set_learning_rate(double lr);
  void set_rescale_grad(double rescale) { rescale_ = rescale; }
  // Per parameter (StateKey::param): its lr_mult and wd_mult (Parameter::lr_mult); 1 for one not
  // in the map. The Trainer sets them before each update.
  void set_multipliers(std::map<std::size_t, std::pair<double, double>> multipliers) {
    multipliers_ = std::move(multipliers);
  }

  // The name create() knows it by ("sgd") and the names of its per-copy state arrays ({"mom"};
  // SGD without momentum: none).
  const char* name() const { return name_; }
  virtual std::vector<std::string> state_names() const { return {}; }
  // Every copy's state (arrays shared, not copied), and replacing all of it (Trainer::load_states,
  // which checks names, shapes and dtypes first). The arrays follow their weights' contexts at the
  // next update.
  std::map<StateKey, CopyState> states() const;
  void set_states(const std::map<StateKey, CopyState>& states);
  // The optimizer's own scalars between steps, beside the per-copy states (Nadam's momentum
  // schedule, LARS's previous rate), by name; set_scalars takes what scalars() gave, and throws
  // mx::ValueError naming an unknown one (nothing changed).
  virtual std::map<std::string, double> scalars() const { return {}; }
  virtual void set_scalars(const std::map<std::string, double>& scalars);

  // By name, in any case as MXNet's registry: "sgd", "adam" or a RuleOptimizer's, with hyper-parameters (learning_rate, wd, clip_gradient, rescale_grad,
  // multi_precision, and momentum / beta1, beta2, epsilon). Unknown names throw mx::ValueError listing the valid ones;
  // so does a value out of its range, naming it (as PyTorch's "Invalid learning rate: -1"):
  // learning_rate, wd and epsilon must be finite and >= 0, momentum, beta1 and beta2 in [0, 1),
  // rescale_grad finite, clip_gradient a number (a positive one clips the rescaled gradient to
  // [-clip_gradient, clip_gradient]; zero or a negative one, the default, turns clipping off).
  // multi_precision (non-zero: on) keeps, for each float16 or bfloat16 weight, a float32 master
  // copy and float32 states, updated in one fused pass (mp_sgd_update, mp_adam_update) whose
  // result the weight gets rounded, as MXNet's. The master copy is made from the weight at its
  // first update, and again after the weight is given new values (a Trainer checks
  // Parameter::data_version: set_data, load_parameters).
  static std::unique_ptr<Optimizer> create(const std::string& name, const HyperParams& params);

  // Throws unless grad can update weight: the same context, shape and floating-point dtype.
  static void check_update(const char* op, const nd::NDArray& weight, const nd::NDArray& grad);

 protected:
  explicit Optimizer(const char* name = "optimizer") : name_(name) {}
  // Throws mx::ValueError naming the first of the shared hyper-parameters that is out of range.
  void check_common_params() const;
  // Makes the state that update() will use for key, so that update() allocates nothing.
  virtual void prepare_state(const StateKey& /*key*/, const nd::NDArray& /*weight*/) {}
  // The float32 master copy of a 16-bit weight under multi_precision (made at its first update).
  nd::NDArray& master_for(const StateKey& key, const nd::NDArray& weight);
  bool uses_master(const nd::NDArray& weight) const { return multi_precision_ != 0 && is_half(weight.dtype()); }
  // State array i of key (of state_names()), zeros like weight at first use (float32 under
  // multi_precision for a 16-bit weight), then moved to the weight's context and dtype if the
  // parameter was moved (reset_ctx) or cast since. Throws mx::ShapeError naming op when a state
  // does not match its weight.
  nd::NDArray& state(const char* op, const StateKey& key, std::size_t i, const nd::NDArray& weight);
  // The learning rate and weight decay of key's parameter: the optimizer's times its multipliers.
  double lr_for(const StateKey& key) const;
  double wd_for(const StateKey& key) const;
  const char* name_;  // "sgd", as create() knows it; names the optimizer in errors
  double lr_ = 0.01, wd_ = 0, clip_ = -1, rescale_ = 1;
  double multi_precision_ = 0;  // a hyper-parameter: non-zero is on
  std::map<StateKey, nd::NDArray> master_;
  std::map<StateKey, std::vector<nd::NDArray>> states_;
  std::map<StateKey, std::int64_t> counts_;
  std::map<std::size_t, std::pair<double, double>> multipliers_;
  // Advanced whenever a state or master copy is made, moved, cast or replaced, or the counts are
  // replaced: what an optimizer that keeps lists of them between steps checks.
  std::uint64_t generation_ = 0;
};

// MXNet 1.9's element-wise optimizers, one class configured by name (create): sgd, adam, nag,
// signum, adagrad, rmsprop (centered, clip_weights), adadelta, adamax, nadam, adamw, ftrl, ftml,
// lamb, lars. Each step updates every copy of a context and dtype in one fused pass
// (nd::multi_rule_update; lamb in two, around the norms of its weights and directions; lars after
// the weights' and gradients' norms, nd::multi_sum_sq), with the rule, hyper-parameter names and
// defaults of MXNet 1.9 (ndarray/ops/update_rules.hpp). adamw is MXNet's _contrib_adamw_update:
// w -= eta (lr m / (sqrt(v) + epsilon) + wd w), without bias correction, so its wd is not scaled
// by the rate: PyTorch's AdamW(lr, weight_decay) decays as wd = lr * weight_decay here.
class RuleOptimizer : public Optimizer {
 public:
  RuleOptimizer(const std::string& name, const HyperParams& params);
  ~RuleOptimizer() override;
  void update(const StateKey& key, nd::NDArray& weight, const nd::NDArray& grad) override;
  void update_multi(const std::vector<StateKey>& keys, std::vector<nd::NDArray>& weights,
                    const std::vector<nd::NDArray>& grads) override;
  std::vector<std::string> state_names() const override { return state_names_; }
  std::map<std::string, double> scalars() const override;
  void set_scalars(const std::map<std::string, double>& scalars) override;
  // The names create() knows this class by.
  static const std::vector<std::string>& names();

 private:
  std::vector<std::string> state_names_;
  op::RuleParams params_;
  double m_schedule_ = 1;  // Nadam: the momentum schedule's product over every update so far
  double schedule_decay_ = 0.004;
  double lower_bound_ = -1, upper_bound_ = -1;  // LAMB's bounds of the weight norm (<= 0: none)
  bool bias_correction_ = true;                 // LAMB
  bool momentum_correction_ = true;             // LARS
  double last_lr_ = -1;                         // LARS: the previous step's rate (-1: none yet)
  struct Plan;                                  // Note [the update plan], gluon/optimizer.cpp
  std::vector<std::unique_ptr<Plan>> plans_;
  std::unique_ptr<Plan> make_plan(const std::vector<StateKey>& keys, std::vector<nd::NDArray>& weights,
                                  const std::vector<nd::NDArray>& grads);
};

// SGD (momentum) and Adam by their class names, as mx.optimizer.SGD and mx.optimizer.Adam.
class SGD : public RuleOptimizer {
 public:
  explicit SGD(const HyperParams& params = {}) : RuleOptimizer("sgd", params) {}
};

class Adam : public RuleOptimizer {
 public:
  explicit Adam(const HyperParams& params = {}) : RuleOptimizer("adam", params) {}
};

}  // namespace mx::gluon
