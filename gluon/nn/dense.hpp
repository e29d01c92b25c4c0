#pragma once
// nn::Dense: a fully connected layer, out = activation(x · weightᵀ + bias), as mx.gluon.nn.Dense.
// Input (batch, d1, d2, ...) is used as (batch, d1 * d2 * ...) (MXNet's flatten=True), or, with
// flatten = false, every axis but the last is kept: (..., in_units) -> (..., units), as a
// Transformer's layers use it. in_units = 0 defers the weight's shape until the first forward pass.
//
//   nn::Dense(256, "relu")                                  // MXNet's positional arguments
//   nn::Dense(512, nn::DenseOptions{.use_bias = false, .flatten = false})   // or its keywords
#include <optional>
#include <string>

#include "gluon/block.hpp"
#include "ndarray/ops/op_kinds.hpp"

namespace mx::gluon::nn {

struct DenseOptions {
  std::string activation = "";
  bool use_bias = true;
  bool flatten = true;
  std::int64_t in_units = 0;
  init::InitializerRef weight_initializer = {}, bias_initializer = init::Zero();
  std::string prefix = "";
};

class Dense : public Block {
 public:
  explicit Dense(std::int64_t units, const std::string& activation = "", bool use_bias = true,
                 std::int64_t in_units = 0, init::InitializerRef weight_initializer = {},
                 init::InitializerRef bias_initializer = init::Zero(), const std::string& prefix = "");
  Dense(std::int64_t units, const DenseOptions& options);

  // x (batch, ...) -> (batch, units), or (..., in_units) -> (..., units) with flatten = false, on
  // x.context().
  nd::NDArray forward(const nd::NDArray& x) override;

  Parameter weight() const;  // (units, in_units)
  Parameter bias() const;    // (units,); throws when use_bias is false
  std::int64_t units() const { return units_; }

 private:
  std::int64_t units_;
  bool use_bias_, flatten_;
  std::optional<UnaryOp> activation_;
};

}  // namespace mx::gluon::nn
