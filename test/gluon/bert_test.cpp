// BERT as GluonNLP 0.10's: the structural keys and shapes of its .params files (bert_12_768_12
// counted against BERT-base's 109,482,240 parameters), a small model's outputs against a float64
// reference written from GluonNLP's forward, on every context; a file in MXNet's NDArray format
// with GluonNLP's keys, written byte by byte, loaded with and without the tied decoder weight;
// the errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gluon/nlp/bert.hpp>
#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace nlp = mx::gluon::nlp;
using ndg_test::Values;

namespace {

constexpr std::int64_t kUnits = 8, kHeads = 2, kHidden = 12, kVocab = 13, kMaxLength = 8;

nlp::BERTModel small_bert(nlp::BERTModelOptions options = {.vocab_size = kVocab}) {
  return nlp::BERTModel(nlp::BERTEncoder({.num_layers = 2, .units = kUnits, .hidden_size = kHidden,
                                          .max_length = kMaxLength, .num_heads = kHeads}),
                        options);
}

std::map<std::string, mx::gluon::Parameter> by_key(const mx::gluon::Block& net) {
  std::map<std::string, mx::gluon::Parameter> out;
  for (const auto& [key, param] : net.structural_params()) out.emplace(key, param);
  return out;
}

// Every parameter set to uniform values in [-0.5, 0.5) (LayerNorm's gamma around 1), one seed each.
void randomize(nlp::BERTModel& net, mx::Context ctx) {
  net.initialize(mx::init::Uniform(0.1), ctx);
  unsigned seed = 100;
  for (auto& [key, param] : by_key(net)) {
    Values v = ndg_test::uniform_values(static_cast<std::size_t>(param.shape().numel()), seed++);
    for (double& e : v) e = (key.ends_with("gamma") ? 1.0 : 0.0) + (e - 0.5);
    param.set_data(nd::array(v, param.shape(), ctx, mx::DType::float32));
  }
}

// --- the float64 reference: GluonNLP's forward, loop by loop --------------------------------------
using Matrix = std::vector<double>;  // row-major

struct Ref {
  std::map<std::string, Values> p;
  const Values& at(const std::string& key) const { return p.at(key); }
  // rows x (n_in) -> rows x (n_out): x · Wᵀ + b, W (n_out, n_in)
  Matrix dense(const Matrix& x, std::int64_t rows, std::int64_t in, std::int64_t out, const std::string& w,
               const std::string& b) const {
    Matrix y(static_cast<std::size_t>(rows * out));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t o = 0; o < out; ++o) {
        double s = at(b)[static_cast<std::size_t>(o)];
        for (std::int64_t i = 0; i < in; ++i) s += x[static_cast<std::size_t>(r * in + i)] * at(w)[static_cast<std::size_t>(o * in + i)];
        y[static_cast<std::size_t>(r * out + o)] = s;
      }
    }
    return y;
  }
  Matrix layer_norm(Matrix x, std::int64_t rows, std::int64_t n, const std::string& prefix, double eps) const {
    for (std::int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (std::int64_t i = 0; i < n; ++i) mean += x[static_cast<std::size_t>(r * n + i)] / n;
      for (std::int64_t i = 0; i < n; ++i) var += std::pow(x[static_cast<std::size_t>(r * n + i)] - mean, 2) / n;
      for (std::int64_t i = 0; i < n; ++i) {
        double& e = x[static_cast<std::size_t>(r * n + i)];
        e = (e - mean) / std::sqrt(var + eps) * at(prefix + "gamma")[static_cast<std::size_t>(i)] +
            at(prefix + "beta")[static_cast<std::size_t>(i)];
      }
    }
    return x;
  }
};

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

struct RefOutput {
  Values sequence, pooled, next_sentence, masked_lm;
};

RefOutput reference(const Ref& ref, const std::vector<int>& tokens, const std::vector<int>& types,
                    const std::vector<int>& valid, const std::vector<int>& masked, std::int64_t B, std::int64_t T,
                    std::int64_t M) {
  const std::int64_t C = kUnits, d = kUnits / kHeads, R = T * B;
  const double eps = 1e-12;
  // x (T, B, C)
  Matrix x(static_cast<std::size_t>(R * C));
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t c = 0; c < C; ++c) {
        x[static_cast<std::size_t>((t * B + b) * C + c)] =
            ref.at("word_embed.0.weight")[static_cast<std::size_t>(tokens[static_cast<std::size_t>(b * T + t)] * C + c)] +
            ref.at("token_type_embed.0.weight")[static_cast<std::size_t>(types[static_cast<std::size_t>(b * T + t)] * C + c)] +
            ref.at("encoder.position_weight")[static_cast<std::size_t>(t * C + c)];
      }
    }
  }
  x = ref.layer_norm(x, R, C, "encoder.layer_norm.", eps);
  for (int layer = 0; layer < 2; ++layer) {
    const std::string cell = "encoder.transformer_cells." + std::to_string(layer) + ".";
    const std::string att = cell + "attention_cell.proj_";
    const Matrix q = ref.dense(x, R, C, C, att + "query.weight", att + "query.bias");
    const Matrix k = ref.dense(x, R, C, C, att + "key.weight", att + "key.bias");
    const Matrix v = ref.dense(x, R, C, C, att + "value.weight", att + "value.bias");
    Matrix context(static_cast<std::size_t>(R * C), 0.0);
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t L = valid[static_cast<std::size_t>(b)];
      for (std::int64_t h = 0; h < kHeads; ++h) {
        for (std::int64_t i = 0; i < T; ++i) {
          std::vector<double> w(static_cast<std::size_t>(L));
          double top = -1e300, sum = 0;
          for (std::int64_t j = 0; j < L; ++j) {
            double s = 0;
            for (std::int64_t e = 0; e < d; ++e) {
              s += q[static_cast<std::size_t>((i * B + b) * C + h * d + e)] * k[static_cast<std::size_t>((j * B + b) * C + h * d + e)];
            }
            w[static_cast<std::size_t>(j)] = s / std::sqrt(static_cast<double>(d));
            top = std::max(top, w[static_cast<std::size_t>(j)]);
          }
          for (double& e : w) sum += (e = std::exp(e - top));
          for (std::int64_t j = 0; j < L; ++j) {
            for (std::int64_t e = 0; e < d; ++e) {
              context[static_cast<std::size_t>((i * B + b) * C + h * d + e)] +=
                  w[static_cast<std::size_t>(j)] / sum * v[static_cast<std::size_t>((j * B + b) * C + h * d + e)];
            }
          }
        }
      }
    }
    Matrix y = ref.dense(context, R, C, C, cell + "proj.weight", cell + "proj.bias");
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
    y = ref.layer_norm(y, R, C, cell + "layer_norm.", eps);
    Matrix f = ref.dense(y, R, C, kHidden, cell + "ffn.ffn_1.weight", cell + "ffn.ffn_1.bias");
    for (double& e : f) e = gelu(e);
    f = ref.dense(f, R, kHidden, C, cell + "ffn.ffn_2.weight", cell + "ffn.ffn_2.bias");
    for (std::size_t i = 0; i < f.size(); ++i) f[i] += y[i];
    x = ref.layer_norm(f, R, C, cell + "ffn.layer_norm.", eps);
  }
  RefOutput out;
  out.sequence.resize(static_cast<std::size_t>(B * T * C));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t c = 0; c < C; ++c) {
        out.sequence[static_cast<std::size_t>((b * T + t) * C + c)] =
            t < valid[static_cast<std::size_t>(b)] ? x[static_cast<std::size_t>((t * B + b) * C + c)] : 0.0;
      }
    }
  }
  Matrix first(static_cast<std::size_t>(B * C));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t c = 0; c < C; ++c) first[static_cast<std::size_t>(b * C + c)] = out.sequence[static_cast<std::size_t>(b * T * C + c)];
  }
  out.pooled = ref.dense(first, B, C, C, "pooler.weight", "pooler.bias");
  for (double& e : out.pooled) e = std::tanh(e);
  out.next_sentence = ref.dense(out.pooled, B, C, 2, "classifier.weight", "classifier.bias");
  Matrix picked(static_cast<std::size_t>(B * M * C));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t m = 0; m < M; ++m) {
      for (std::int64_t c = 0; c < C; ++c) {
        picked[static_cast<std::size_t>((b * M + m) * C + c)] =
            out.sequence[static_cast<std::size_t>((b * T + masked[static_cast<std::size_t>(b * M + m)]) * C + c)];
      }
    }
  }
  Matrix h = ref.dense(picked, B * M, C, C, "decoder.0.weight", "decoder.0.bias");
  for (double& e : h) e = gelu(e);
  h = ref.layer_norm(h, B * M, C, "decoder.2.", eps);
  out.masked_lm = ref.dense(h, B * M, C, kVocab, "word_embed.0.weight", "decoder.3.bias");
  return out;
}

// GluonNLP's keys of a BERTModel of `layers` cells with every head, as its save_parameters writes
// them (the tied decoder.3.weight included).
std::vector<std::string> gluonnlp_keys(int layers) {
  std::vector<std::string> keys{"encoder.layer_norm.gamma", "encoder.layer_norm.beta", "encoder.position_weight"};
  for (int i = 0; i < layers; ++i) {
    const std::string c = "encoder.transformer_cells." + std::to_string(i) + ".";
    for (const std::string what : {"query", "key", "value"}) {
      keys.push_back(c + "attention_cell.proj_" + what + ".weight");
      keys.push_back(c + "attention_cell.proj_" + what + ".bias");
    }
    for (const std::string k : {"proj.weight", "proj.bias", "ffn.ffn_1.weight", "ffn.ffn_1.bias", "ffn.ffn_2.weight",
                                "ffn.ffn_2.bias", "ffn.layer_norm.gamma", "ffn.layer_norm.beta", "layer_norm.gamma",
                                "layer_norm.beta"}) {
      keys.push_back(c + k);
    }
  }
  for (const std::string k : {"word_embed.0.weight", "token_type_embed.0.weight", "pooler.weight", "pooler.bias",
                              "classifier.weight", "classifier.bias", "decoder.0.weight", "decoder.0.bias",
                              "decoder.2.gamma", "decoder.2.beta", "decoder.3.weight", "decoder.3.bias"}) {
    keys.push_back(k);
  }
  return keys;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bert)

BOOST_AUTO_TEST_CASE(structural_keys_are_gluonnlps) {
  const nlp::BERTModel net = small_bert();
  std::vector<std::string> got;
  for (const auto& [key, param] : net.structural_params()) got.push_back(key);
  std::vector<std::string> want = gluonnlp_keys(2);
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  BOOST_TEST(got == want, boost::test_tools::per_element());
  const auto params = by_key(net);
  BOOST_TEST(params.at("decoder.3.weight").is(params.at("word_embed.0.weight")));  // tied, as GluonNLP's
  BOOST_TEST(net.collect_params().size() == want.size() - 1);                      // the Trainer sees it once
  BOOST_TEST(params.at("encoder.transformer_cells.1.attention_cell.proj_key.weight").shape() == mx::Shape({kUnits, kUnits}));
  BOOST_TEST(params.at("encoder.transformer_cells.0.ffn.ffn_1.weight").shape() == mx::Shape({kHidden, kUnits}));
  BOOST_TEST(params.at("classifier.weight").shape() == mx::Shape({2, kUnits}));
}

BOOST_AUTO_TEST_CASE(bert_12_768_12_has_bert_bases_parameters) {
  // BERT-base with its pooler (the published 109,482,240), then GluonNLP's two pre-training heads.
  const nlp::BERTModel base = nlp::bert_12_768_12({.model = {.use_decoder = false, .use_classifier = false}});
  std::int64_t count = 0;
  for (const auto& [name, param] : base.collect_params()) count += param.shape().numel();
  BOOST_TEST(count == 109482240);
  const nlp::BERTModel full = nlp::bert_12_768_12();
  std::int64_t heads = -count;
  for (const auto& [name, param] : full.collect_params()) heads += param.shape().numel();
  BOOST_TEST(heads == (768 * 2 + 2) + (768 * 768 + 768) + 2 * 768 + 30522);  // classifier, then the decoder
  const auto params = by_key(full);
  BOOST_TEST(params.at("encoder.position_weight").shape() == mx::Shape({512, 768}));
  BOOST_TEST(params.at("encoder.transformer_cells.11.ffn.ffn_2.weight").shape() == mx::Shape({768, 3072}));
  BOOST_TEST(params.count("encoder.transformer_cells.12.proj.weight") == 0u);
}

BOOST_AUTO_TEST_CASE(outputs_match_a_float64_reference) {
  const std::int64_t B = 2, T = 5, M = 2;
  const std::vector<int> tokens{3, 7, 1, 12, 0, 5, 5, 9, 2, 4}, types{0, 0, 0, 1, 1, 0, 0, 1, 1, 1};
  const std::vector<int> valid{5, 3}, masked{1, 4, 0, 2};
  const auto as_array = [](const std::vector<int>& v, const mx::Shape& shape, mx::Context ctx) {
    return nd::array(Values(v.begin(), v.end()), shape, ctx, mx::DType::int32);
  };
  ndg_test::for_each_context([&](mx::Context ctx) {
    nlp::BERTModel net = small_bert();
    randomize(net, ctx);
    Ref ref;
    for (const auto& [key, param] : by_key(net)) ref.p[key] = ndg_test::values(param.data(ctx));
    const RefOutput want = reference(ref, tokens, types, valid, masked, B, T, M);
    const nlp::BERTOutput got = net(as_array(tokens, {B, T}, ctx), as_array(types, {B, T}, ctx),
                                    as_array(valid, {B}, ctx).astype(mx::DType::float32), as_array(masked, {B, M}, ctx));
    BOOST_TEST(got.sequence.shape() == mx::Shape({B, T, kUnits}));
    BOOST_TEST(got.masked_lm.shape() == mx::Shape({B, M, kVocab}));
    ndg_test::check_close(got.sequence, want.sequence, 1e-4, 1e-5);
    ndg_test::check_close(got.pooled, want.pooled, 1e-4, 1e-5);
    ndg_test::check_close(got.next_sentence, want.next_sentence, 1e-4, 1e-5);
    ndg_test::check_close(got.masked_lm, want.masked_lm, 1e-4, 1e-5);
    // Without valid lengths every key is seen: the same as lengths of T.
    const nd::NDArray full = net(as_array(tokens, {B, T}, ctx), as_array(types, {B, T}, ctx), {},
                                 as_array(masked, {B, M}, ctx)).sequence;
    const RefOutput all = reference(ref, tokens, types, {5, 5}, masked, B, T, M);
    ndg_test::check_close(full, all.sequence, 1e-4, 1e-5);
    // One input: the sequence's encoding with token type 0, no head run (none needs masked positions).
    const std::vector<int> no_types(types.size(), 0);
    ndg_test::check_close(net(as_array(tokens, {B, T}, ctx)), reference(ref, tokens, no_types, {5, 5}, masked, B, T, M).sequence,
                          1e-4, 1e-5);
  });
}

BOOST_AUTO_TEST_CASE(gluonnlp_params_file_loads) {
  // Values 0.001·(k + 1) + key index for parameter k, in GluonNLP's keys and the small model's shapes.
  const nlp::BERTModel shapes = small_bert();
  const auto params = by_key(shapes);
  std::vector<ndg_test::MXNetRecord> records;
  std::map<std::string, float> first;
  const std::vector<std::string> keys = gluonnlp_keys(2);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const mx::Shape shape = params.at(keys[k]).shape();
    const std::string& source = keys[k] == "decoder.3.weight" ? "word_embed.0.weight" : keys[k];
    const auto index = static_cast<float>(std::find(keys.begin(), keys.end(), source) - keys.begin());
    std::vector<float> v(static_cast<std::size_t>(shape.numel()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = index + 0.001f * static_cast<float>(i + 1);
    records.push_back({keys[k], std::vector<std::int64_t>(shape.begin(), shape.end()), v});
    first[keys[k]] = v.front();
  }
  const ndg_test::TempDir dir;
  ndg_test::write_bytes(dir.file("bert.params"), ndg_test::mxnet_ndarray_file(records));
  std::vector<ndg_test::MXNetRecord> untied;  // as a file saved with deduplicate=True would be
  for (const auto& r : records) {
    if (r.name != "decoder.3.weight") untied.push_back(r);
  }
  ndg_test::write_bytes(dir.file("untied.params"), ndg_test::mxnet_ndarray_file(untied));
  std::vector<ndg_test::MXNetRecord> no_pooler;
  for (const auto& r : records) {
    if (r.name != "pooler.bias") no_pooler.push_back(r);
  }
  ndg_test::write_bytes(dir.file("short.params"), ndg_test::mxnet_ndarray_file(no_pooler));
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const std::string file : {"bert.params", "untied.params"}) {
      nlp::BERTModel net = small_bert();
      net.load_parameters(dir.file(file), ctx);
      for (const auto& [key, param] : by_key(net)) {
        BOOST_TEST(param.data(ctx).asvector<float>().front() == first.at(key), file << ": " << key);
      }
    }
    // A model without the heads skips their entries; one that needs a missing entry names it.
    nlp::BERTModel encoder_only = small_bert({.vocab_size = kVocab, .use_pooler = false, .use_decoder = false,
                                              .use_classifier = false});
    encoder_only.load_parameters(dir.file("bert.params"), ctx, false, true);
    BOOST_TEST(by_key(encoder_only).at("encoder.position_weight").data(ctx).asvector<float>().front() ==
               first.at("encoder.position_weight"));
    nlp::BERTModel net = small_bert();
    NDG_CHECK_THROWS_WITH(net.load_parameters(dir.file("short.params"), ctx), mx::Error, "pooler.bias");
  });
}

BOOST_AUTO_TEST_CASE(bad_sizes_are_typed_errors) {
  NDG_CHECK_THROWS_WITH(nlp::BERTEncoder({.units = 10, .num_heads = 4}), mx::ValueError, "units (10)");
  ndg_test::for_each_context([](mx::Context ctx) {
    nlp::BERTModel net = small_bert();
    net.initialize(mx::init::Uniform(0.1), ctx);
    const nd::NDArray long_tokens = nd::zeros({1, kMaxLength + 1}, ctx, mx::DType::int32);
    const nd::NDArray masked = nd::zeros({1, 1}, ctx, mx::DType::int32);
    NDG_CHECK_THROWS_WITH(net(long_tokens, long_tokens, {}, masked), mx::ShapeError, "9 steps");
    NDG_CHECK_THROWS_WITH(net(long_tokens, long_tokens, {}, masked), mx::ShapeError, "8 (max_length)");
    const nd::NDArray tokens = nd::zeros({2, 4}, ctx, mx::DType::int32);
    NDG_CHECK_THROWS_WITH(net(tokens, tokens, nd::ones({3}, ctx), nd::zeros({2, 1}, ctx)), mx::ShapeError, "valid_length");
    NDG_CHECK_THROWS_WITH(net(tokens, nd::zeros({2, 3}, ctx)), mx::ShapeError, "token_types");
    NDG_CHECK_THROWS_WITH(net(tokens, tokens), mx::ShapeError, "masked_positions");
  });
}

BOOST_AUTO_TEST_SUITE_END()
