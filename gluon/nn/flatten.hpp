#pragma once
// nn::Flatten: (batch, d1, d2, ...) -> (batch, d1 * d2 * ...), a view.
#include "gluon/block.hpp"

namespace mx::gluon::nn {

class Flatten : public Block {
 public:
  explicit Flatten(const std::string& prefix = "") : Block("flatten", prefix) {}
  nd::NDArray forward(const nd::NDArray& x) override { return x.flatten(); }
};

}  // namespace mx::gluon::nn
