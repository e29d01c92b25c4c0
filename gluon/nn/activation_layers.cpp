#include "gluon/nn/activation_layers.hpp"

#include <cmath>

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/nn.hpp"

namespace mx::gluon::nn {

namespace {

double checked_alpha(double alpha, const char* layer) {
  if (!(alpha >= 0) || !std::isfinite(alpha)) {
    throw ValueError(std::string(layer) + ": alpha must be a finite number >= 0, got " + std::to_string(alpha));
  }
  return alpha;
}

}  // namespace

LeakyReLU::LeakyReLU(double alpha, const std::string& prefix)
    : Block("leakyrelu", prefix), alpha_(checked_alpha(alpha, "LeakyReLU")) {}
nd::NDArray LeakyReLU::forward(const nd::NDArray& x) { return nd::LeakyReLU(x, "leaky", alpha_); }

PReLU::PReLU(init::InitializerRef alpha_initializer, std::int64_t in_channels, const std::string& prefix)
    : Block("prelu", prefix) {
  if (in_channels < 1) throw ValueError("PReLU: in_channels must be >= 1, got " + std::to_string(in_channels));
  register_parameter("alpha", Shape{in_channels}, alpha_initializer ? alpha_initializer : init::InitializerRef(init::Constant(0.25)));
}

Parameter PReLU::alpha() const { return parameter("alpha"); }

nd::NDArray PReLU::forward(const nd::NDArray& x) {
  Parameter param = alpha();
  param.check_initialized();
  nd::NDArray a = param.data(x.context());
  const std::int64_t slopes = param.shape()[0];
  if (slopes > 1) {  // one slope per channel, on axis 1: (1, C, 1, ...)
    if (x.ndim() < 2 || x.shape()[1] != slopes) {
      throw ShapeError("PReLU '" + name() + "': " + std::to_string(slopes) + " slopes (in_channels) for input " +
                       nd::describe(x) + ", whose axis 1 differs");
    }
    std::vector<std::int64_t> dims(static_cast<std::size_t>(x.ndim()), 1);
    dims[1] = slopes;
    a = a.reshape(Shape(dims));
  }
  if (a.dtype() != x.dtype()) a = a.astype(x.dtype());
  const nd::NDArray positive = nd::unary(UnaryOp::relu, x);
  return positive + a * (x - positive);
}

ELU::ELU(double alpha, const std::string& prefix) : Block("elu", prefix), alpha_(alpha) {}
nd::NDArray ELU::forward(const nd::NDArray& x) { return nd::LeakyReLU(x, "elu", alpha_); }

SELU::SELU(const std::string& prefix) : Block("selu", prefix) {}
nd::NDArray SELU::forward(const nd::NDArray& x) { return nd::LeakyReLU(x, "selu"); }

GELU::GELU(const std::string& prefix) : Block("gelu", prefix) {}
nd::NDArray GELU::forward(const nd::NDArray& x) { return nd::LeakyReLU(x, "gelu"); }

Swish::Swish(double beta, const std::string& prefix) : Swish("swish", beta, prefix) {}

Swish::Swish(const char* kind, double beta, const std::string& prefix) : Block(kind, prefix), beta_(beta) {
  if (!std::isfinite(beta)) throw ValueError("Swish: beta must be finite, got " + std::to_string(beta));
}
nd::NDArray Swish::forward(const nd::NDArray& x) { return x * nd::unary(UnaryOp::sigmoid, x * beta_); }

SiLU::SiLU(const std::string& prefix) : Swish("silu", 1.0, prefix) {}

}  // namespace mx::gluon::nn
