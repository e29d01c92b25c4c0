#include "gluon/nn/sequential.hpp"

namespace mx::gluon::nn {

nd::NDArray Sequential::forward(const nd::NDArray& x) {
  nd::NDArray out = x;
  for (std::size_t i = 0; i < size(); ++i) out = child(i)(out);
  return out;
}

}  // namespace mx::gluon::nn
