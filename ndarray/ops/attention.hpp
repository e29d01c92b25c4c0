#pragma once
// MXNet's interleaved attention products, as mx.nd.contrib.interleaved_matmul_* (GluonNLP's BERT
// and Transformer call them): the projections of every head side by side on the last axis of a
// time-major array (Note [interleaved layout], ndarray/ops/attention_kernels.hpp), H heads of d
// features each. Scores come out as (B·H, Tq, Tk), heads of one batch row together; each product is
// one batched GEMM (cuBLAS or OpenBLAS) between dense gathers of the heads' slots. Differentiable
// in every input; float32, float64, float16 and bfloat16 (products accumulating in float32).
// Shapes that do not fit: mx::ShapeError naming the op and the shapes.
#include <cstdint>
#include <optional>

#include "ndarray/core/array.hpp"

namespace mx::nd::contrib {

// queries_keys_values (T, B, H·3·d) -> q · kᵀ / sqrt(d) per head: (B·H, T, T).
NDArray interleaved_matmul_selfatt_qk(const NDArray& queries_keys_values, std::int64_t heads);
// queries_keys_values (T, B, H·3·d), attention (B·H, T, T) -> attention · v per head, interleaved
// back: (T, B, H·d).
NDArray interleaved_matmul_selfatt_valatt(const NDArray& queries_keys_values, const NDArray& attention,
                                          std::int64_t heads);
// queries (Tq, B, H·d), keys_values (Tk, B, H·2·d) -> q · kᵀ / sqrt(d) per head: (B·H, Tq, Tk).
NDArray interleaved_matmul_encdec_qk(const NDArray& queries, const NDArray& keys_values, std::int64_t heads);
// keys_values (Tk, B, H·2·d), attention (B·H, Tq, Tk) -> attention · v per head: (Tq, B, H·d).
NDArray interleaved_matmul_encdec_valatt(const NDArray& keys_values, const NDArray& attention, std::int64_t heads);

}  // namespace mx::nd::contrib

namespace mx::nd {

// scaled_dot_product_attention's masks and dropout, as PyTorch's: valid_length (B,) keeps each
// batch row's first keys (key padding, any numeric dtype); causal lets query i see keys 0..i
// (PyTorch's is_causal, aligned at the first key); both together take the shorter. dropout: the
// weights' dropout probability while training (autograd::is_training()), none in prediction.
// scale: default 1 / sqrt(d).
struct SDPAOptions {
  NDArray valid_length = {};
  bool causal = false;
  double dropout = 0.0;
  std::optional<double> scale = std::nullopt;
};

// softmax(q · kᵀ · scale, masked) · v per batch row and head: q (B, H, Tq, d), k (B, H, Tk, d),
// v (B, H, Tk, dv) -> (B, H, Tq, dv). A query that sees no key (a valid length of 0) gives 0.
// On a GPU with cuDNN, float16 and bfloat16 calls with dv = d a multiple of 8 up to 128, Tq and Tk
// multiples of 128 and no valid_length run fused (flash attention, forward and backward, dropout
// from cuDNN's generator seeded at ndgluon's generator position). Everything else takes the
// reference path: batch_dot, the softmax over each query's first keys (MXNet's softmax with
// use_length) and Dropout, differentiated by autograd. The two agree within the dtype's rounding;
// dropout masks differ between them. Shapes that do not fit: mx::ShapeError naming the operands.
NDArray scaled_dot_product_attention(const NDArray& q, const NDArray& k, const NDArray& v,
                                     const SDPAOptions& options = {});

}  // namespace mx::nd
