#include "gluon/nn/activation.hpp"

#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/nn.hpp"

namespace mx::gluon::nn {

std::optional<UnaryOp> activation_op(const std::string& name) { return nd::activation_type(name, "Activation"); }

namespace {

// The op of a valid activation name, checked before the block takes its name from it.
UnaryOp checked_op(const std::string& activation) {
  const auto op = activation_op(activation);
  if (!op) throw ValueError("Activation needs an activation name: \"relu\", \"sigmoid\", \"tanh\" or \"softrelu\"");
  return *op;
}

const std::string& checked_name(const std::string& activation) {
  checked_op(activation);
  return activation;
}

}  // namespace

// As MXNet 1.x, the block is named after its activation: "relu0", "tanh1".
Activation::Activation(const std::string& activation, const std::string& prefix)
    : Block(checked_name(activation), prefix), activation_(activation), op_(checked_op(activation)) {}

nd::NDArray Activation::forward(const nd::NDArray& x) { return nd::unary(op_, x); }

}  // namespace mx::gluon::nn
