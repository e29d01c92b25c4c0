#include "gluon/nn/containers.hpp"

#include <vector>

#include "ndarray/ops/manipulation.hpp"

namespace mx::gluon::nn {

Concurrent::Concurrent(int axis, const std::string& prefix) : Block("concurrent", prefix), axis_(axis) {}

nd::NDArray Concurrent::forward(const nd::NDArray& x) {
  if (size() == 0) throw ValueError("Concurrent '" + name() + "': no branches to run; add blocks first");
  std::vector<nd::NDArray> outputs;
  outputs.reserve(size());
  for (std::size_t i = 0; i < size(); ++i) outputs.push_back(child(i)(x));
  return outputs.size() == 1 ? outputs[0] : nd::concat(outputs, axis_);
}

Lambda::Lambda(Function function, const std::string& prefix) : Block("lambda", prefix), function_(std::move(function)) {
  if (!function_) throw ValueError("Lambda: the function is empty");
}

}  // namespace mx::gluon::nn
