#include "gluon/nn/dropout.hpp"

#include "ndarray/ops/nn.hpp"

namespace mx::gluon::nn {

namespace {

double checked_rate(double rate) {
  if (!(rate >= 0.0 && rate < 1.0)) throw ValueError("Dropout: rate must be in [0, 1), got " + std::to_string(rate));
  return rate;
}

}  // namespace

Dropout::Dropout(double rate, const std::string& prefix) : Block("dropout", prefix), rate_(checked_rate(rate)) {}

nd::NDArray Dropout::forward(const nd::NDArray& x) { return nd::Dropout(x, rate_); }

}  // namespace mx::gluon::nn
