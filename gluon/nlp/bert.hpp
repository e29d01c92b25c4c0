#pragma once
// BERT as GluonNLP 0.10 builds it (gluonnlp.model.bert): the encoder of post-norm Transformer
// cells with a learned positional embedding, and BERTModel with its word and token-type
// embeddings, the pooler, the next-sentence classifier and the masked-LM decoder, whose output
// layer shares the word embedding's weight.
//
//   auto bert = nlp::bert_12_768_12({.vocab_size = 30522, .pretrained = "bert_12_768_12_book_corpus_wiki_en_uncased.params"});
//   nlp::BERTOutput out = bert(tokens, token_types, valid_length, masked_positions);
//   out.sequence (B, T, 768), out.pooled (B, 768), out.next_sentence (B, 2), out.masked_lm (B, M, 30522)
//
// Parameter names and structural keys are GluonNLP's, so that its .params files load:
// encoder.position_weight, encoder.layer_norm.gamma, encoder.transformer_cells.0.attention_cell.
// proj_query.weight (the attention cell's query_weight, as GluonNLP saves it), ...proj.weight,
// ...ffn.ffn_1.weight, ...ffn.layer_norm.gamma, ...layer_norm.gamma, word_embed.0.weight,
// token_type_embed.0.weight, pooler.weight, classifier.weight, decoder.0.weight, decoder.2.gamma,
// decoder.3.weight (the word embedding's, one parameter under both keys) and decoder.3.bias.
//
// The attention runs MXNet's interleaved ops (nd::contrib::interleaved_matmul_selfatt_qk and
// _valatt) over one projection of the interleaved query, key and value weights, and a softmax
// over each sequence's valid length, as GluonNLP's DotProductSelfAttentionCell. The encoder works
// in GluonNLP's layout, (T, B, C); BERTModel takes and returns (B, T, ...).
//
// These blocks take several inputs and run eagerly (Block traces forward(x) of one input).
#include <cstdint>
#include <string>
#include <vector>

#include "gluon/block.hpp"
#include "gluon/nn/activation_layers.hpp"
#include "gluon/nn/dense.hpp"
#include "gluon/nn/dropout.hpp"
#include "gluon/nn/embedding.hpp"
#include "gluon/nn/norm_layers.hpp"
#include "gluon/nn/sequential.hpp"

namespace mx::gluon::nlp {

// GluonNLP's DotProductSelfAttentionCell: query, key and value projections of `units` each (their
// weights (units, units) and biases (units,)), num_heads heads of units / num_heads.
class BERTSelfAttention : public Block {
 public:
  BERTSelfAttention(std::int64_t units, std::int64_t num_heads, double dropout = 0.0);
  // qkv (T, B, units); valid_len (B, T): the keys each query sees (none: all) -> (T, B, units).
  nd::NDArray forward(const nd::NDArray& qkv, const nd::NDArray& valid_len);
  nd::NDArray operator()(const nd::NDArray& qkv, const nd::NDArray& valid_len) { return forward(qkv, valid_len); }
  nd::NDArray forward(const nd::NDArray& x) override { return forward(x, {}); }
  using Block::operator();

 private:
  std::int64_t units_, heads_;
  nn::Dropout dropout_;
};

// GluonNLP's PositionwiseFFN as BERT uses it: ffn_1 (hidden_size), the activation, ffn_2 (units),
// dropout, the residual, layer_norm.
class BERTPositionwiseFFN : public Block {
 public:
  BERTPositionwiseFFN(std::int64_t units, std::int64_t hidden_size, double dropout, const std::string& activation,
                      double layer_norm_eps);
  nd::NDArray forward(const nd::NDArray& x) override;

 private:
  nn::Dense ffn_1_, ffn_2_;
  std::string activation_;
  nn::Dropout dropout_;
  nn::LayerNorm layer_norm_;
};

// GluonNLP's BERTEncoderCell: self-attention, proj, dropout, the residual, layer_norm, then ffn.
class BERTEncoderCell : public Block {
 public:
  BERTEncoderCell(std::int64_t units, std::int64_t hidden_size, std::int64_t num_heads, double dropout,
                  const std::string& activation, double layer_norm_eps);
  nd::NDArray forward(const nd::NDArray& x, const nd::NDArray& valid_len);  // (T, B, units)
  nd::NDArray operator()(const nd::NDArray& x, const nd::NDArray& valid_len) { return forward(x, valid_len); }
  nd::NDArray forward(const nd::NDArray& x) override { return forward(x, {}); }
  using Block::operator();

 private:
  nn::Dropout dropout_;
  BERTSelfAttention attention_cell_;
  nn::Dense proj_;
  BERTPositionwiseFFN ffn_;
  nn::LayerNorm layer_norm_;
};

struct BERTEncoderOptions {
  std::int64_t num_layers = 2, units = 512, hidden_size = 2048, max_length = 50, num_heads = 4;
  double dropout = 0.0;
  std::string activation = "gelu";  // "gelu" (erf's, GluonNLP's GELU) or an Activation's name ("relu")
  double layer_norm_eps = 1e-12;
};

// GluonNLP's BERTEncoder: inputs plus the positional embedding of their steps, dropout,
// layer_norm, the cells; the steps past each sequence's valid length are zeroed at the end
// (SequenceMask), as GluonNLP's.
class BERTEncoder : public Block {
 public:
  explicit BERTEncoder(const BERTEncoderOptions& options = {});
  // inputs (T, B, units), valid_length (B,) or none -> (T, B, units). T above max_length, a width
  // other than units, or a valid_length of another shape: mx::ShapeError naming both.
  nd::NDArray forward(const nd::NDArray& inputs, const nd::NDArray& valid_length);
  nd::NDArray operator()(const nd::NDArray& inputs, const nd::NDArray& valid_length) {
    return forward(inputs, valid_length);
  }
  nd::NDArray forward(const nd::NDArray& x) override { return forward(x, {}); }
  using Block::operator();
  const BERTEncoderOptions& options() const { return options_; }

 private:
  BERTEncoderOptions options_;
  nn::Dropout dropout_;
  nn::LayerNorm layer_norm_;
  Parameter position_weight_;
  std::vector<BERTEncoderCell> cells_;
};

// BERTModel's outputs; a head the model lacks leaves its output a none array.
struct BERTOutput {
  nd::NDArray sequence;       // (B, T, units)
  nd::NDArray pooled;         // (B, units): tanh(pooler(the first token's encoding))
  nd::NDArray next_sentence;  // (B, 2): the classifier's scores
  nd::NDArray masked_lm;      // (B, M, vocab_size): the decoder's scores at masked_positions
};

struct BERTModelOptions {
  std::int64_t vocab_size = 30522, token_type_vocab_size = 2;
  bool use_pooler = true, use_decoder = true, use_classifier = true, use_token_type_embed = true;
};

class BERTModel : public Block {
 public:
  BERTModel(const BERTEncoder& encoder, const BERTModelOptions& options = {});
  // inputs, token_types (B, T) ids; valid_length (B,) or none; masked_positions (B, M) positions
  // in [0, T) (clipped, as take's), needed by the decoder only.
  BERTOutput forward(const nd::NDArray& inputs, const nd::NDArray& token_types, const nd::NDArray& valid_length = {},
                     const nd::NDArray& masked_positions = {});
  BERTOutput operator()(const nd::NDArray& inputs, const nd::NDArray& token_types,
                        const nd::NDArray& valid_length = {}, const nd::NDArray& masked_positions = {}) {
    return forward(inputs, token_types, valid_length, masked_positions);
  }
  // The sequence's encoding of inputs with token type 0 everywhere.
  nd::NDArray forward(const nd::NDArray& x) override;
  using Block::operator();
  BERTEncoder& encoder() { return encoder_; }

 private:
  // The embeddings and the encoder: (B, T, units).
  nd::NDArray encode(const nd::NDArray& inputs, const nd::NDArray& token_types, const nd::NDArray& valid_length);
  BERTModelOptions options_;
  BERTEncoder encoder_;
  nn::Sequential word_embed_, token_type_embed_, decoder_;
  nn::Dense pooler_, classifier_;
};

// GluonNLP's bert_12_768_12 and bert_24_1024_16: the encoder's hyper-parameters (12 layers of 768
// with 12 heads and 3,072 hidden, or 24 of 1,024 with 16 and 4,096; 512 positions, dropout 0.1,
// GELU, LayerNorm's epsilon 1e-12) and the model's options. pretrained: a GluonNLP .params file,
// loaded onto ctx (cpu(0) when empty); a model without some head ignores that head's entries.
struct BERTPretrained {
  BERTModelOptions model = {};
  double dropout = 0.1;
  std::string pretrained = "";
  std::vector<Context> ctx = {};
};
BERTModel bert_12_768_12(const BERTPretrained& options = {});
BERTModel bert_24_1024_16(const BERTPretrained& options = {});

}  // namespace mx::gluon::nlp
