#include "gluon/nn/attention.hpp"

#include <cmath>
#include <string>

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/linalg.hpp"
#include "ndarray/ops/shape_ops.hpp"
#include "ndarray/ops/softmax.hpp"

namespace mx::gluon::nn {

nd::NDArray masked_softmax(const nd::NDArray& X, const nd::NDArray& valid_lens) {
  nd::check_not_none("masked_softmax", X);
  if (valid_lens.is_none()) return nd::softmax(X, -1);
  if (X.ndim() != 3) throw ShapeError("masked_softmax: scores must be (B, Tq, Tk), got " + nd::describe(X));
  const Shape& s = X.shape();
  nd::NDArray lengths;  // one per (batch row, query): the scores' shape without the key axis
  if (valid_lens.ndim() == 1 && valid_lens.shape()[0] == s[0]) {
    lengths = nd::repeat(valid_lens, s[1]).reshape({s[0], s[1]});
  } else if (valid_lens.ndim() == 2 && valid_lens.shape() == Shape{s[0], s[1]}) {
    lengths = valid_lens;
  } else {
    throw ShapeError("masked_softmax: valid_lens " + nd::describe(valid_lens) + " fits neither (B,) nor (B, Tq) of scores " +
                     nd::describe(X));
  }
  return nd::softmax(X, lengths, -1);  // one fused pass: the keys past each length get weight 0
}

namespace {

void check_qkv(const char* block, const nd::NDArray& q, const nd::NDArray& k, const nd::NDArray& v) {
  for (const nd::NDArray* a : {&q, &k, &v}) nd::check_not_none(block, *a);
  if (q.ndim() != 3 || k.ndim() != 3 || v.ndim() != 3 || q.shape()[0] != k.shape()[0] ||
      k.shape()[0] != v.shape()[0] || k.shape()[1] != v.shape()[1]) {
    throw ShapeError(std::string(block) + ": queries " + nd::describe(q) + ", keys " + nd::describe(k) + " and values " +
                     nd::describe(v) + " must be (B, Tq, dq), (B, Tk, dk) and (B, Tk, dv)");
  }
}

// Dense(num_hiddens) over the last axis, as D2L's attention layers make them.
Dense projection(std::int64_t units, bool use_bias) {
  return Dense(units, DenseOptions{.use_bias = use_bias, .flatten = false});
}

}  // namespace

AdditiveAttention::AdditiveAttention(std::int64_t num_hiddens, double dropout)
    : Block("additiveattention"),
      W_k_(in_name_scope([&] { return register_child(projection(num_hiddens, false), "W_k"); })),
      W_q_(in_name_scope([&] { return register_child(projection(num_hiddens, false), "W_q"); })),
      w_v_(in_name_scope([&] { return register_child(projection(1, false), "w_v"); })),
      dropout_(in_name_scope([&] { return register_child(Dropout(dropout), "dropout"); })) {}

nd::NDArray AdditiveAttention::forward(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                                       const nd::NDArray& valid_lens) {
  check_qkv("AdditiveAttention", queries, keys, values);
  // (B, Tq, 1, h) + (B, 1, Tk, h): every query against every key.
  const nd::NDArray features = nd::tanh(nd::expand_dims(W_q_(queries), 2) + nd::expand_dims(W_k_(keys), 1));
  const nd::NDArray scores = nd::squeeze(w_v_(features), {-1});  // (B, Tq, Tk)
  weights_ = masked_softmax(scores, valid_lens);
  return nd::batch_dot(dropout_(weights_), values);
}

DotProductAttention::DotProductAttention(double dropout)
    : Block("dotproductattention"),
      dropout_(in_name_scope([&] { return register_child(Dropout(dropout), "dropout"); })) {}

nd::NDArray DotProductAttention::forward(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                                         const nd::NDArray& valid_lens) {
  check_qkv("DotProductAttention", queries, keys, values);
  if (queries.shape()[2] != keys.shape()[2]) {
    throw ShapeError("DotProductAttention: queries " + nd::describe(queries) + " and keys " + nd::describe(keys) +
                     " must have one feature size");
  }
  const double d = static_cast<double>(queries.shape()[2]);
  const nd::NDArray scores = nd::batch_dot(queries, keys, false, true) / std::sqrt(d);  // (B, Tq, Tk)
  weights_ = masked_softmax(scores, valid_lens);
  return nd::batch_dot(dropout_(weights_), values);
}

namespace {

// (B, T, h) -> (B · heads, T, h / heads): D2L's transpose_qkv.
nd::NDArray split_heads(const nd::NDArray& X, std::int64_t heads) {
  const Shape& s = X.shape();
  return X.reshape({s[0], s[1], heads, s[2] / heads}).transpose({0, 2, 1, 3}).reshape({s[0] * heads, s[1], s[2] / heads});
}

// (B · heads, T, d) -> (B, T, heads · d): D2L's transpose_output.
nd::NDArray merge_heads(const nd::NDArray& X, std::int64_t heads) {
  const Shape& s = X.shape();
  return X.reshape({s[0] / heads, heads, s[1], s[2]}).transpose({0, 2, 1, 3}).reshape({s[0] / heads, s[1], heads * s[2]});
}

std::int64_t checked_heads(std::int64_t num_hiddens, std::int64_t num_heads) {
  if (num_heads < 1 || num_hiddens < 1 || num_hiddens % num_heads != 0) {
    throw ValueError("MultiHeadAttention: num_hiddens " + std::to_string(num_hiddens) + " must be a positive multiple of " +
                     "num_heads " + std::to_string(num_heads));
  }
  return num_heads;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t num_hiddens, std::int64_t num_heads, double dropout, bool use_bias)
    : Block("multiheadattention"), num_heads_(checked_heads(num_hiddens, num_heads)),
      attention_(in_name_scope([&] { return register_child(DotProductAttention(dropout), "attention"); })),
      W_q_(in_name_scope([&] { return register_child(projection(num_hiddens, use_bias), "W_q"); })),
      W_k_(in_name_scope([&] { return register_child(projection(num_hiddens, use_bias), "W_k"); })),
      W_v_(in_name_scope([&] { return register_child(projection(num_hiddens, use_bias), "W_v"); })),
      W_o_(in_name_scope([&] { return register_child(projection(num_hiddens, use_bias), "W_o"); })) {}

nd::NDArray MultiHeadAttention::forward(const nd::NDArray& queries, const nd::NDArray& keys, const nd::NDArray& values,
                                        const nd::NDArray& valid_lens) {
  check_qkv("MultiHeadAttention", queries, keys, values);
  const nd::NDArray q = split_heads(W_q_(queries), num_heads_), k = split_heads(W_k_(keys), num_heads_),
                    v = split_heads(W_v_(values), num_heads_);
  // Each length once per head, heads of one batch row together, as the heads are.
  const nd::NDArray lengths = valid_lens.is_none() ? valid_lens : nd::repeat(valid_lens, num_heads_, 0);
  return W_o_(merge_heads(attention_(q, k, v, lengths), num_heads_));
}

PositionalEncoding::PositionalEncoding(std::int64_t num_hiddens, double dropout, std::int64_t max_len)
    : Block("positionalencoding"), num_hiddens_(num_hiddens), max_len_(max_len),
      dropout_(in_name_scope([&] { return register_child(Dropout(dropout), "dropout"); })) {
  if (num_hiddens < 2 || num_hiddens % 2 != 0 || max_len < 1) {
    throw ValueError("PositionalEncoding: num_hiddens must be even and >= 2, max_len >= 1; got " +
                     std::to_string(num_hiddens) + " and " + std::to_string(max_len));
  }
  P_.resize(static_cast<std::size_t>(max_len * num_hiddens));
  for (std::int64_t t = 0; t < max_len; ++t) {
    for (std::int64_t j = 0; j < num_hiddens; j += 2) {
      // As the book: the ratio in float32 (np.arange / np.power), the sine and cosine of it.
      const float angle = static_cast<float>(t) / std::pow(10000.0f, static_cast<float>(j) / static_cast<float>(num_hiddens));
      P_[static_cast<std::size_t>(t * num_hiddens + j)] = std::sin(angle);
      P_[static_cast<std::size_t>(t * num_hiddens + j + 1)] = std::cos(angle);
    }
  }
}

nd::NDArray PositionalEncoding::table() const { return nd::array(P_, {max_len_, num_hiddens_}, cpu()); }

nd::NDArray PositionalEncoding::forward(const nd::NDArray& X, std::int64_t offset) {
  nd::check_not_none("PositionalEncoding", X);
  if (X.ndim() != 3 || X.shape()[2] != num_hiddens_ || offset < 0 || offset + X.shape()[1] > max_len_) {
    throw ShapeError("PositionalEncoding '" + name() + "': input " + nd::describe(X) + " from position " +
                     std::to_string(offset) + " must be (B, T, " + std::to_string(num_hiddens_) +
                     ") within max_len " + std::to_string(max_len_));
  }
  const std::int64_t T = X.shape()[1];
  const std::vector<float> rows(P_.begin() + offset * num_hiddens_, P_.begin() + (offset + T) * num_hiddens_);
  return dropout_(X + nd::array(rows, {1, T, num_hiddens_}, X.context(), X.dtype()));
}

}  // namespace mx::gluon::nn
