#pragma once
// Attention, as D2L's chapter 10 (MXNet edition) builds it and GluonNLP's layers use it: the
// masked softmax, additive and scaled dot-product attention scoring, multi-head attention and
// sinusoidal positional encoding. Built from registered ops (batch_dot, SequenceMask, softmax,
// FullyConnected, Dropout), so they run on every context and are differentiated by autograd.
//
//   nn::MultiHeadAttention attention(128, 4, 0.1);      // 4 heads over 128 features
//   attention.initialize(mx::init::Xavier(), ctx);
//   auto y = attention(queries, keys, values, valid_lens);   // (B, Tq, 128)
//
// Shapes: queries (B, Tq, dq), keys (B, Tk, dk), values (B, Tk, dv). valid_lens, optional:
// (B,), each query's batch row attends to its first valid_lens[b] keys, or (B, Tq), one length per
// query (a causal mask is (B, Tq) of 1, 2, ..., Tq). The weights of the last call are kept in
// attention_weights() (D2L's attention_weights), (B, Tq, Tk), for plotting.
//
// Where ndgluon differs from D2L: the blocks take several inputs, so hybridize() does not trace
// them (Block traces forward(x) of one input); they run eagerly, as the book's nn.Block does.
#include <cstdint>
#include <vector>

#include "gluon/block.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/dropout.hpp"

namespace mx::gluon::nn {

// D2L's masked_softmax: softmax over the last axis of X (B, Tq, Tk) over each row's first valid
// keys, the others weighing 0; valid_lens none, (B,) or (B, Tq) (other shapes: mx::ShapeError).
// One fused op (softmax with MXNet's use_length) where D2L masks with -1e6 first: the same
// weights, except for a valid length of 0, whose row is all 0 here and uniform in D2L.
nd::NDArray masked_softmax(const nd::NDArray& X, const nd::NDArray& valid_lens = {});

// Attention scoring with learned projections: score(q, k) = w_vᵀ tanh(W_q q + W_k k), then the
// masked softmax, dropout, and the weights times the values (D2L 10.3.2).
class AdditiveAttention : public Block {
 public:
  AdditiveAttention(std::int64_t num_hiddens, double dropout);
  nd::NDArray forward(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                      const nd::NDArray& valid_lens = {});
  nd::NDArray operator()(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                         const nd::NDArray& valid_lens = {}) {
    return forward(queries, keys, values, valid_lens);
  }
  nd::NDArray forward(const nd::NDArray& x) override { return forward(x, x, x); }
  using Block::operator();
  const nd::NDArray& attention_weights() const { return weights_; }

 private:
  Dense W_k_, W_q_, w_v_;
  Dropout dropout_;
  nd::NDArray weights_;
};

// Scaled dot-product attention: softmax(Q Kᵀ / sqrt(d)) V with the masked softmax and dropout on
// the weights (D2L 10.3.3). queries and keys share d.
class DotProductAttention : public Block {
 public:
  explicit DotProductAttention(double dropout);
  nd::NDArray forward(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                      const nd::NDArray& valid_lens = {});
  nd::NDArray operator()(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                         const nd::NDArray& valid_lens = {}) {
    return forward(queries, keys, values, valid_lens);
  }
  nd::NDArray forward(const nd::NDArray& x) override { return forward(x, x, x); }
  using Block::operator();
  const nd::NDArray& attention_weights() const { return weights_; }

 private:
  Dropout dropout_;
  nd::NDArray weights_;
};

// num_heads heads of dot-product attention over projections of num_hiddens / num_heads features
// each, their outputs concatenated and projected (D2L 10.5): W_q, W_k, W_v, W_o, each
// Dense(num_hiddens, use_bias, flatten = false). num_hiddens must be a multiple of num_heads
// (mx::ValueError).
class MultiHeadAttention : public Block {
 public:
  MultiHeadAttention(std::int64_t num_hiddens, std::int64_t num_heads, double dropout, bool use_bias = false);
  // -> (B, Tq, num_hiddens).
  nd::NDArray forward(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                      const nd::NDArray& valid_lens = {});
  nd::NDArray operator()(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                         const nd::NDArray& valid_lens = {}) {
    return forward(queries, keys, values, valid_lens);
  }
  nd::NDArray forward(const nd::NDArray& x) override { return forward(x, x, x); }  // self-attention
  using Block::operator();
  std::int64_t num_heads() const { return num_heads_; }
  // (B · num_heads, Tq, Tk): each head's weights, heads of one batch row together.
  const nd::NDArray& attention_weights() const { return attention_.attention_weights(); }

 private:
  std::int64_t num_heads_;
  DotProductAttention attention_;
  Dense W_q_, W_k_, W_v_, W_o_;
};

// Sinusoidal positional encoding added to X (B, T, num_hiddens), then dropout (D2L 10.6.3):
// P[t, 2j] = sin(t / 10000^(2j / d)), P[t, 2j + 1] = cos(t / 10000^(2j / d)), for t < max_len
// (a T past max_len is an mx::ShapeError). num_hiddens even.
class PositionalEncoding : public Block {
 public:
  PositionalEncoding(std::int64_t num_hiddens, double dropout, std::int64_t max_len = 1000);
  nd::NDArray forward(const nd::NDArray& X) override { return forward(X, 0); }
  // X's steps at positions offset, offset + 1, ... (a decoder fed one step at a time).
  nd::NDArray forward(const nd::NDArray& X, std::int64_t offset);
  using Block::operator();
  nd::NDArray operator()(const nd::NDArray& X, std::int64_t offset) { return forward(X, offset); }
  // The table P, (max_len, num_hiddens), on cpu(0).
  nd::NDArray table() const;

 private:
  std::int64_t num_hiddens_, max_len_;
  Dropout dropout_;
  std::vector<float> P_;  // (max_len, num_hiddens), row-major
};

}  // namespace mx::gluon::nn
