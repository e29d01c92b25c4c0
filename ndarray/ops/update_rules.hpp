#pragma once
// The element-wise optimizer rules of MXNet 1.9, each the arithmetic of one element of one step, shared by the CPU loop (ndarray/ops/multi_update.cpp) and the GPU kernel
// (cuda/ops/multi_update.cu). Internal.
//
// Every rule reads the raw gradient and the weight (the float32 master copy under
// multi_precision) in the compute type A, and its states; it writes the states and returns the new
// weight. The optimizer (gluon/optimizer.cpp) computes per tensor, on the host, the learning rate
// and weight decay with their multipliers and the rule's step-dependent scalars c0, c1 (bias
// corrections, Nadam's momentum schedule), so that a kernel does no pow per element.
//
// Clipping follows ndgluon's convention (ndarray/ops/optimizer.hpp): a positive clip_gradient
// clips, zero or a negative one does not. Where each rule applies rescale_grad, clip_gradient and
// wd is MXNet 1.9's, and differs between rules (each says).
#include <cmath>
#include <cstdint>

#include "ndarray/core/host_device.hpp"

namespace mx::op {

enum class UpdateRule : std::int32_t {
  nag,               // nag_mom_update (sgd_update when momentum = 0)   states: mom (none then)
  signum,            // signum_update (signsgd_update when momentum = 0)   states: mom
  adagrad,           // AdaGrad.update                      states: history
  rmsprop,           // rmsprop_update                      states: n
  rmsprop_centered,  // rmspropalex_update                  states: n, g, delta
  adadelta,          // AdaDelta.update                     states: acc_g, acc_delta
  adamax,            // Adamax.update                       states: m, u
  nadam,             // Nadam.update                        states: m, v
  adamw,             // _contrib_adamw_update               states: mean, var
  ftrl,              // ftrl_update                         states: z, n
  ftml,              // ftml_update                         states: d, v, z
  lamb_direction,    // lamb_update_phase1: the direction into state 2   states: mean, var, direction
  lamb_step,         // lamb_update_phase2, by the trust ratio of the norms   states: mean, var, direction
  lars,              // multi_lars + preloaded_multi_sgd(_mom)_update        states: mom (none at momentum 0)
  sgd,               // sgd_mom_update (sgd_update when momentum = 0)   states: mom (none then)
  adam,              // adam_update, the bias correction folded into lr      states: mean, var
};
inline constexpr int kRuleCount = static_cast<int>(UpdateRule::adam) + 1;  // adam stays last

// Which of the (up to 3) states a rule reads and which it writes, as bit masks: a kernel that keeps
// an element's states in registers loads and stores only those.
constexpr unsigned states_read(UpdateRule rule) {
  return rule == UpdateRule::lamb_direction ? 0b011u : rule == UpdateRule::lamb_step ? 0b100u : 0b111u;
}
constexpr unsigned states_written(UpdateRule rule) { return rule == UpdateRule::lamb_step ? 0u : 0b111u; }

// Hyper-parameters shared by every tensor of a launch (h: the rule's own, named in RuleParams
// below per rule).
struct RuleParams {
  UpdateRule rule = UpdateRule::nag;
  std::int32_t num_weights = 0;
  std::int32_t num_states = 0;
  std::int32_t master = 0;  // 1: a float32 master copy follows the states (multi_precision)
  std::int32_t norms = 0;   // 1: a (num_weights, 2) float32 input of the weights' and directions' L2 norms follows
  double rescale = 1, clip = -1;
  // nag: h0 momentum. signum: h0 momentum, h1 wd_lh. adagrad: h0 epsilon. rmsprop: h0 gamma1,
  // h1 epsilon, h2 clip_weights (<= 0: none). rmsprop_centered: h0 gamma1, h1 gamma2, h2
  // clip_weights, h3 epsilon. adadelta: h0 rho, h1 epsilon. adamax: h0 beta1, h1 beta2. nadam: h0
  // beta1, h1 beta2, h2 epsilon. adamw: h0 beta1, h1 beta2, h2 epsilon, h3 eta. ftrl: h0 lamda1,
  // h1 beta. ftml: h0 beta1, h1 beta2, h2 epsilon. lamb_direction: h0 beta1, h1 beta2, h2 epsilon.
  // lamb_step: h0 lower_bound, h1 upper_bound (<= 0: none). lars: h0 momentum (corrected), h1
  // eta, h2 eps. sgd: h0 momentum. adam: h0 beta1, h1 beta2, h2 epsilon.
  double h0 = 0, h1 = 0, h2 = 0, h3 = 0;
};

// Per tensor, from the host: the rate and decay with their multipliers, and the step scalars
// (adam: lr is already lr sqrt(1 - beta2^t) / (1 - beta1^t), as MXNet's Adam folds it).
// adamax: c0 = lr / (1 - beta1^t). nadam: c0 = the momentum schedule's product up to t, c1 = the
// product up to t + 1 (m_schedule and m_schedule_next), c2 = momentum_t, c3 = momentum_t+1, c4 =
// 1 - beta2^t. ftml and lamb_direction: c0 = 1 - beta1^t, c1 = 1 - beta2^t (lamb without
// bias_correction: 1 and 1).
struct TensorScalars {
  double lr = 0, wd = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, unused = 0;
};

namespace rules {

template <class A>
NDG_HD A clip(A v, double c) {
  if (!(c > 0)) return v;
  const A limit = A(c);
  return v > limit ? limit : (v < -limit ? -limit : v);
}

template <class A>
NDG_HD A sign(A v) {
  return v > A(0) ? A(1) : (v < A(0) ? A(-1) : A(0));
}

}  // namespace rules

// One element: w the weight (read and returned), g the raw gradient, s the rule's states, norms
// the tensor's two L2 norms (lamb_step: weight, direction; lars: weight, gradient) or null.
template <class A, class S>
NDG_HD A apply_rule(const RuleParams& p, const TensorScalars& t, A w, A g, S* const* s, std::int64_t i,
                    const float* norms = nullptr) {
  using std::abs;
  using std::sqrt;
  const A lr = A(t.lr), wd = A(t.wd);
  const auto load = [&](int k) { return A(s[k][i]); };
  const auto store = [&](int k, A v) { s[k][i] = static_cast<S>(v); };
  switch (p.rule) {
    case UpdateRule::nag: {  // nag_mom_update's kernel, which reads the new weight in mom's decay
      const A momentum = A(p.h0);
      const A grad = rules::clip(A(p.rescale) * g, p.clip);
      if (p.h0 == 0) return w - lr * (grad + wd * w);  // sgd_update: MXNet keeps no state then
      const A m = momentum * load(0);
      const A out = w - m + (momentum + A(1)) * (m - lr * (grad + wd * w));
      store(0, m - lr * (grad + wd * out));
      return out;
    }
    case UpdateRule::signum: {
      const A momentum = A(p.h0);
      if (p.h0 == 0) return (A(1) - lr * wd) * w - lr * rules::sign(g);  // signsgd_update: the raw gradient's sign
      const A grad = rules::clip(A(p.rescale) * g, p.clip);
      const A m = momentum * load(0) - (A(1) - momentum) * (grad + wd * w);
      store(0, m);
      return (A(1) - lr * A(p.h1)) * w + lr * rules::sign(m);
    }
    case UpdateRule::adagrad: {  // history += g^2; w -= lr (g / sqrt(history + eps) + wd w)
      const A grad = rules::clip(A(p.rescale) * g, p.clip);
      const A history = load(0) + grad * grad;
      store(0, history);
      return w - lr * (grad / sqrt(history + A(p.h0)) + wd * w);
    }
    case UpdateRule::rmsprop: {  // g = clip(rescale g + wd w); n = (1 - gamma1) g^2 + gamma1 n
      const A gamma1 = A(p.h0);
      const A grad = rules::clip(A(p.rescale) * g + wd * w, p.clip);
      const A n = (A(1) - gamma1) * grad * grad + gamma1 * load(0);
      store(0, n);
      const A out = w - lr * grad / sqrt(n + A(p.h1));
      return p.h2 > 0 ? rules::clip(out, p.h2) : out;
    }
    case UpdateRule::rmsprop_centered: {
      const A gamma1 = A(p.h0), gamma2 = A(p.h1);
      const A grad = rules::clip(A(p.rescale) * g + wd * w, p.clip);
      const A n = (A(1) - gamma1) * grad * grad + gamma1 * load(0);
      const A mean = (A(1) - gamma1) * grad + gamma1 * load(1);
      const A delta = gamma2 * load(2) - lr * grad / sqrt(n - mean * mean + A(p.h3));
      store(0, n);
      store(1, mean);
      store(2, delta);
      const A out = w + delta;
      return p.h2 > 0 ? rules::clip(out, p.h2) : out;
    }
    case UpdateRule::adadelta: {  // no learning rate: MXNet's AdaDelta ignores it
      const A rho = A(p.h0), eps = A(p.h1);
      const A grad = rules::clip(A(p.rescale) * g, p.clip);
      const A acc_g = rho * load(0) + (A(1) - rho) * grad * grad;
      const A delta = sqrt(load(1) + eps) / sqrt(acc_g + eps) * grad;
      store(0, acc_g);
      store(1, rho * load(1) + (A(1) - rho) * delta * delta);
      return w - (delta + wd * w);
    }
    case UpdateRule::adamax: {  // lr_t = lr / (1 - beta1^t) (c0)
      const A beta1 = A(p.h0), beta2 = A(p.h1);
      const A grad = rules::clip(A(p.rescale) * g + wd * w, p.clip);
      const A m = beta1 * load(0) + (A(1) - beta1) * grad;
      const A ub = beta2 * load(1), ag = abs(grad);
      const A u = ub > ag ? ub : ag;
      store(0, m);
      store(1, u);
      return w - A(t.c0) * m / u;
    }
    case UpdateRule::nadam: {
      const A beta1 = A(p.h0), beta2 = A(p.h1);
      const A grad = rules::clip(A(p.rescale) * g + wd * w, p.clip);
      const A m = beta1 * load(0) + (A(1) - beta1) * grad;
      const A v = beta2 * load(1) + (A(1) - beta2) * grad * grad;
      store(0, m);
      store(1, v);
      const A grad_prime = grad / (A(1) - A(t.c0));
      const A m_prime = m / (A(1) - A(t.c1));
      const A v_prime = v / A(t.c4);
      const A m_bar = (A(1) - A(t.c2)) * grad_prime + A(t.c3) * m_prime;
      return w - lr * m_bar / (sqrt(v_prime) + A(p.h2));
    }
    case UpdateRule::adamw: {  // decoupled decay: w -= eta (lr m / (sqrt(v) + eps) + wd w)
      if (p.rescale == 0) return w;  // as _adamw_update: a zero rescale_grad skips the update
      const A beta1 = A(p.h0), beta2 = A(p.h1);
      const A grad = rules::clip(A(p.rescale) * g, p.clip);
      const A m = beta1 * load(0) + (A(1) - beta1) * grad;
      const A v = beta2 * load(1) + (A(1) - beta2) * grad * grad;
      store(0, m);
      store(1, v);
      return w - A(p.h3) * (lr * m / (sqrt(v) + A(p.h2)) + wd * w);
    }
    case UpdateRule::ftrl: {
      const A lamda1 = A(p.h0), beta = A(p.h1);
      const A grad = rules::clip(A(p.rescale) * g, p.clip);
      const A n_old = load(1);
      const A z = load(0) + grad - (sqrt(n_old + grad * grad) - sqrt(n_old)) * w / lr;
      const A n = n_old + grad * grad;
      store(0, z);
      store(1, n);
      return abs(z) > lamda1 ? (rules::sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) : A(0);
    }
    case UpdateRule::ftml: {  // c0 = 1 - beta1^t, c1 = 1 - beta2^t
      const A beta1 = A(p.h0), beta2 = A(p.h1);
      const A grad = rules::clip(A(p.rescale) * g + wd * w, p.clip);
      const A v = beta2 * load(1) + (A(1) - beta2) * grad * grad;
      const A d = A(t.c0) / lr * (sqrt(v / A(t.c1)) + A(p.h2));
      const A z = beta1 * load(2) + (A(1) - beta1) * grad - (d - beta1 * load(0)) * w;
      store(0, d);
      store(1, v);
      store(2, z);
      return -z / d;
    }
    case UpdateRule::lamb_direction: {  // wd stays out of the moments
      const A beta1 = A(p.h0), beta2 = A(p.h1);
      const A grad = rules::clip(A(p.rescale) * g, p.clip);
      const A m = beta1 * load(0) + (A(1) - beta1) * grad;
      const A v = beta2 * load(1) + (A(1) - beta2) * grad * grad;
      store(0, m);
      store(1, v);
      store(2, (m / A(t.c0)) / (sqrt(v / A(t.c1)) + A(p.h2)) + wd * w);
      return w;
    }
    case UpdateRule::lamb_step: {
      double r1 = norms[0];
      const double r2 = norms[1];
      if (p.h0 > 0 && r1 < p.h0) r1 = p.h0;
      if (p.h1 > 0 && r1 > p.h1) r1 = p.h1;
      const A ratio = (r1 == 0 || r2 == 0) ? A(1) : A(r1 / r2);
      return w - lr * ratio * load(2);
    }
    case UpdateRule::lars: {  // the trust ratio from the rescaled, unclipped gradient's norm
      const double w_norm = norms[0], g_norm = norms[1];
      const A rate = (w_norm > 0 && g_norm > 0)
                         ? lr * A(p.h1 * w_norm / (g_norm * p.rescale + t.wd * w_norm + p.h2))
                         : lr;
      const A grad = rules::clip(A(p.rescale) * g, p.clip);
      if (p.h0 == 0) return w - rate * wd * w - rate * grad;
      const A m = A(p.h0) * load(0) - rate * wd * w - rate * grad;
      store(0, m);
      return w + m;
    }
    case UpdateRule::sgd: {  // grad = clip(rescale g) + wd w; mom = momentum mom - lr grad; w += mom
      const A grad = rules::clip(A(p.rescale) * g, p.clip) + wd * w;
      if (p.h0 == 0) return w - lr * grad;
      const A m = A(p.h0) * load(0) - lr * grad;
      store(0, m);
      return w + m;
    }
    case UpdateRule::adam: {
      const A grad = rules::clip(A(p.rescale) * g, p.clip) + wd * w;
      const A m = A(p.h0) * load(0) + A(1 - p.h0) * grad, v = A(p.h1) * load(1) + A(1 - p.h1) * grad * grad;
      store(0, m);
      store(1, v);
      return w - lr * m / (sqrt(v) + A(p.h2));
    }
  }
  return w;
}

}  // namespace mx::op
