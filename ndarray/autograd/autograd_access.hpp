#pragma once
// The library's write access to an array's autograd node (NDArray::set_autograd_node is private:
// only autograd and the op layer attach history to an array). Internal.
#include <memory>
#include <utility>

#include "ndarray/autograd/autograd.hpp"

namespace mx::autograd {

struct NodeAccess {
  static void set(nd::NDArray& x, std::shared_ptr<Node> node) { x.set_autograd_node(std::move(node)); }
};

}  // namespace mx::autograd
