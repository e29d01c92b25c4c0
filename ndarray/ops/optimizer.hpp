#pragma once
// Optimizer updates, as MXNet's mx.nd.sgd_update, sgd_mom_update and adam_update: each updates
// weight (and its states) in place in one fused pass (one kernel on a GPU, one loop on the CPU).
//
// Every update first forms the gradient it applies,
//   g = clip(rescale_grad * grad, clip_gradient) + wd * weight,
// where clip(v, c) limits v to [-c, c]. Clipping is on when clip_gradient > 0; zero or a
// negative value (the default -1) turns it off, as MXNet's op documentation states. (MXNet's
// adam_update kernel adds wd * weight before clipping; here every update adds it after, as
// ndgluon's optimizers always have.)
//
// weight, grad and every state have one shape, one floating dtype and one context; otherwise they
// throw mx::ShapeError, mx::DTypeError or mx::ContextMismatch naming the op and the operands. The
// updates are not recorded by autograd. Each computes in float32 for float16 and bfloat16.
//
// The mp_ updates (multi_precision, for float16 and bfloat16 weights) keep a float32 master copy
// weight32 and float32 states: the step is computed from weight32 and written to it, and weight
// gets it rounded, so that small updates are not lost to the 16-bit rounding.
#include <memory>
#include <vector>

#include "ndarray/core/array.hpp"
#include "ndarray/ops/update_rules.hpp"

namespace mx::nd {

// weight -= lr * g
void sgd_update(NDArray& weight, const NDArray& grad, double lr, double wd = 0, double rescale_grad = 1,
                double clip_gradient = -1);

// mom = momentum * mom - lr * g; weight += mom
void sgd_mom_update(NDArray& weight, const NDArray& grad, NDArray& mom, double lr, double momentum = 0,
                    double wd = 0, double rescale_grad = 1, double clip_gradient = -1);

// The same for a list of weights in one pass (one kernel launch on a GPU), as MXNet's
// multi_sgd_update and multi_sgd_mom_update: weights[i] from grads[i] (and moms[i]). Every array
// shares one context and dtype; the list shares one lr and wd (MXNet's take a tuple of each).
void multi_sgd_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads, double lr, double wd = 0,
                      double rescale_grad = 1, double clip_gradient = -1);
void multi_sgd_mom_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads, std::vector<NDArray>& moms,
                          double lr, double momentum = 0, double wd = 0, double rescale_grad = 1,
                          double clip_gradient = -1);

// mean = beta1 * mean + (1 - beta1) * g
// var  = beta2 * var + (1 - beta2) * g²
// weight -= lr * mean / (sqrt(var) + epsilon)
// As in MXNet, the op applies no bias correction: the caller (gluon::Adam) folds it into lr.
void adam_update(NDArray& weight, const NDArray& grad, NDArray& mean, NDArray& var, double lr, double beta1 = 0.9,
                 double beta2 = 0.999, double epsilon = 1e-8, double wd = 0, double rescale_grad = 1,
                 double clip_gradient = -1);

// (1,) float32 on the arrays' context: 1 when every element of every array is finite, else 0, as
// MXNet's multi_all_finite (one pass, nothing waits for it). The arrays share a context.
NDArray multi_all_finite(const std::vector<NDArray>& arrays);

// The same with a float32 master copy (MXNet's mp_sgd_update, mp_sgd_mom_update, mp_adam_update,
// multi_mp_sgd_update, multi_mp_sgd_mom_update). mom, mean, var and weight32 are float32.
void mp_sgd_update(NDArray& weight, const NDArray& grad, NDArray& weight32, double lr, double wd = 0,
                   double rescale_grad = 1, double clip_gradient = -1);
void mp_sgd_mom_update(NDArray& weight, const NDArray& grad, NDArray& mom, NDArray& weight32, double lr,
                       double momentum = 0, double wd = 0, double rescale_grad = 1, double clip_gradient = -1);
void mp_adam_update(NDArray& weight, const NDArray& grad, NDArray& mean, NDArray& var, NDArray& weight32, double lr,
                    double beta1 = 0.9, double beta2 = 0.999, double epsilon = 1e-8, double wd = 0,
                    double rescale_grad = 1, double clip_gradient = -1);
void multi_mp_sgd_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
                         std::vector<NDArray>& weights32, double lr, double wd = 0, double rescale_grad = 1,
                         double clip_gradient = -1);
void multi_mp_sgd_mom_update(std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
                             std::vector<NDArray>& moms, std::vector<NDArray>& weights32, double lr,
                             double momentum = 0, double wd = 0, double rescale_grad = 1, double clip_gradient = -1);

// MXNet 1.9's element-wise rules (ndarray/ops/update_rules.hpp: sgd, adam, nag, signum, adagrad,
// rmsprop, adadelta, adamax, nadam, adamw, ftrl, ftml, lamb's phases, lars) over a list, as the op _multi_update: one
// parallel pass on cpu(0), one launch on a GPU. weights[i] and states[i] (params.num_states
// arrays each, weights[i]'s shape; float32 with masters) are updated from grads[i] with
// scalars[i]; masters: the float32 copies of 16-bit weights (multi_precision), or null. One
// context and one weight dtype for the list. Typed errors naming _multi_update, and nothing
// changed, for lists of other lengths, a state count other than the rule's, mismatched shapes,
// dtypes or contexts.
// norms: for lamb_step and lars, (n, 2) float32 on the weights' context (the weight's L2 norm and
// the direction's or the gradient's); none for the other rules.
void multi_rule_update(const op::RuleParams& params, std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
                       std::vector<std::vector<NDArray>>& states, std::vector<NDArray>* masters,
                       const std::vector<op::TensorScalars>& scalars, const NDArray& norms = NDArray());

// The lists of multi_rule_update, checked once and run every step: an optimizer whose step sees
// the same arrays again (gluon's RuleOptimizer) spends the host's time on the checks once, not
// per step. The constructor checks what multi_rule_update checks but the scalars and norms and
// throws the same errors; operator() runs the rule of params (whose num_states must be the lists')
// with each step's scalars and norms.
class MultiRuleUpdate {
 public:
  MultiRuleUpdate(std::int32_t num_states, std::vector<NDArray>& weights, const std::vector<NDArray>& grads,
                  std::vector<std::vector<NDArray>>& states, std::vector<NDArray>* masters);
  void operator()(const op::RuleParams& params, const std::vector<op::TensorScalars>& scalars,
                  const NDArray& norms = NDArray()) const;

  ~MultiRuleUpdate();
  MultiRuleUpdate(MultiRuleUpdate&&) noexcept;
  MultiRuleUpdate& operator=(MultiRuleUpdate&&) noexcept;

 private:
  struct Lists;                  // the op's invocation, its inputs ending with the scalars (and norms)
  std::unique_ptr<Lists> lists_;
  std::size_t num_weights_;
  std::int32_t num_states_;
  bool master_;
};

// MXNet's multi_sum_sq: (n,) float32, the sum of squares of each array (one context and dtype,
// contiguous), accumulated in float64; one parallel pass on cpu(0), two launches on a GPU. The
// norms of LAMB and LARS.
NDArray multi_sum_sq(const std::vector<NDArray>& arrays);

}  // namespace mx::nd
