#pragma once
// Dynamic loss scaling for float16 training, as MXNet's amp.init_trainer / amp.scale_loss:
//
//   auto amp = mx::amp::autocast(mx::DType::float16);  // ndarray/amp/amp.hpp
//   mx::amp::init_trainer(trainer);
//   { auto rec = autograd::record(); mx::amp::scale_loss(loss_fn(net(x), y), trainer).backward(); }
//   trainer.step(batch);  // unscales; skips the step, and halves the scale, if a gradient overflowed
//
// float16's range ends at 65504, and small gradients underflow to 0: the loss is multiplied by a
// large scale before backward, and the Trainer divides the gradients by it in the update. A step
// whose gradients hold an inf or a nan changes no parameter and lowers the scale; scale_window
// steps in a row without one raise it. bfloat16 has float32's range and needs none of this.
#include <cstdint>
#include <memory>

#include "gluon/parameter_dict.hpp"
#include "ndarray/amp/amp.hpp"
#include "ndarray/core/array.hpp"

namespace mx::gluon {
class Trainer;
}

namespace mx::amp {

class LossScaler {
 public:
  // MXNet's defaults: 2^16, halved on overflow, doubled after 2000 clean steps. mx::ValueError for
  // a scale that is not a positive finite number, a factor <= 1 or a window < 1.
  explicit LossScaler(double init_scale = 65536.0, double scale_factor = 2.0, std::int64_t scale_window = 2000);
  double loss_scale() const { return scale_; }
  // Whether a gradient of a trained parameter holds an inf or a nan: one multi_all_finite per
  // context, read back (the one point of a step that waits for the GPU).
  bool has_overflow(const gluon::ParameterDict& params) const;
  // After a step: on overflow the scale is divided by scale_factor (not below 1) and the count of
  // clean steps restarts; after scale_window clean steps it is multiplied by scale_factor.
  void update_scale(bool overflow);
  std::int64_t skipped_steps() const { return skipped_; }
  double scale_factor() const { return factor_; }
  std::int64_t scale_window() const { return window_; }
  // The clean steps since the scale last changed (MXNet's _unskipped): scale_window of them raise it.
  std::int64_t unskipped() const { return clean_; }
  // Restores what loss_scale(), unskipped() and skipped_steps() report (Trainer::load_states).
  // mx::ValueError naming the value, and nothing changed, unless scale is a positive finite number
  // and the counts are >= 0.
  void set_state(double scale, std::int64_t unskipped, std::int64_t skipped);

 private:
  double scale_, factor_;
  std::int64_t window_, clean_ = 0, skipped_ = 0;
};

// Gives trainer a loss scaler (a default one when none is passed): its steps unscale the gradients
// and skip on overflow.
void init_trainer(gluon::Trainer& trainer, std::shared_ptr<LossScaler> scaler = nullptr);
// loss multiplied by the trainer's loss scale, recorded for autograd. mx::ValueError naming
// init_trainer when the trainer has no scaler.
nd::NDArray scale_loss(const nd::NDArray& loss, const gluon::Trainer& trainer);

}  // namespace mx::amp
