#pragma once
// Learning-rate schedules, as mxnet.lr_scheduler (MXNet 1.x): a scheduler maps the number of
// updates made so far to a learning rate, optionally after a warm-up.
//
//   auto scheduler = std::make_shared<mx::lr_scheduler::CosineScheduler>(20, 0.3, 0.01);
//   gluon::Trainer trainer(net.collect_params(), "sgd", {}, scheduler);
//   (*scheduler)(5);   // the rate of the 5th update
//
// The Trainer calls the scheduler with MXNet's num_update: 1 for the first step, n for the n-th
// (0 before any); see gluon/trainer.hpp.
//
// Note [stateful schedules]: as in MXNet, a scheduler keeps state between calls. FactorScheduler
// and MultiFactorScheduler multiply base_lr in place as num_update passes their steps (so a
// smaller num_update later does not undo a decay); PolyScheduler and CosineScheduler recompute
// base_lr from the rate they were made with (MXNet's base_lr_orig) at every call up to
// max_update, and past max_update return the last rate they computed. set_base_lr therefore sets
// the rate a (Multi)FactorScheduler goes on decaying from, while a Poly- or CosineScheduler
// overwrites it at its next call. Called with num_update 1, 2, 3, ... (as the Trainer does), each
// follows the formula documented on its class.
#include <cstdint>
#include <string>
#include <vector>

namespace mx::lr_scheduler {

// The base of every schedule, as mxnet.lr_scheduler.LRScheduler. A user-defined schedule derives
// from it and overrides operator(), calling warmup_lr() for num_update < warmup_steps().
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;

  // The learning rate for num_update, the largest number of updates applied to any weight (see
  // Note [stateful schedules]). For num_update < warmup_steps it is the warm-up rate:
  //   "linear":   warmup_begin_lr + (warmup_final_lr - warmup_begin_lr) * num_update / warmup_steps
  //   "constant": warmup_begin_lr
  // where warmup_final_lr is the base_lr the scheduler was made with.
  virtual double operator()(std::int64_t num_update) = 0;

  double base_lr() const { return base_lr_; }
  // As assigning MXNet's scheduler.base_lr (what the Trainer does with a given learning_rate). Throws
  // mx::ValueError naming the scheduler and lr, and keeps the old rate, unless lr is finite and >= 0.
  void set_base_lr(double lr);
  std::int64_t warmup_steps() const { return warmup_steps_; }
  double warmup_begin_lr() const { return warmup_begin_lr_; }
  double warmup_final_lr() const { return warmup_final_lr_; }
  const std::string& warmup_mode() const { return warmup_mode_; }
  // "FactorScheduler", ...: the class, as errors and Trainer::save_states name it.
  const char* type() const { return type_; }

  // Where the schedule stands (Note [stateful schedules]), as Trainer::save_states keeps it: the
  // base_lr it has reached, and the position of its decay: FactorScheduler the updates it has
  // decayed for, MultiFactorScheduler the index of its next step, 0 for the others (Poly and
  // Cosine keep only the last rate, base_lr). A user-defined schedule with more state overrides
  // all three.
  struct State {
    double base_lr = 0;
    std::int64_t position = 0;
  };
  virtual State state() const { return {base_lr_, 0}; }
  // Throws mx::ValueError naming this scheduler and the value unless state could be one of this
  // scheduler's: base_lr a finite number >= 0, the position one this schedule reaches.
  virtual void check_state(const State& state) const;
  // check_state, then restores state; nothing changes when it throws.
  virtual void set_state(const State& state);

 protected:
  // `type` names the scheduler in errors ("FactorScheduler"). Throws mx::ValueError, as MXNet
  // raises, for warmup_steps < 0, a warmup_mode other than "linear" or "constant", and
  // warmup_begin_lr > base_lr; and (stricter than MXNet, as the optimizers are) for a base_lr or
  // warmup_begin_lr that is not a finite number >= 0.
  explicit LRScheduler(double base_lr = 0.01, std::int64_t warmup_steps = 0, double warmup_begin_lr = 0,
                       const std::string& warmup_mode = "linear", const char* type = "LRScheduler");

  // The warm-up rate above, for 0 <= num_update < warmup_steps (MXNet's get_warmup_lr).
  double warmup_lr(std::int64_t num_update) const;
  // Throws mx::ValueError naming this scheduler, `what` and value unless value is finite and >= 0.
  void check_rate(const char* what, double value) const;

  const char* type_;
  double base_lr_;
  std::int64_t warmup_steps_;
  double warmup_begin_lr_, warmup_final_lr_;
  std::string warmup_mode_;
};

// base_lr * factor^k after k = floor((num_update - 1) / step) whole steps (for num_update >= 1),
// never below stop_factor_lr: the rate drops at update step + 1, 2 * step + 1, ... After a
// warm-up the steps are still counted from update 0, as MXNet does.
// Throws mx::ValueError for step < 1 and a factor > 1 (as MXNet), a factor < 0, and a
// stop_factor_lr that is not a finite number >= 0.
class FactorScheduler : public LRScheduler {
 public:
  explicit FactorScheduler(std::int64_t step, double factor = 1, double stop_factor_lr = 1e-8, double base_lr = 0.01,
                           std::int64_t warmup_steps = 0, double warmup_begin_lr = 0,
                           const std::string& warmup_mode = "linear");
  double operator()(std::int64_t num_update) override;
  State state() const override { return {base_lr_, count_}; }
  // The position must be a multiple of step() >= 0.
  void check_state(const State& state) const override;
  void set_state(const State& state) override;

  std::int64_t step() const { return step_; }
  double factor() const { return factor_; }
  double stop_factor_lr() const { return stop_factor_lr_; }

 private:
  std::int64_t step_;
  double factor_, stop_factor_lr_;
  std::int64_t count_ = 0;  // the updates already decayed for, a multiple of step_
};

// base_lr * factor^k where k is the number of steps[i] < num_update: the rate drops at update
// steps[i] + 1. Throws mx::ValueError for an empty list, steps that are not strictly increasing or
// a step < 1 (as MXNet), and a factor outside [0, 1].
class MultiFactorScheduler : public LRScheduler {
 public:
  explicit MultiFactorScheduler(std::vector<std::int64_t> steps, double factor = 1, double base_lr = 0.01,
                                std::int64_t warmup_steps = 0, double warmup_begin_lr = 0,
                                const std::string& warmup_mode = "linear");
  double operator()(std::int64_t num_update) override;
  State state() const override { return {base_lr_, static_cast<std::int64_t>(next_step_)}; }
  // The position must be in [0, steps().size()].
  void check_state(const State& state) const override;
  void set_state(const State& state) override;

  const std::vector<std::int64_t>& steps() const { return steps_; }
  double factor() const { return factor_; }

 private:
  std::vector<std::int64_t> steps_;
  double factor_;
  std::size_t next_step_ = 0;  // steps_[next_step_] is the next drop (MXNet's cur_step_ind)
};

// After the warm-up, for num_update <= max_update:
//   final_lr + (base_lr - final_lr) * (1 - (num_update - warmup_steps) / (max_update - warmup_steps))^pwr
// and past max_update the last rate computed: final_lr once max_update was reached (Note [stateful
// schedules]). Throws mx::ValueError for max_update < 1 (as MXNet), warmup_steps >= max_update
// (where MXNet divides by zero or never decays), and a pwr or final_lr that is not a finite
// number >= 0.
class PolyScheduler : public LRScheduler {
 public:
  explicit PolyScheduler(std::int64_t max_update, double base_lr = 0.01, double pwr = 2, double final_lr = 0,
                         std::int64_t warmup_steps = 0, double warmup_begin_lr = 0,
                         const std::string& warmup_mode = "linear");
  double operator()(std::int64_t num_update) override;

  std::int64_t max_update() const { return max_update_; }
  double pwr() const { return power_; }
  double final_lr() const { return final_lr_; }

 private:
  std::int64_t max_update_;
  double power_, final_lr_;
  double base_lr_orig_;  // the rate the decay starts from
};

// After the warm-up, for num_update <= max_update:
//   final_lr + (base_lr - final_lr) * (1 + cos(pi * (num_update - warmup_steps) / (max_update - warmup_steps))) / 2
// and past max_update the last rate computed: final_lr once max_update was reached. Throws
// mx::ValueError for max_update < 1 (as MXNet), warmup_steps >= max_update, and a final_lr that
// is not a finite number >= 0.
class CosineScheduler : public LRScheduler {
 public:
  explicit CosineScheduler(std::int64_t max_update, double base_lr = 0.01, double final_lr = 0,
                           std::int64_t warmup_steps = 0, double warmup_begin_lr = 0,
                           const std::string& warmup_mode = "linear");
  double operator()(std::int64_t num_update) override;

  std::int64_t max_update() const { return max_update_; }
  double final_lr() const { return final_lr_; }

 private:
  std::int64_t max_update_;
  double final_lr_;
  double base_lr_orig_;  // the rate the decay starts from
};

}  // namespace mx::lr_scheduler
