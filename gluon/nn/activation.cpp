#include "gluon/nn/activation.hpp"

#include "ndarray/elementwise.hpp"

namespace mx::gluon::nn {

std::optional<UnaryOp> activation_op(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name == "relu") return UnaryOp::relu;
  if (name == "sigmoid") return UnaryOp::sigmoid;
  if (name == "tanh") return UnaryOp::tanh;
  if (name == "softrelu") return UnaryOp::softrelu;
  throw ValueError("unknown activation \"" + name + "\"; valid: \"relu\", \"sigmoid\", \"tanh\", \"softrelu\"");
}

Activation::Activation(const std::string& activation, const std::string& prefix)
    : Block("activation", prefix), activation_(activation) {
  const auto op = activation_op(activation);
  if (!op) throw ValueError("Activation needs an activation name: \"relu\", \"sigmoid\", \"tanh\" or \"softrelu\"");
  op_ = *op;
}

nd::NDArray Activation::forward(const nd::NDArray& x) { return nd::unary(op_, x); }

}  // namespace mx::gluon::nn
