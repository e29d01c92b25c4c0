#pragma once
// nn::Sequential: runs its children in order, as mx.gluon.nn.Sequential.
#include <type_traits>

#include "gluon/block.hpp"

namespace mx::gluon::nn {

class Sequential : public Block {
 public:
  explicit Sequential(const std::string& prefix = "") : Block("sequential", prefix) {}

  // Appends blocks (the same blocks the caller holds, not copies).
  template <class... Blocks>
  Sequential& add(const Blocks&... blocks) {
    static_assert((std::is_base_of_v<Block, Blocks> && ...), "Sequential::add takes Blocks");
    (register_child(blocks), ...);
    return *this;
  }

  std::size_t size() const { return num_children(); }
  Block& operator[](std::size_t i) const { return child(i); }
  // The i-th block as its type; throws mx::ValueError when it is of another type.
  template <class T>
  T& at(std::size_t i) const {
    if (auto* typed = dynamic_cast<T*>(&child(i))) return *typed;
    throw ValueError("Sequential::at: block " + std::to_string(i) + " ('" + child(i).name() +
                     "') is not of the requested type");
  }

  nd::NDArray forward(const nd::NDArray& x) override;
};

// MXNet's HybridSequential: a Sequential, which hybridize() traces as a whole.
using HybridSequential = Sequential;

}  // namespace mx::gluon::nn
