#include "gluon/nn/embedding.hpp"

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/indexing.hpp"

namespace mx::gluon::nn {

Embedding::Embedding(std::int64_t input_dim, std::int64_t output_dim, DType dtype,
                     init::InitializerRef weight_initializer, bool sparse_grad, const std::string& prefix)
    : Block("embedding", prefix), input_dim_(input_dim), output_dim_(output_dim), dtype_(dtype),
      sparse_grad_(sparse_grad) {
  if (input_dim < 1 || output_dim < 1) {
    throw ValueError("Embedding: input_dim and output_dim must be >= 1, got " + std::to_string(input_dim) + " and " +
                     std::to_string(output_dim));
  }
  register_parameter("weight", Shape{input_dim, output_dim}, std::move(weight_initializer), dtype);
}

Parameter Embedding::weight() const { return parameter("weight"); }

nd::NDArray Embedding::forward(const nd::NDArray& x) {
  nd::check_not_none("Embedding", x);
  const nd::NDArray w = weight().data(x.context());
  return nd::Embedding(x, w, input_dim_, output_dim_, dtype_, sparse_grad_);
}

}  // namespace mx::gluon::nn
