#pragma once
// mx::gluon::Trainer: applies an optimizer to a set of parameters, as gluon.Trainer.
//
//   gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.1}});
//   ... loss.backward(); trainer.step(batch_size);
#include <memory>
#include <string>

#include "gluon/optimizer.hpp"
#include "gluon/parameter_dict.hpp"

namespace mx::gluon {

class Trainer {
 public:
  Trainer(ParameterDict params, const std::string& optimizer, const HyperParams& optimizer_params = {});

  // One update of every parameter with grad_req != "null", the gradients scaled by 1/batch_size
  // (times rescale_grad). A parameter on several contexts first has its gradients summed over
  // them, so that every copy gets the same update.
  void step(std::int64_t batch_size);
  // The gradient reduction alone (step does it), and the update alone.
  void allreduce_grads();
  void update(std::int64_t batch_size);

  double learning_rate() const { return optimizer_->learning_rate(); }
  void set_learning_rate(double lr) { optimizer_->set_learning_rate(lr); }
  Optimizer& optimizer() { return *optimizer_; }

 private:
  ParameterDict params_;
  std::unique_ptr<Optimizer> optimizer_;
  double rescale_grad_ = 1;
};

}  // namespace mx::gluon
