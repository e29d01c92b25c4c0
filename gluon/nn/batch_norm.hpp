#pragma once
// nn::BatchNorm, as mx.gluon.nn.BatchNorm: normalises over every axis but `axis` by the batch's
// statistics in training (autograd::record() or train_mode()) and by the running ones otherwise.
// Parameters gamma, beta (trained) and running_mean, running_var (grad_req "null": updated by the
// forward pass in training, saved and loaded with the rest). On several contexts each copy of the
// running statistics is updated by its own slice of the batch, as in MXNet.
//
//   nn::BatchNorm()                        // after a Conv2D: channels on axis 1, deferred
//   nn::BatchNorm({.momentum = 0.8, .in_channels = 16})
#include <array>
#include <cstdint>
#include <string>

#include "gluon/block.hpp"

namespace mx::gluon::nn {

struct BatchNormOptions {
  int axis = 1;
  double momentum = 0.9;
  double epsilon = 1e-5;
  bool center = true;  // learn beta (else it stays 0)
  bool scale = true;   // learn gamma (else it stays 1)
  bool use_global_stats = false;
  init::InitializerRef beta_initializer = init::Zero();
  init::InitializerRef gamma_initializer = init::One();
  init::InitializerRef running_mean_initializer = init::Zero();
  init::InitializerRef running_variance_initializer = init::One();
  std::int64_t in_channels = 0;  // 0: inferred at the first forward pass
  std::string prefix = "";
};

class BatchNorm : public Block {
 public:
  explicit BatchNorm(const BatchNormOptions& options = {});
  nd::NDArray forward(const nd::NDArray& x) override;
  // float16 and bfloat16 keep float32 parameters (what BatchNorm takes for 16-bit data).
  void cast(DType dtype) override;

  Parameter gamma() const;
  Parameter beta() const;
  Parameter running_mean() const;
  Parameter running_var() const;

 protected:
  // title names the layer in errors ("SyncBatchNorm"), kind its parameters ("syncbatchnorm0_").
  BatchNorm(const char* title, const std::string& kind, const BatchNormOptions& options);
  const BatchNormOptions& options() const { return options_; }
  // gamma, beta, running_mean and running_var on x's context, checked against x's channels
  // (mx::ShapeError naming the layer) and completed if deferred.
  std::array<nd::NDArray, 4> parameters_for(const nd::NDArray& x);

 private:
  BatchNormOptions options_;
  const char* title_;
};

}  // namespace mx::gluon::nn
