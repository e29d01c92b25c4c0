#pragma once
// mx::gluon::Trainer: applies an optimizer to a set of parameters, as gluon.Trainer.
//
//   gluon::Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.1}});
//   ... loss.backward(); trainer.step(batch_size);
//
// Parameters initialised on several contexts (data parallelism) get their gradients summed over
// the contexts before every update, through NCCL when the build has it (kvstore "device").
#include <memory>
#include <string>

#include "gluon/optimizer.hpp"
#include "gluon/parameter_dict.hpp"
#include "ndarray/collective.hpp"

namespace mx::gluon {

class Trainer {
 public:
  // kvstore: how gradients are summed across contexts. "device" (the default): NCCL when the build
  // has it and the copies are on GPUs, else peer copies; "nccl": NCCL only; "p2p": peer copies
  // only (GPU-to-GPU over NVLink/PCIe where the pair allows, as MXNet's "device").
  // Throws mx::ValueError, and no Trainer is made, for an unknown optimizer, hyper-parameter or
  // kvstore, a hyper-parameter out of its range (see Optimizer::create), and for "nccl" in a build
  // without CUDA or NCCL or with a trained parameter that has a copy off the GPUs (named with its
  // contexts; step() checks again the parameters initialised later).
  Trainer(ParameterDict params, const std::string& optimizer, const HyperParams& optimizer_params = {},
          const std::string& kvstore = "device");

  // One update of every parameter with grad_req != "null", the gradients scaled by 1/batch_size
  // (times rescale_grad). A parameter on several contexts first has its gradients summed over
  // them, so that every copy gets the same update.
  void step(std::int64_t batch_size);
  // The gradient reduction alone (step does it), and the update alone. Both queue their work on
  // each context's stream and return without waiting.
  void allreduce_grads();
  void update(std::int64_t batch_size);

  double learning_rate() const { return optimizer_->learning_rate(); }
  // mx::ValueError naming lr, and the rate unchanged, unless lr is finite and >= 0.
  void set_learning_rate(double lr) { optimizer_->set_learning_rate(lr); }
  Optimizer& optimizer() { return *optimizer_; }

 private:
  // Throws, before anything changes, unless batch_size > 0 and every trained parameter is
  // initialised with a floating-point gradient of its own shape on each of its contexts (each a
  // GPU with kvstore "nccl").
  void check_ready(const char* op, std::int64_t batch_size) const;
  void apply_updates(std::int64_t batch_size);

  ParameterDict params_;
  std::unique_ptr<Optimizer> optimizer_;
  double rescale_grad_ = 1;
  nd::ReduceAlgo reduce_algo_;
};

}  // namespace mx::gluon
