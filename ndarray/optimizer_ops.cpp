#include "ndarray/optimizer_ops.hpp"

#include "ndarray/backend.hpp"
#include "ndarray/checks.hpp"
#include "ndarray/contiguous.hpp"

namespace mx::nd {
namespace {

// Throws unless `operand` (grad or a state) can be updated alongside weight.
void check_operand(const char* op, const char* role, const NDArray& weight, const NDArray& operand) {
  detail::check_not_none(op, operand);
  if (operand.context() != weight.context()) {
    throw ContextMismatch(std::string(op) + ": " + role + " " + detail::describe(operand) + " is not on weight " +
                          detail::describe(weight) + "'s context. Move it first with copyto(" +
                          weight.context().str() + ") or as_in_context(" + weight.context().str() + ")");
  }
  if (operand.dtype() != weight.dtype()) {
    throw DTypeError(std::string(op) + ": " + role + " " + detail::describe(operand) +
                     " does not have the dtype of weight " + detail::describe(weight) + "; convert with astype(...)");
  }
  if (operand.shape() != weight.shape()) {
    throw ShapeError(std::string(op) + ": " + role + " " + detail::describe(operand) + " does not match weight " +
                     detail::describe(weight));
  }
}

functors::OptimizerStep common_step(double lr, double wd, double rescale_grad, double clip_gradient) {
  functors::OptimizerStep step;
  step.lr = lr;
  step.lr_t = lr;
  step.wd = wd;
  step.rescale = rescale_grad;
  step.clip = clip_gradient;
  return step;
}

}  // namespace

void sgd_update(NDArray& weight, const NDArray& grad, double lr, double wd, double rescale_grad, double clip_gradient) {
  const char* op = "sgd_update";
  detail::check_not_none(op, weight);
  detail::check_floating(op, weight);
  check_operand(op, "grad", weight, grad);
  const detail::DenseOut w(op, weight);
  backend(weight.context()).sgd_update(weight.context(), weight.dtype(), w.data(), detail::dense(grad).data(), nullptr,
                                       weight.size(), common_step(lr, wd, rescale_grad, clip_gradient));
  w.commit();
}

void sgd_mom_update(NDArray& weight, const NDArray& grad, NDArray& mom, double lr, double momentum, double wd,
                    double rescale_grad, double clip_gradient) {
  const char* op = "sgd_mom_update";
  detail::check_not_none(op, weight);
  detail::check_floating(op, weight);
  check_operand(op, "grad", weight, grad);
  check_operand(op, "mom", weight, mom);
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.momentum = momentum;
  const detail::DenseOut w(op, weight), m(op, mom);
  backend(weight.context()).sgd_update(weight.context(), weight.dtype(), w.data(), detail::dense(grad).data(), m.data(),
                                       weight.size(), step);
  w.commit();
  m.commit();
}

void adam_update(NDArray& weight, const NDArray& grad, NDArray& mean, NDArray& var, double lr, double beta1,
                 double beta2, double epsilon, double wd, double rescale_grad, double clip_gradient) {
  const char* op = "adam_update";
  detail::check_not_none(op, weight);
  detail::check_floating(op, weight);
  check_operand(op, "grad", weight, grad);
  check_operand(op, "mean", weight, mean);
  check_operand(op, "var", weight, var);
  functors::OptimizerStep step = common_step(lr, wd, rescale_grad, clip_gradient);
  step.beta1 = beta1;
  step.beta2 = beta2;
  step.epsilon = epsilon;
  const detail::DenseOut w(op, weight), m(op, mean), v(op, var);
  backend(weight.context()).adam_update(weight.context(), weight.dtype(), w.data(), detail::dense(grad).data(), m.data(),
                                        v.data(), weight.size(), step);
  w.commit();
  m.commit();
  v.commit();
}

}  // namespace mx::nd
