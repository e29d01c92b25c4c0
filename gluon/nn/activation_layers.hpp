#pragma once
// The activation layers of mx.gluon.nn beside Activation: LeakyReLU, PReLU, ELU, SELU, GELU, Swish
// and SiLU. Each is a block without children; all but PReLU have no parameters.
//
//   nn::LeakyReLU(0.1)   nn::PReLU()   nn::ELU(1.0)   nn::SELU()   nn::GELU()   nn::Swish(1.0)
//
// LeakyReLU, ELU, SELU and GELU run MXNet's LeakyReLU op (act_type leaky, elu, selu, gelu; GELU the
// exact erf form) and export as it. Swish is x · sigmoid(beta · x), as MXNet 1.9 computes it; SiLU
// is Swish with beta 1 (MXNet 2's name). PReLU learns its slopes, parameter "alpha" of
// (in_channels,) initialised to 0.25 as MXNet's, one per channel on axis 1 (or one for all):
// y = relu(x) + alpha · (x − relu(x)), which MXNet writes as LeakyReLU(act_type="prelu"); ndgluon
// composes it from relu, subtract and a broadcast multiply, so its export shows those ops.
#include <cstdint>
#include <string>

#include "gluon/block.hpp"

namespace mx::gluon::nn {

class LeakyReLU : public Block {
 public:
  explicit LeakyReLU(double alpha, const std::string& prefix = "");  // alpha >= 0 (mx::ValueError)
  nd::NDArray forward(const nd::NDArray& x) override;
  double alpha() const { return alpha_; }

 private:
  double alpha_;
};

class PReLU : public Block {
 public:
  explicit PReLU(init::InitializerRef alpha_initializer = {}, std::int64_t in_channels = 1,
                 const std::string& prefix = "");
  nd::NDArray forward(const nd::NDArray& x) override;
  Parameter alpha() const;
};

class ELU : public Block {
 public:
  explicit ELU(double alpha = 1.0, const std::string& prefix = "");
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  double alpha_;
};

class SELU : public Block {
 public:
  explicit SELU(const std::string& prefix = "");
  nd::NDArray forward(const nd::NDArray& x) override;
};

class GELU : public Block {
 public:
  explicit GELU(const std::string& prefix = "");
  nd::NDArray forward(const nd::NDArray& x) override;
};

class Swish : public Block {
 public:
  explicit Swish(double beta = 1.0, const std::string& prefix = "");
  nd::NDArray forward(const nd::NDArray& x) override;
  double beta() const { return beta_; }

 protected:
  Swish(const char* kind, double beta, const std::string& prefix);

 private:
  double beta_;
};

// MXNet 2's SiLU: Swish with beta 1, named "silu".
class SiLU : public Swish {
 public:
  explicit SiLU(const std::string& prefix = "");
};

}  // namespace mx::gluon::nn
