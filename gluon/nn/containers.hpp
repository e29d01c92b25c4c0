#pragma once
// Blocks that arrange others, beside Sequential: Concurrent (branches side by side), Identity and
// Lambda (a function as a block), as mx.gluon.nn's HybridConcurrent, Identity and HybridLambda.
//
//   nn::Concurrent inception(1);            // GoogLeNet's branches, concatenated on the channels
//   inception.add(nn::Conv2D(64, 1), b2, b3, b4);
//   nn::Lambda flatten([](const nd::NDArray& x) { return x.reshape({x.shape()[0], -1}); });
//
// They hybridize as any block: a traced Concurrent is its branches and one Concat, a traced Lambda
// the ops its function runs (which must read only its input and parameters of other blocks).
#include <functional>
#include <string>
#include <type_traits>

#include "gluon/block.hpp"

namespace mx::gluon::nn {

// Runs every child on the same input and concatenates their outputs along `axis` (default -1, as
// MXNet's). mx::ValueError when it has no children; the children's outputs must agree on every
// other axis (Concat's mx::ShapeError otherwise).
class Concurrent : public Block {
 public:
  explicit Concurrent(int axis = -1, const std::string& prefix = "");

  template <class... Blocks>
  Concurrent& add(const Blocks&... blocks) {
    static_assert((std::is_base_of_v<Block, Blocks> && ...), "Concurrent::add takes Blocks");
    (register_child(blocks), ...);
    return *this;
  }
  std::size_t size() const { return num_children(); }
  int axis() const { return axis_; }
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  int axis_;
};
using HybridConcurrent = Concurrent;

// Its input, unchanged (the same array).
class Identity : public Block {
 public:
  explicit Identity(const std::string& prefix = "") : Block("identity", prefix) {}
  nd::NDArray forward(const nd::NDArray& x) override { return x; }
};

// A function of one array as a block.
class Lambda : public Block {
 public:
  using Function = std::function<nd::NDArray(const nd::NDArray&)>;
  explicit Lambda(Function function, const std::string& prefix = "");  // mx::ValueError for an empty one
  nd::NDArray forward(const nd::NDArray& x) override { return function_(x); }

 private:
  Function function_;
};
using HybridLambda = Lambda;

}  // namespace mx::gluon::nn
