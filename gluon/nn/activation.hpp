#pragma once
// nn::Activation("relu" | "sigmoid" | "tanh" | "softrelu"), as mx.gluon.nn.Activation.
#include <optional>
#include <string>

#include "gluon/block.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::gluon::nn {

// The UnaryOp of an activation name; "" gives none. Throws mx::ValueError listing the valid names.
std::optional<UnaryOp> activation_op(const std::string& name);

class Activation : public Block {
 public:
  explicit Activation(const std::string& activation, const std::string& prefix = "");
  nd::NDArray forward(const nd::NDArray& x) override;  // same shape as x
  const std::string& activation() const { return activation_; }

 private:
  std::string activation_;
  UnaryOp op_;
};

}  // namespace mx::gluon::nn
