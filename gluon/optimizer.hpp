#pragma once
// Optimizers, as mx.optimizer: SGD (with momentum) and Adam. Each update is one fused pass over a
// parameter copy (a CUDA kernel on a GPU), reading weight, gradient and state once.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ndarray/array.hpp"
#include "ndarray/functors.hpp"

namespace mx::gluon {

using HyperParams = std::map<std::string, double>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one step to weight from grad (scaled by rescale_grad), keeping per-copy state under
  // key (one key per parameter copy).
  virtual void update(std::size_t key, nd::NDArray& weight, const nd::NDArray& grad) = 0;
  double learning_rate() const { return lr_; }
  void set_learning_rate(double lr) { lr_ = lr; }
  void set_rescale_grad(double rescale) { rescale_ = rescale; }

  // "sgd" or "adam" with hyper-parameters (learning_rate, wd, clip_gradient, rescale_grad, and
  // momentum / beta1, beta2, epsilon). Unknown names throw mx::ValueError listing the valid ones.
  static std::unique_ptr<Optimizer> create(const std::string& name, const HyperParams& params);

 protected:
  // The hyper-parameters every optimizer shares, as a kernel step.
  functors::OptimizerStep common_step() const;
  double lr_ = 0.01, wd_ = 0, clip_ = -1, rescale_ = 1;
};

class SGD : public Optimizer {
 public:
  explicit SGD(const HyperParams& params);
  void update(std::size_t key, nd::NDArray& weight, const nd::NDArray& grad) override;

 private:
  double momentum_ = 0;
  std::map<std::size_t, nd::NDArray> momentum_state_;
};

class Adam : public Optimizer {
 public:
  explicit Adam(const HyperParams& params);
  void update(std::size_t key, nd::NDArray& weight, const nd::NDArray& grad) override;

 private:
  double beta1_ = 0.9, beta2_ = 0.999, epsilon_ = 1e-8;
  struct State {
    nd::NDArray mean, var;
    std::int64_t steps = 0;
  };
  std::map<std::size_t, State> state_;
};

}  // namespace mx::gluon
