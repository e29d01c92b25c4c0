#pragma once
// Inception v3 as MXNet 1.9's gluon.model_zoo.vision builds it (inception.py), with its structural
// parameter names ("features.7.1.0.0.weight", "output.weight") and, built in its order inside its
// name scopes, its full names ("inception30_A1_conv0_weight"):
//   features = [basic conv 3x3/2 32, 3x3 32, 3x3 pad 1 64, max pool 3/2, 1x1 80, 3x3 192, max pool
//     3/2, A(32) "A1_", A(64) "A2_", A(64) "A3_", B "B_", C(128) "C1_", C(160) "C2_", C(160) "C3_",
//     C(192) "C4_", D "D_", E "E1_", E "E2_", avg pool 8, Dropout 0.5], output = Dense(classes).
//   A basic conv is [conv without bias, BatchNorm (epsilon 0.001), relu]; A to E are Concurrents
//   on axis 1 of branches as MXNet's _make_A ... _make_E (E's two middle branches split in two
//   again). A 299x299 input ends at 8x8 before the pool. MXNet's auxiliary classifier is not part
//   of the model (as in MXNet's).
#include <cstdint>

#include "gluon/block.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/sequential.hpp"

namespace mx::gluon::model_zoo::vision {

class Inception3 : public Block {
 public:
  explicit Inception3(std::int64_t classes = 1000);
  nd::NDArray forward(const nd::NDArray& x) override { return output_(features_(x)); }

 private:
  nn::Sequential features_;
  nn::Dense output_;
};

}  // namespace mx::gluon::model_zoo::vision
