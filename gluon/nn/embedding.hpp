#pragma once
// nn::Embedding: a lookup table of input_dim rows of output_dim values, as mx.gluon.nn.Embedding.
// Input: indices of any shape (any dtype; float ids are truncated, ids outside [0, input_dim) are
// clipped, as MXNet's op does); output: the input's shape + (output_dim,), in the weight's dtype.
#include <cstdint>
#include <string>

#include "gluon/block.hpp"

namespace mx::gluon::nn {

class Embedding : public Block {
 public:
  // input_dim, output_dim >= 1, else mx::ValueError. dtype: the weight's. sparse_grad is accepted
  // as MXNet's and gives the same (dense) gradient (Note [Embedding's sparse_grad], ndarray/ops/
  // indexing.cpp). Parameter "weight" (input_dim, output_dim): embedding0_weight.
  Embedding(std::int64_t input_dim, std::int64_t output_dim, DType dtype = DType::float32,
            init::InitializerRef weight_initializer = {}, bool sparse_grad = false, const std::string& prefix = "");

  nd::NDArray forward(const nd::NDArray& x) override;

  Parameter weight() const;
  std::int64_t input_dim() const { return input_dim_; }
  std::int64_t output_dim() const { return output_dim_; }

 private:
  std::int64_t input_dim_, output_dim_;
  DType dtype_;
  bool sparse_grad_;
};

}  // namespace mx::gluon::nn
