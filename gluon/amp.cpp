#include "gluon/amp.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "gluon/trainer.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/optimizer.hpp"

namespace mx::amp {

LossScaler::LossScaler(double init_scale, double scale_factor, std::int64_t scale_window)
    : scale_(init_scale), factor_(scale_factor), window_(scale_window) {
  if (!(std::isfinite(init_scale) && init_scale > 0)) {
    throw ValueError("LossScaler: init_scale " + std::to_string(init_scale) + " must be a positive finite number");
  }
  if (!(std::isfinite(scale_factor) && scale_factor > 1)) {
    throw ValueError("LossScaler: scale_factor " + std::to_string(scale_factor) + " must be a finite number > 1");
  }
  if (scale_window < 1) throw ValueError("LossScaler: scale_window " + std::to_string(scale_window) + " must be >= 1");
}

bool LossScaler::has_overflow(const gluon::ParameterDict& params) const {
  std::vector<std::pair<Context, std::vector<nd::NDArray>>> by_context;
  for (const auto& [name, param] : params) {
    if (param.grad_req() == "null" || !param.is_initialized()) continue;
    for (const nd::NDArray& g : param.list_grad()) {
      auto it = std::find_if(by_context.begin(), by_context.end(), [&](const auto& c) { return c.first == g.context(); });
      if (it == by_context.end()) it = by_context.insert(by_context.end(), {g.context(), {}});
      it->second.push_back(g);
    }
  }
  std::vector<nd::NDArray> flags;  // queued on every context before the first is read
  for (const auto& [ctx, grads] : by_context) flags.push_back(nd::multi_all_finite(grads));
  return std::any_of(flags.begin(), flags.end(), [](const nd::NDArray& f) { return f.asscalar<float>() == 0.0f; });
}

void LossScaler::update_scale(bool overflow) {
  if (overflow) {
    scale_ = std::max(1.0, scale_ / factor_);
    clean_ = 0;
    ++skipped_;
  } else if (++clean_ >= window_) {
    scale_ *= factor_;
    clean_ = 0;
  }
}

void LossScaler::set_state(double scale, std::int64_t unskipped, std::int64_t skipped) {
  if (!(std::isfinite(scale) && scale > 0)) {
    throw ValueError("LossScaler: scale " + std::to_string(scale) + " must be a positive finite number");
  }
  if (unskipped < 0 || skipped < 0) {
    throw ValueError("LossScaler: the counts of clean steps (" + std::to_string(unskipped) + ") and skipped steps (" +
                     std::to_string(skipped) + ") must be >= 0");
  }
  scale_ = scale;
  clean_ = unskipped;
  skipped_ = skipped;
}

void init_trainer(gluon::Trainer& trainer, std::shared_ptr<LossScaler> scaler) {
  trainer.set_loss_scaler(scaler ? std::move(scaler) : std::make_shared<LossScaler>());
}

nd::NDArray scale_loss(const nd::NDArray& loss, const gluon::Trainer& trainer) {
  if (!trainer.loss_scaler()) {
    throw ValueError("amp::scale_loss: the trainer has no loss scaler; call amp::init_trainer(trainer) first");
  }
  return loss * trainer.loss_scaler()->loss_scale();
}

}  // namespace mx::amp
