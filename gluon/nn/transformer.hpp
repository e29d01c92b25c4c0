#pragma once
// The Transformer of D2L's section 10.7 (MXNet edition): the position-wise feed-forward network,
// the residual add-and-norm, the encoder and decoder blocks and the encoder and decoder they stack
// into, with the book's names, arguments and semantics.
//
//   nn::TransformerEncoder encoder(vocab, 32, 64, 4, 2, 0.1);   // width 32, FFN 64, 4 heads, 2 blocks
//   nn::TransformerDecoder decoder(vocab, 32, 64, 4, 2, 0.1);
//   encoder.initialize(mx::init::Xavier(), ctx);  decoder.initialize(mx::init::Xavier(), ctx);
//   auto memory = encoder(X, valid_lens);                        // X (B, T) ids -> (B, T, 32)
//   auto state = decoder.init_state(memory, valid_lens);
//   auto [scores, next] = decoder(Y, state);                     // Y (B, T') ids -> (B, T', vocab)
//
// In training (autograd::record() or train_mode()) a decoder block's self-attention is causal:
// query t sees keys 1..t. In prediction the decoder takes one step at a time, each block keeping
// the steps it has seen in the state (D2L's state[2][i]), so that a step attends to every step
// before it.
//
// Where ndgluon differs from D2L on purpose: the decoder's positional encoding continues from the
// steps its state has seen, where D2L's starts again at position 0 for each step it is fed alone;
// so decoding step by step gives exactly what one causal pass over the same steps gives.
//
// Like the attention blocks (gluon/nn/attention.hpp) these take several inputs and run eagerly.
#include <cstdint>
#include <utility>
#include <vector>

#include "gluon/nn/attention.hpp"
#include "gluon/nn/embedding.hpp"
#include "gluon/nn/norm_layers.hpp"
#include "gluon/nn/sequential.hpp"

namespace mx::gluon::nn {

// Dense(ffn_num_hiddens, relu) then Dense(ffn_num_outputs), over the last axis.
class PositionWiseFFN : public Block {
 public:
  PositionWiseFFN(std::int64_t ffn_num_hiddens, std::int64_t ffn_num_outputs);
  nd::NDArray forward(const nd::NDArray& X) override;  // (B, T, d) -> (B, T, ffn_num_outputs)

 private:
  Dense dense1_, dense2_;
};

// LayerNorm(dropout(Y) + X).
class AddNorm : public Block {
 public:
  explicit AddNorm(double dropout);
  nd::NDArray forward(const nd::NDArray& X, const nd::NDArray& Y);
  nd::NDArray operator()(const nd::NDArray& X, const nd::NDArray& Y) { return forward(X, Y); }
  nd::NDArray forward(const nd::NDArray& X) override { return forward(X, X); }
  using Block::operator();

 private:
  Dropout dropout_;
  LayerNorm ln_;
};

// Self-attention and a position-wise FFN, each followed by an AddNorm (D2L's EncoderBlock).
class TransformerEncoderBlock : public Block {
 public:
  TransformerEncoderBlock(std::int64_t num_hiddens, std::int64_t ffn_num_hiddens, std::int64_t num_heads,
                          double dropout, bool use_bias = false);
  // X (B, T, num_hiddens); valid_lens (B,) or none.
  nd::NDArray forward(const nd::NDArray& X, const nd::NDArray& valid_lens);
  nd::NDArray operator()(const nd::NDArray& X, const nd::NDArray& valid_lens) { return forward(X, valid_lens); }
  nd::NDArray forward(const nd::NDArray& X) override { return forward(X, {}); }
  using Block::operator();
  const MultiHeadAttention& attention() const { return attention_; }

 private:
  MultiHeadAttention attention_;
  AddNorm addnorm1_;
  PositionWiseFFN ffn_;
  AddNorm addnorm2_;
};

// Embedding scaled by sqrt(num_hiddens), positional encoding, num_layers encoder blocks.
class TransformerEncoder : public Block {
 public:
  TransformerEncoder(std::int64_t vocab_size, std::int64_t num_hiddens, std::int64_t ffn_num_hiddens,
                     std::int64_t num_heads, std::int64_t num_layers, double dropout, bool use_bias = false);
  // X (B, T) token ids, valid_lens (B,) or none -> (B, T, num_hiddens).
  nd::NDArray forward(const nd::NDArray& X, const nd::NDArray& valid_lens);
  nd::NDArray operator()(const nd::NDArray& X, const nd::NDArray& valid_lens) { return forward(X, valid_lens); }
  nd::NDArray forward(const nd::NDArray& X) override { return forward(X, {}); }
  using Block::operator();
  // Each block's self-attention weights of the last call, (B · heads, T, T).
  std::vector<nd::NDArray> attention_weights() const;

 private:
  std::int64_t num_hiddens_;
  Embedding embedding_;
  PositionalEncoding pos_encoding_;
  std::vector<TransformerEncoderBlock> blks_;
};

// What the decoder carries between calls: the encoder's outputs and valid lengths, and per block
// the decoder steps it has seen (none before the first step).
struct TransformerDecoderState {
  nd::NDArray enc_outputs, enc_valid_lens;
  std::vector<nd::NDArray> key_values;
};

// Causal self-attention, attention over the encoder's outputs, and a position-wise FFN, each
// followed by an AddNorm (D2L's DecoderBlock); i is the block's place in the decoder.
class TransformerDecoderBlock : public Block {
 public:
  TransformerDecoderBlock(std::int64_t num_hiddens, std::int64_t ffn_num_hiddens, std::int64_t num_heads,
                          double dropout, std::size_t i);
  // X (B, T, num_hiddens) -> the same shape; the state's key_values[i] extended by X.
  nd::NDArray forward(const nd::NDArray& X, TransformerDecoderState& state);
  // Without a state there is nothing to attend to: mx::ValueError.
  nd::NDArray forward(const nd::NDArray& X) override;
  using Block::operator();

 private:
  std::size_t i_;
  MultiHeadAttention attention1_;
  AddNorm addnorm1_;
  MultiHeadAttention attention2_;
  AddNorm addnorm2_;
  PositionWiseFFN ffn_;
  AddNorm addnorm3_;
};

class TransformerDecoder : public Block {
 public:
  TransformerDecoder(std::int64_t vocab_size, std::int64_t num_hiddens, std::int64_t ffn_num_hiddens,
                     std::int64_t num_heads, std::int64_t num_layers, double dropout);
  TransformerDecoderState init_state(const nd::NDArray& enc_outputs, const nd::NDArray& enc_valid_lens) const;
  // X (B, T) token ids -> the scores (B, T, vocab_size) and the state after them.
  std::pair<nd::NDArray, TransformerDecoderState> forward(const nd::NDArray& X, TransformerDecoderState state);
  std::pair<nd::NDArray, TransformerDecoderState> operator()(const nd::NDArray& X, TransformerDecoderState state) {
    return forward(X, std::move(state));
  }
  // Without a state there is nothing to attend to: mx::ValueError.
  nd::NDArray forward(const nd::NDArray& X) override;
  using Block::operator();

 private:
  std::int64_t num_hiddens_;
  Embedding embedding_;
  PositionalEncoding pos_encoding_;
  std::vector<TransformerDecoderBlock> blks_;
  Dense dense_;
};

}  // namespace mx::gluon::nn
