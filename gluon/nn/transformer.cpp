#include "gluon/nn/transformer.hpp"

#include <cmath>
#include <string>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/shape_ops.hpp"

namespace mx::gluon::nn {

PositionWiseFFN::PositionWiseFFN(std::int64_t ffn_num_hiddens, std::int64_t ffn_num_outputs)
    : Block("positionwiseffn"),
      dense1_(in_name_scope([&] {
        return register_child(Dense(ffn_num_hiddens, DenseOptions{.activation = "relu", .flatten = false}), "dense1");
      })),
      dense2_(in_name_scope(
          [&] { return register_child(Dense(ffn_num_outputs, DenseOptions{.flatten = false}), "dense2"); })) {}

nd::NDArray PositionWiseFFN::forward(const nd::NDArray& X) { return dense2_(dense1_(X)); }

AddNorm::AddNorm(double dropout)
    : Block("addnorm"), dropout_(in_name_scope([&] { return register_child(Dropout(dropout), "dropout"); })),
      ln_(in_name_scope([&] { return register_child(LayerNorm(), "ln"); })) {}

nd::NDArray AddNorm::forward(const nd::NDArray& X, const nd::NDArray& Y) { return ln_(dropout_(Y) + X); }

TransformerEncoderBlock::TransformerEncoderBlock(std::int64_t num_hiddens, std::int64_t ffn_num_hiddens,
                                                 std::int64_t num_heads, double dropout, bool use_bias)
    : Block("transformerencoderblock"),
      attention_(in_name_scope([&] {
        return register_child(MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias), "attention");
      })),
      addnorm1_(in_name_scope([&] { return register_child(AddNorm(dropout), "addnorm1"); })),
      ffn_(in_name_scope([&] { return register_child(PositionWiseFFN(ffn_num_hiddens, num_hiddens), "ffn"); })),
      addnorm2_(in_name_scope([&] { return register_child(AddNorm(dropout), "addnorm2"); })) {}

nd::NDArray TransformerEncoderBlock::forward(const nd::NDArray& X, const nd::NDArray& valid_lens) {
  const nd::NDArray Y = addnorm1_(X, attention_(X, X, X, valid_lens));
  return addnorm2_(Y, ffn_(Y));
}

namespace {

void check_layers(const char* block, std::int64_t num_layers) {
  if (num_layers < 1) throw ValueError(std::string(block) + ": num_layers must be >= 1, got " + std::to_string(num_layers));
}

}  // namespace

TransformerEncoder::TransformerEncoder(std::int64_t vocab_size, std::int64_t num_hiddens, std::int64_t ffn_num_hiddens,
                                       std::int64_t num_heads, std::int64_t num_layers, double dropout, bool use_bias)
    : Block("transformerencoder"), num_hiddens_(num_hiddens),
      embedding_(in_name_scope([&] { return register_child(Embedding(vocab_size, num_hiddens), "embedding"); })),
      pos_encoding_(in_name_scope([&] { return register_child(PositionalEncoding(num_hiddens, dropout), "pos_encoding"); })) {
  check_layers("TransformerEncoder", num_layers);
  const NameScope scope = name_scope();
  for (std::int64_t i = 0; i < num_layers; ++i) {
    blks_.push_back(register_child(
        TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias), "blks." + std::to_string(i)));
  }
}

nd::NDArray TransformerEncoder::forward(const nd::NDArray& X, const nd::NDArray& valid_lens) {
  // The embedding scaled up to the encoding's range (its values are about 1 / sqrt(d)).
  nd::NDArray H = pos_encoding_(embedding_(X) * std::sqrt(static_cast<double>(num_hiddens_)));
  for (TransformerEncoderBlock& blk : blks_) H = blk(H, valid_lens);
  return H;
}

std::vector<nd::NDArray> TransformerEncoder::attention_weights() const {
  std::vector<nd::NDArray> weights;
  for (const TransformerEncoderBlock& blk : blks_) weights.push_back(blk.attention().attention_weights());
  return weights;
}

TransformerDecoderBlock::TransformerDecoderBlock(std::int64_t num_hiddens, std::int64_t ffn_num_hiddens,
                                                 std::int64_t num_heads, double dropout, std::size_t i)
    : Block("transformerdecoderblock"), i_(i),
      attention1_(in_name_scope([&] {
        return register_child(MultiHeadAttention(num_hiddens, num_heads, dropout), "attention1");
      })),
      addnorm1_(in_name_scope([&] { return register_child(AddNorm(dropout), "addnorm1"); })),
      attention2_(in_name_scope([&] {
        return register_child(MultiHeadAttention(num_hiddens, num_heads, dropout), "attention2");
      })),
      addnorm2_(in_name_scope([&] { return register_child(AddNorm(dropout), "addnorm2"); })),
      ffn_(in_name_scope([&] { return register_child(PositionWiseFFN(ffn_num_hiddens, num_hiddens), "ffn"); })),
      addnorm3_(in_name_scope([&] { return register_child(AddNorm(dropout), "addnorm3"); })) {}

nd::NDArray TransformerDecoderBlock::forward(const nd::NDArray& X, TransformerDecoderState& state) {
  if (state.key_values.size() <= i_) {
    throw ValueError("TransformerDecoderBlock '" + name() + "': the state holds " +
                     std::to_string(state.key_values.size()) + " blocks' steps, this block is number " +
                     std::to_string(i_) + "; make it with TransformerDecoder::init_state");
  }
  nd::NDArray& seen = state.key_values[i_];
  const nd::NDArray key_values = seen.is_none() ? X : nd::concat({seen, X}, 1);
  seen = key_values;
  nd::NDArray dec_valid_lens;  // none in prediction: a step sees every step before it
  if (autograd::is_training()) {
    // Query t sees keys 1..t: lengths 1, ..., T for every batch row.
    const std::int64_t batch = X.shape()[0], steps = X.shape()[1];
    dec_valid_lens = nd::tile(nd::arange(1, static_cast<double>(steps) + 1, 1, X.context()), {batch, 1});
  }
  const nd::NDArray Y = addnorm1_(X, attention1_(X, key_values, key_values, dec_valid_lens));
  const nd::NDArray Z = addnorm2_(Y, attention2_(Y, state.enc_outputs, state.enc_outputs, state.enc_valid_lens));
  return addnorm3_(Z, ffn_(Z));
}

nd::NDArray TransformerDecoderBlock::forward(const nd::NDArray& /*X*/) {
  throw ValueError("TransformerDecoderBlock '" + name() +
                   "': it attends to an encoder's outputs: call forward(X, state) with TransformerDecoder::init_state");
}

TransformerDecoder::TransformerDecoder(std::int64_t vocab_size, std::int64_t num_hiddens, std::int64_t ffn_num_hiddens,
                                       std::int64_t num_heads, std::int64_t num_layers, double dropout)
    : Block("transformerdecoder"), num_hiddens_(num_hiddens),
      embedding_(in_name_scope([&] { return register_child(Embedding(vocab_size, num_hiddens), "embedding"); })),
      pos_encoding_(in_name_scope([&] { return register_child(PositionalEncoding(num_hiddens, dropout), "pos_encoding"); })),
      dense_(in_name_scope(
          [&] { return register_child(Dense(vocab_size, DenseOptions{.flatten = false}), "dense"); })) {
  check_layers("TransformerDecoder", num_layers);
  const NameScope scope = name_scope();
  for (std::int64_t i = 0; i < num_layers; ++i) {
    blks_.push_back(register_child(
        TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, static_cast<std::size_t>(i)),
        "blks." + std::to_string(i)));
  }
}

TransformerDecoderState TransformerDecoder::init_state(const nd::NDArray& enc_outputs,
                                                       const nd::NDArray& enc_valid_lens) const {
  return {enc_outputs, enc_valid_lens, std::vector<nd::NDArray>(blks_.size())};
}

std::pair<nd::NDArray, TransformerDecoderState> TransformerDecoder::forward(const nd::NDArray& X,
                                                                            TransformerDecoderState state) {
  // The steps seen so far: where this call's positions start.
  const std::int64_t seen = state.key_values.empty() || state.key_values[0].is_none() ? 0 : state.key_values[0].shape()[1];
  nd::NDArray H = pos_encoding_(embedding_(X) * std::sqrt(static_cast<double>(num_hiddens_)), seen);
  for (TransformerDecoderBlock& blk : blks_) H = blk.forward(H, state);
  return {dense_(H), std::move(state)};
}

nd::NDArray TransformerDecoder::forward(const nd::NDArray& /*X*/) {
  throw ValueError("TransformerDecoder '" + name() +
                   "': it attends to an encoder's outputs: call forward(X, init_state(enc_outputs, enc_valid_lens))");
}

}  // namespace mx::gluon::nn
