#include "gluon/nlp/bert.hpp"

#include <string>

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/attention.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/indexing.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/shape_ops.hpp"
#include "ndarray/ops/softmax.hpp"

namespace mx::gluon::nlp {

namespace {

nn::LayerNorm layer_norm(std::int64_t units, double eps) {
  return nn::LayerNorm(nn::LayerNormOptions{.epsilon = eps, .in_channels = units});
}

}  // namespace

BERTSelfAttention::BERTSelfAttention(std::int64_t units, std::int64_t num_heads, double dropout)
    : Block("dotproductselfattentioncell"), units_(units), heads_(num_heads),
      dropout_(in_name_scope([&] { return register_child(nn::Dropout(dropout), "dropout_layer"); })) {
  if (units < 1 || num_heads < 1 || units % num_heads != 0) {
    throw ValueError("BERTSelfAttention: units (" + std::to_string(units) + ") must be a positive multiple of num_heads (" +
                     std::to_string(num_heads) + ")");
  }
  // GluonNLP saves these as proj_query.bias, ..., proj_value.weight.
  for (const std::string what : {"query", "key", "value"}) {
    register_parameter(what + "_bias", Shape{units}, init::Zero());
    set_structural_key(what + "_bias", "proj_" + what + ".bias");
  }
  for (const std::string what : {"query", "key", "value"}) {
    register_parameter(what + "_weight", Shape{units, units});
    set_structural_key(what + "_weight", "proj_" + what + ".weight");
  }
}

nd::NDArray BERTSelfAttention::forward(const nd::NDArray& qkv, const nd::NDArray& valid_len) {
  nd::check_not_none("BERTSelfAttention", qkv);
  if (qkv.ndim() != 3 || qkv.shape()[2] != units_) {
    throw ShapeError("BERTSelfAttention '" + name() + "': input must be (length, batch, " + std::to_string(units_) +
                     "), got " + nd::describe(qkv));
  }
  const std::int64_t T = qkv.shape()[0], B = qkv.shape()[1], d = units_ / heads_;
  const Context ctx = qkv.context();
  // The interleaved ops take per head its query, key and value rows in turn: the weights as
  // (heads, 3·d, C) rows, the biases as (heads, 3, d).
  const auto rows = [&](const char* what) { return parameter(std::string(what) + "_weight").data(ctx).reshape({heads_, d, units_}); };
  const auto bias = [&](const char* what) { return parameter(std::string(what) + "_bias").data(ctx).reshape({heads_, d}); };
  const nd::NDArray in_weight = nd::concat({rows("query"), rows("key"), rows("value")}, 1).reshape({3 * units_, units_});
  const nd::NDArray in_bias = nd::stack({bias("query"), bias("key"), bias("value")}, 1).reshape({3 * units_});
  const nd::NDArray projected = nd::FullyConnected(qkv, in_weight, in_bias, 3 * units_, false, false);
  const nd::NDArray scores = nd::contrib::interleaved_matmul_selfatt_qk(projected, heads_);  // (B·H, T, T)
  nd::NDArray weights;
  if (valid_len.is_none()) {
    weights = nd::softmax(scores, -1);
  } else {
    if (valid_len.shape() != Shape{B, T}) {
      throw ShapeError("BERTSelfAttention '" + name() + "': valid_len " + nd::describe(valid_len) +
                       " does not fit input " + nd::describe(qkv) + "; expected (batch, length) = " +
                       Shape{B, T}.tuple_str());
    }
    // Each batch row's lengths once per head, the heads of a row together (B·H, T).
    weights = nd::softmax(scores, nd::repeat(valid_len, heads_, 0), -1);
  }
  return nd::contrib::interleaved_matmul_selfatt_valatt(projected, dropout_(weights), heads_);
}

BERTPositionwiseFFN::BERTPositionwiseFFN(std::int64_t units, std::int64_t hidden_size, double dropout,
                                         const std::string& activation, double layer_norm_eps)
    : Block("positionwiseffn"),
      ffn_1_(in_name_scope([&] {
        return register_child(nn::Dense(hidden_size, nn::DenseOptions{.activation = activation == "gelu" ? "" : activation,
                                                                      .flatten = false, .in_units = units, .prefix = "ffn_1_"}),
                              "ffn_1");
      })),
      ffn_2_(in_name_scope([&] {
        return register_child(nn::Dense(units, nn::DenseOptions{.flatten = false, .in_units = hidden_size, .prefix = "ffn_2_"}),
                              "ffn_2");
      })),
      activation_(activation),
      dropout_(in_name_scope([&] { return register_child(nn::Dropout(dropout), "dropout_layer"); })),
      layer_norm_(in_name_scope([&] { return register_child(layer_norm(units, layer_norm_eps), "layer_norm"); })) {}

nd::NDArray BERTPositionwiseFFN::forward(const nd::NDArray& x) {
  nd::NDArray h = ffn_1_(x);
  if (activation_ == "gelu") h = nd::LeakyReLU(h, "gelu");
  return layer_norm_(dropout_(ffn_2_(h)) + x);
}

BERTEncoderCell::BERTEncoderCell(std::int64_t units, std::int64_t hidden_size, std::int64_t num_heads, double dropout,
                                 const std::string& activation, double layer_norm_eps)
    : Block("bertencodercell"),
      dropout_(in_name_scope([&] { return register_child(nn::Dropout(dropout), "dropout_layer"); })),
      attention_cell_(in_name_scope(
          [&] { return register_child(BERTSelfAttention(units, num_heads, dropout), "attention_cell"); })),
      proj_(in_name_scope([&] {
        return register_child(nn::Dense(units, nn::DenseOptions{.flatten = false, .in_units = units, .prefix = "proj_"}),
                              "proj");
      })),
      ffn_(in_name_scope([&] {
        return register_child(BERTPositionwiseFFN(units, hidden_size, dropout, activation, layer_norm_eps), "ffn");
      })),
      layer_norm_(in_name_scope([&] { return register_child(layer_norm(units, layer_norm_eps), "layer_norm"); })) {}

nd::NDArray BERTEncoderCell::forward(const nd::NDArray& x, const nd::NDArray& valid_len) {
  return ffn_(layer_norm_(dropout_(proj_(attention_cell_(x, valid_len))) + x));
}

namespace {

const BERTEncoderOptions& checked(const BERTEncoderOptions& o) {
  if (o.num_layers < 1 || o.max_length < 1 || o.hidden_size < 1) {
    throw ValueError("BERTEncoder: num_layers, max_length and hidden_size must be >= 1, got " +
                     std::to_string(o.num_layers) + ", " + std::to_string(o.max_length) + " and " +
                     std::to_string(o.hidden_size));
  }
  if (o.units < 1 || o.num_heads < 1 || o.units % o.num_heads != 0) {
    throw ValueError("BERTEncoder: units (" + std::to_string(o.units) + ") must be a positive multiple of num_heads (" +
                     std::to_string(o.num_heads) + ")");
  }
  return o;
}

}  // namespace

BERTEncoder::BERTEncoder(const BERTEncoderOptions& o)
    : Block("bertencoder"), options_(checked(o)),
      dropout_(in_name_scope([&] { return register_child(nn::Dropout(o.dropout), "dropout_layer"); })),
      layer_norm_(in_name_scope([&] { return register_child(layer_norm(o.units, o.layer_norm_eps), "layer_norm"); })),
      position_weight_(register_parameter("position_weight", Shape{o.max_length, o.units})) {
  nn::Sequential cells = in_name_scope([&] { return register_child(nn::Sequential(), "transformer_cells"); });
  const NameScope scope = cells.name_scope();
  for (std::int64_t i = 0; i < o.num_layers; ++i) {
    cells_.push_back(BERTEncoderCell(o.units, o.hidden_size, o.num_heads, o.dropout, o.activation, o.layer_norm_eps));
    cells.add(cells_.back());
  }
}

nd::NDArray BERTEncoder::forward(const nd::NDArray& inputs, const nd::NDArray& valid_length) {
  nd::check_not_none("BERTEncoder", inputs);
  if (inputs.ndim() != 3 || inputs.shape()[2] != options_.units) {
    throw ShapeError("BERTEncoder '" + name() + "': inputs must be (length, batch, " + std::to_string(options_.units) +
                     "), got " + nd::describe(inputs));
  }
  const std::int64_t T = inputs.shape()[0], B = inputs.shape()[1];
  if (T > options_.max_length) {
    throw ShapeError("BERTEncoder '" + name() + "': a sequence of " + std::to_string(T) +
                     " steps is longer than the positional embedding's " + std::to_string(options_.max_length) +
                     " (max_length)");
  }
  const Context ctx = inputs.context();
  nd::NDArray attn_valid_len;
  if (!valid_length.is_none()) {
    if (valid_length.shape() != Shape{B}) {
      throw ShapeError("BERTEncoder '" + name() + "': valid_length " + nd::describe(valid_length) +
                       " does not fit inputs " + nd::describe(inputs) + "; expected (batch,) = " + Shape{B}.tuple_str());
    }
    // Every query of a sequence sees its valid keys: (B, T).
    attn_valid_len = nd::broadcast_to(valid_length.astype(DType::int32).reshape({B, 1}), {B, T});
  }
  const nd::NDArray steps = nd::arange(0, static_cast<double>(T), 1, ctx, DType::int32);
  const nd::NDArray positions =
      nd::Embedding(steps, position_weight_.data(ctx), options_.max_length, options_.units);  // (T, C)
  nd::NDArray x = layer_norm_(dropout_(inputs + nd::expand_dims(positions, 1)));
  for (BERTEncoderCell& cell : cells_) x = cell(x, attn_valid_len);
  return valid_length.is_none() ? x : nd::SequenceMask(x, valid_length, true, 0, 0);
}

namespace {

// The decoder's output layer: the word embedding's weight (shared) and a bias of its own.
class TiedDense : public Block {
 public:
  TiedDense(std::int64_t units, const Parameter& weight) : Block("dense"), units_(units) {
    share_parameter("weight", weight);
    register_parameter("bias", Shape{units}, init::Zero());
  }
  nd::NDArray forward(const nd::NDArray& x) override {
    return nd::FullyConnected(x, parameter("weight").data(x.context()), parameter("bias").data(x.context()), units_,
                              false, false);
  }

 private:
  std::int64_t units_;
};

nn::Sequential embedding(std::int64_t vocab, std::int64_t units) {
  nn::Sequential embed;
  const Block::NameScope scope = embed.name_scope();
  embed.add(nn::Embedding(vocab, units));
  return embed;
}

}  // namespace

BERTModel::BERTModel(const BERTEncoder& encoder, const BERTModelOptions& o)
    : Block("bertmodel"), options_(o), encoder_(register_child(encoder, "encoder")),
      word_embed_(in_name_scope(
          [&] { return register_child(embedding(o.vocab_size, encoder.options().units), "word_embed"); })),
      pooler_(in_name_scope([&] {
        return nn::Dense(encoder.options().units, nn::DenseOptions{.activation = "tanh", .flatten = false,
                                                                  .in_units = encoder.options().units, .prefix = "pooler_"});
      })),
      classifier_(in_name_scope([&] {
        return nn::Dense(2, nn::DenseOptions{.in_units = encoder.options().units, .prefix = "cls_"});
      })) {
  const std::int64_t units = encoder.options().units;
  if (o.vocab_size < 1 || (o.use_token_type_embed && o.token_type_vocab_size < 1)) {
    throw ValueError("BERTModel: vocab_size and token_type_vocab_size must be >= 1, got " +
                     std::to_string(o.vocab_size) + " and " + std::to_string(o.token_type_vocab_size));
  }
  if (o.use_classifier && !o.use_pooler) throw ValueError("BERTModel: use_classifier needs use_pooler");
  if (o.use_token_type_embed) {
    token_type_embed_ =
        in_name_scope([&] { return register_child(embedding(o.token_type_vocab_size, units), "token_type_embed"); });
  }
  if (o.use_pooler) register_child(pooler_, "pooler");
  if (o.use_classifier) register_child(classifier_, "classifier");
  if (o.use_decoder) {
    decoder_ = in_name_scope([&] { return register_child(nn::Sequential("decoder_"), "decoder"); });
    const NameScope scope = decoder_.name_scope();
    decoder_.add(nn::Dense(units, nn::DenseOptions{.flatten = false, .in_units = units}), nn::GELU(),
                 layer_norm(units, encoder.options().layer_norm_eps),
                 TiedDense(o.vocab_size, word_embed_.at<nn::Embedding>(0).weight()));
  }
}

nd::NDArray BERTModel::encode(const nd::NDArray& inputs, const nd::NDArray& token_types, const nd::NDArray& valid_length) {
  nd::check_not_none("BERTModel", inputs);
  if (inputs.ndim() != 2) throw ShapeError("BERTModel: inputs must be (batch, length) ids, got " + nd::describe(inputs));
  nd::NDArray embedded = word_embed_(inputs);
  if (options_.use_token_type_embed) {
    if (token_types.shape() != inputs.shape()) {
      throw ShapeError("BERTModel: token_types " + nd::describe(token_types) + " must have the shape of inputs " +
                       nd::describe(inputs));
    }
    embedded = embedded + token_type_embed_(token_types);
  }
  return nd::transpose(encoder_(nd::transpose(embedded, {1, 0, 2}), valid_length), {1, 0, 2});
}

BERTOutput BERTModel::forward(const nd::NDArray& inputs, const nd::NDArray& token_types, const nd::NDArray& valid_length,
                              const nd::NDArray& masked_positions) {
  BERTOutput out;
  out.sequence = encode(inputs, token_types, valid_length);
  const std::int64_t B = inputs.shape()[0], T = inputs.shape()[1], units = encoder_.options().units;
  if (options_.use_pooler) {
    out.pooled = pooler_(nd::slice_axis(out.sequence, 1, 0, 1).reshape({B, units}));
    if (options_.use_classifier) out.next_sentence = classifier_(out.pooled);
  }
  if (options_.use_decoder) {
    if (masked_positions.is_none() || masked_positions.ndim() != 2 || masked_positions.shape()[0] != B) {
      throw ShapeError("BERTModel: the masked-LM decoder needs masked_positions (batch, positions) for inputs " +
                       nd::describe(inputs) + ", got " + nd::describe(masked_positions));
    }
    // Row b's positions offset by b·T pick its encodings from the (B·T, units) sequence.
    const std::int64_t M = masked_positions.shape()[1];
    const nd::NDArray rows =
        nd::arange(0, static_cast<double>(B * T), static_cast<double>(T), inputs.context(), DType::int32).reshape({B, 1});
    const nd::NDArray index = (masked_positions.astype(DType::int32) + rows).reshape({B * M});
    const nd::NDArray encoded = nd::take(out.sequence.reshape({B * T, units}), index, 0).reshape({B, M, units});
    out.masked_lm = decoder_(encoded);
  }
  return out;
}

nd::NDArray BERTModel::forward(const nd::NDArray& x) {
  nd::check_not_none("BERTModel", x);
  const nd::NDArray types = options_.use_token_type_embed ? nd::zeros(x.shape(), x.context(), DType::int32) : nd::NDArray();
  return encode(x, types, {});  // the heads are not run: the decoder would need masked positions
}

namespace {

BERTModel pretrained_model(BERTEncoderOptions encoder, const BERTPretrained& o) {
  BERTModel net(BERTEncoder(encoder), o.model);
  if (!o.pretrained.empty()) {
    const bool every_head = o.model.use_pooler && o.model.use_decoder && o.model.use_classifier;
    net.load_parameters(o.pretrained, o.ctx.empty() ? std::vector<Context>{cpu()} : o.ctx, false, !every_head);
  }
  return net;
}

}  // namespace

BERTModel bert_12_768_12(const BERTPretrained& o) {
  return pretrained_model({.num_layers = 12, .units = 768, .hidden_size = 3072, .max_length = 512, .num_heads = 12,
                           .dropout = o.dropout},
                          o);
}

BERTModel bert_24_1024_16(const BERTPretrained& o) {
  return pretrained_model({.num_layers = 24, .units = 1024, .hidden_size = 4096, .max_length = 512, .num_heads = 16,
                           .dropout = o.dropout},
                          o);
}

}  // namespace mx::gluon::nlp
