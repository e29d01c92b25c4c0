#include "gluon/lr_scheduler.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include "context/error.hpp"
#include "ndarray/core/describe.hpp"

namespace mx::lr_scheduler {

namespace {

// "[10, 10, 20]"
std::string list(const std::vector<std::int64_t>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  return text + "]";
}

// MXNet's check of a decay factor (> 1 raises), and ours of a negative or NaN one.
void check_factor(const char* type, double factor) {
  if (!(factor >= 0 && factor <= 1)) {
    throw ValueError(std::string(type) + ": Factor must be no more than 1 to make lr reduce (and >= 0), got factor " +
                     nd::shortest_text(factor));
  }
}

// Poly and Cosine decay over max_update - warmup_steps updates, which must be at least one.
void check_max_update(const char* type, std::int64_t max_update, std::int64_t warmup_steps) {
  if (max_update < 1) {
    throw ValueError(std::string(type) + ": maximum number of updates must be strictly positive, got max_update " +
                     std::to_string(max_update));
  }
  if (warmup_steps >= max_update) {
    throw ValueError(std::string(type) + ": warmup_steps must be smaller than max_update, so that some updates "
                     "decay, but warmup_steps is " + std::to_string(warmup_steps) + " and max_update " +
                     std::to_string(max_update));
  }
}

}  // namespace

LRScheduler::LRScheduler(double base_lr, std::int64_t warmup_steps, double warmup_begin_lr,
                         const std::string& warmup_mode, const char* type)
    : type_(type), base_lr_(base_lr), warmup_steps_(warmup_steps), warmup_begin_lr_(warmup_begin_lr),
      warmup_final_lr_(base_lr), warmup_mode_(warmup_mode) {
  check_rate("base_lr", base_lr);
  check_rate("warmup_begin_lr", warmup_begin_lr);
  if (warmup_begin_lr > base_lr) {
    throw ValueError(std::string(type_) + ": Base lr has to be higher than warmup_begin_lr, but base_lr is " +
                     nd::shortest_text(base_lr) + " and warmup_begin_lr " + nd::shortest_text(warmup_begin_lr));
  }
  if (warmup_steps < 0) {
    throw ValueError(std::string(type_) + ": Warmup steps has to be positive or 0, got warmup_steps " +
                     std::to_string(warmup_steps));
  }
  if (warmup_mode != "linear" && warmup_mode != "constant") {
    throw ValueError(std::string(type_) + ": Supports only linear and constant modes of warmup, got warmup_mode '" +
                     warmup_mode + "'");
  }
}

void LRScheduler::check_rate(const char* what, double value) const {
  if (!(std::isfinite(value) && value >= 0)) {
    throw ValueError(std::string(type_) + ": " + what + " must be a finite number >= 0, got " + nd::shortest_text(value));
  }
}

void LRScheduler::set_base_lr(double lr) {
  check_rate("base_lr", lr);
  base_lr_ = lr;
}

void LRScheduler::check_state(const State& state) const {
  check_rate("base_lr", state.base_lr);
  if (state.position != 0) {
    throw ValueError(std::string(type_) + ": a saved position " + std::to_string(state.position) +
                     " for a schedule that keeps none (it must be 0)");
  }
}

void LRScheduler::set_state(const State& state) {
  check_state(state);
  base_lr_ = state.base_lr;
}

double LRScheduler::warmup_lr(std::int64_t num_update) const {
  if (warmup_mode_ == "constant") return warmup_begin_lr_;
  return warmup_begin_lr_ + (warmup_final_lr_ - warmup_begin_lr_) * static_cast<double>(num_update) /
                                static_cast<double>(warmup_steps_);
}

FactorScheduler::FactorScheduler(std::int64_t step, double factor, double stop_factor_lr, double base_lr,
                                 std::int64_t warmup_steps, double warmup_begin_lr, const std::string& warmup_mode)
    : LRScheduler(base_lr, warmup_steps, warmup_begin_lr, warmup_mode, "FactorScheduler"), step_(step),
      factor_(factor), stop_factor_lr_(stop_factor_lr) {
  if (step < 1) {
    throw ValueError("FactorScheduler: Schedule step must be greater or equal than 1 round, got step " +
                     std::to_string(step));
  }
  check_factor(type_, factor);
  check_rate("stop_factor_lr", stop_factor_lr);
}

double FactorScheduler::operator()(std::int64_t num_update) {
  if (num_update < warmup_steps_) return warmup_lr(num_update);
  // A loop rather than one power, as MXNet: a later call catches up on every step it passed.
  while (num_update > count_ + step_) {
    count_ += step_;
    base_lr_ = std::max(base_lr_ * factor_, stop_factor_lr_);
  }
  return base_lr_;
}

void FactorScheduler::check_state(const State& state) const {
  check_rate("base_lr", state.base_lr);
  if (state.position < 0 || state.position % step_ != 0) {
    throw ValueError("FactorScheduler: a saved position of " + std::to_string(state.position) +
                     " updates decayed for, which is not a multiple >= 0 of its step " + std::to_string(step_));
  }
}

void FactorScheduler::set_state(const State& state) {
  check_state(state);
  base_lr_ = state.base_lr;
  count_ = state.position;
}

MultiFactorScheduler::MultiFactorScheduler(std::vector<std::int64_t> steps, double factor, double base_lr,
                                           std::int64_t warmup_steps, double warmup_begin_lr,
                                           const std::string& warmup_mode)
    : LRScheduler(base_lr, warmup_steps, warmup_begin_lr, warmup_mode, "MultiFactorScheduler"),
      steps_(std::move(steps)), factor_(factor) {
  if (steps_.empty()) throw ValueError("MultiFactorScheduler: step must be a list of at least one update count");
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (i != 0 && steps_[i] <= steps_[i - 1]) {
      throw ValueError("MultiFactorScheduler: Schedule step must be an increasing integer list, got " + list(steps_));
    }
    if (steps_[i] < 1) {
      throw ValueError("MultiFactorScheduler: Schedule step must be greater or equal than 1 round, got " +
                       list(steps_));
    }
  }
  check_factor(type_, factor);
}

double MultiFactorScheduler::operator()(std::int64_t num_update) {
  if (num_update < warmup_steps_) return warmup_lr(num_update);
  while (next_step_ < steps_.size() && num_update > steps_[next_step_]) {
    ++next_step_;
    base_lr_ *= factor_;
  }
  return base_lr_;
}

void MultiFactorScheduler::check_state(const State& state) const {
  check_rate("base_lr", state.base_lr);
  if (state.position < 0 || state.position > static_cast<std::int64_t>(steps_.size())) {
    throw ValueError("MultiFactorScheduler: a saved position (next step) " + std::to_string(state.position) +
                     " outside [0, " + std::to_string(steps_.size()) + "] for its steps " + list(steps_));
  }
}

void MultiFactorScheduler::set_state(const State& state) {
  check_state(state);
  base_lr_ = state.base_lr;
  next_step_ = static_cast<std::size_t>(state.position);
}

PolyScheduler::PolyScheduler(std::int64_t max_update, double base_lr, double pwr, double final_lr,
                             std::int64_t warmup_steps, double warmup_begin_lr, const std::string& warmup_mode)
    : LRScheduler(base_lr, warmup_steps, warmup_begin_lr, warmup_mode, "PolyScheduler"), max_update_(max_update),
      power_(pwr), final_lr_(final_lr), base_lr_orig_(base_lr) {
  check_max_update(type_, max_update, warmup_steps);
  check_rate("pwr", pwr);
  check_rate("final_lr", final_lr);
}

double PolyScheduler::operator()(std::int64_t num_update) {
  if (num_update < warmup_steps_) return warmup_lr(num_update);
  if (num_update <= max_update_) {
    const double done = static_cast<double>(num_update - warmup_steps_) / static_cast<double>(max_update_ - warmup_steps_);
    base_lr_ = final_lr_ + (base_lr_orig_ - final_lr_) * std::pow(1 - done, power_);
  }
  return base_lr_;
}

CosineScheduler::CosineScheduler(std::int64_t max_update, double base_lr, double final_lr, std::int64_t warmup_steps,
                                 double warmup_begin_lr, const std::string& warmup_mode)
    : LRScheduler(base_lr, warmup_steps, warmup_begin_lr, warmup_mode, "CosineScheduler"), max_update_(max_update),
      final_lr_(final_lr), base_lr_orig_(base_lr) {
  check_max_update(type_, max_update, warmup_steps);
  check_rate("final_lr", final_lr);
}

double CosineScheduler::operator()(std::int64_t num_update) {
  if (num_update < warmup_steps_) return warmup_lr(num_update);
  if (num_update <= max_update_) {
    // In MXNet's order of operations, so that the rates agree to the last bit.
    const double angle = std::numbers::pi * static_cast<double>(num_update - warmup_steps_) /
                         static_cast<double>(max_update_ - warmup_steps_);
    base_lr_ = final_lr_ + (base_lr_orig_ - final_lr_) * (1 + std::cos(angle)) / 2;
  }
  return base_lr_;
}

}  // namespace mx::lr_scheduler
