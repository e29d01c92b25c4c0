// The attention blocks and the Transformer (gluon/nn/attention.hpp, gluon/nn/transformer.hpp):
// the masked softmax by hand, D2L's attention examples (equal keys: each query averages the valid
// values), dot-product and multi-head attention against a float64 reference from the blocks' own
// weights, the positional encoding's table against its formula, gradients against finite
// differences, the decoder's causal mask (a step never sees later steps) and its step-by-step
// prediction equal to one causal pass, and the typed errors. Every case runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <vector>

#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace nn = mx::gluon::nn;
namespace ag = mx::autograd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::random_array;
using ndg_test::Values;

namespace {

nd::NDArray from(const Values& v, const mx::Shape& shape, mx::Context ctx, DType dtype = DType::float32) {
  return ndg_test::array_of(v, shape, ctx, dtype);
}

// Row-major (rows, cols) matrices in double.
struct Mat {
  std::int64_t rows, cols;
  Values v;
  double at(std::int64_t r, std::int64_t c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};

// softmax(q kᵀ / sqrt(d)) v over the first `valid` keys of each query: q (Tq, d), k (Tk, d), v (Tk, dv).
Mat attend(const Mat& q, const Mat& k, const Mat& v, std::int64_t valid) {
  Mat out{q.rows, v.cols, Values(static_cast<std::size_t>(q.rows * v.cols), 0.0)};
  for (std::int64_t i = 0; i < q.rows; ++i) {
    Values w(static_cast<std::size_t>(k.rows), 0.0);
    double max = -1e300, sum = 0;
    for (std::int64_t j = 0; j < valid; ++j) {
      double s = 0;
      for (std::int64_t c = 0; c < q.cols; ++c) s += q.at(i, c) * k.at(j, c);
      w[static_cast<std::size_t>(j)] = s / std::sqrt(static_cast<double>(q.cols));
      max = std::max(max, w[static_cast<std::size_t>(j)]);
    }
    for (std::int64_t j = 0; j < valid; ++j) sum += (w[static_cast<std::size_t>(j)] = std::exp(w[static_cast<std::size_t>(j)] - max));
    for (std::int64_t j = 0; j < valid; ++j) {
      for (std::int64_t c = 0; c < v.cols; ++c) {
        out.v[static_cast<std::size_t>(i * v.cols + c)] += w[static_cast<std::size_t>(j)] / sum * v.at(j, c);
      }
    }
  }
  return out;
}

// x (T, in) times Wᵀ for W (out, in).
Mat project(const Mat& x, const Mat& W) {
  Mat out{x.rows, W.rows, Values(static_cast<std::size_t>(x.rows * W.rows), 0.0)};
  for (std::int64_t t = 0; t < x.rows; ++t)
    for (std::int64_t o = 0; o < W.rows; ++o)
      for (std::int64_t c = 0; c < x.cols; ++c) out.v[static_cast<std::size_t>(t * W.rows + o)] += x.at(t, c) * W.at(o, c);
  return out;
}

Mat columns(const Mat& x, std::int64_t first, std::int64_t count) {
  Mat out{x.rows, count, {}};
  for (std::int64_t r = 0; r < x.rows; ++r)
    for (std::int64_t c = first; c < first + count; ++c) out.v.push_back(x.at(r, c));
  return out;
}

Mat batch_row(const Values& all, std::int64_t b, std::int64_t T, std::int64_t d) {
  return {T, d, Values(all.begin() + b * T * d, all.begin() + (b + 1) * T * d)};
}

Mat weight(nn::Dense& dense, mx::Context ctx) {
  const nd::NDArray w = dense.weight().data(ctx);
  return {w.shape()[0], w.shape()[1], ndg_test::values(w)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(attention)

BOOST_AUTO_TEST_CASE(masked_softmax_zeroes_the_positions_past_each_length) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray X = nd::zeros({2, 2, 4}, ctx);
    // (B,): every query of batch row b sees its first valid_lens[b] keys, equally.
    check_close(nn::masked_softmax(X, nd::array({2, 3}, ctx)),
                {0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0, 1. / 3, 1. / 3, 1. / 3, 0, 1. / 3, 1. / 3, 1. / 3, 0});
    // (B, Tq): a length per query.
    check_close(nn::masked_softmax(X, nd::array({{1, 3}, {2, 4}}, ctx)),
                {1, 0, 0, 0, 1. / 3, 1. / 3, 1. / 3, 0, 0.5, 0.5, 0, 0, 0.25, 0.25, 0.25, 0.25});
    check_close(nn::masked_softmax(nd::array(std::vector<double>{0, std::log(3.0)}, {1, 1, 2}, ctx, DType::float32)),
                {0.25, 0.75});
    NDG_CHECK_THROWS_WITH(nn::masked_softmax(X, nd::array({1, 2, 3}, ctx)), mx::ShapeError, "valid_lens", "(3,)",
                          "(2, 2, 4)");
  });
}

BOOST_AUTO_TEST_CASE(with_equal_keys_each_query_averages_its_valid_values) {
  // D2L 10.3's example: keys all ones score every key alike, so query b averages the first
  // valid_lens[b] rows of the values, [4j, 4j + 1, 4j + 2, 4j + 3] for row j.
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray queries = random_array({2, 1, 20}, ctx, 1), keys = nd::ones({2, 10, 2}, ctx);
    const nd::NDArray values = nd::repeat(nd::arange(40, ctx).reshape({1, 10, 4}), 2, 0);
    const nd::NDArray valid_lens = nd::array({2, 6}, ctx);
    nn::AdditiveAttention additive(8, 0.1);
    additive.initialize(mx::init::Xavier(), ctx);
    const Values want{2, 3, 4, 5, 10, 11, 12, 13};
    check_close(additive(queries, keys, values, valid_lens), want, 1e-5, 1e-5);
    BOOST_TEST(additive.attention_weights().shape() == (mx::Shape{2, 1, 10}));
    nn::DotProductAttention dot(0.5);  // dropout: not in prediction
    check_close(dot(random_array({2, 1, 2}, ctx, 2), keys, values, valid_lens), want, 1e-5, 1e-5);
  });
}

BOOST_AUTO_TEST_CASE(multi_head_attention_matches_a_float64_reference_of_its_weights) {
  const std::int64_t B = 2, Tq = 3, Tk = 5, h = 8, heads = 2;
  ndg_test::for_each_context([&](mx::Context ctx) {
    nn::MultiHeadAttention attention(h, heads, 0.0, /*use_bias=*/false);
    attention.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray q = random_array({B, Tq, 6}, ctx, 3), k = random_array({B, Tk, 7}, ctx, 4),
                      v = random_array({B, Tk, 7}, ctx, 5);
    const nd::NDArray valid_lens = nd::array({3, 5}, ctx);
    const nd::NDArray y = attention(q, k, v, valid_lens);
    BOOST_TEST(y.shape() == (mx::Shape{B, Tq, h}));
    // The blocks' weights, children in D2L's order: attention, W_q, W_k, W_v, W_o.
    const auto dense = [&](std::size_t i) { return weight(dynamic_cast<nn::Dense&>(attention.child(i)), ctx); };
    const Mat Wq = dense(1), Wk = dense(2), Wv = dense(3), Wo = dense(4);
    Values want;
    const Values qv = ndg_test::values(q), kv = ndg_test::values(k), vv = ndg_test::values(v);
    for (std::int64_t b = 0; b < B; ++b) {
      const Mat Q = project(batch_row(qv, b, Tq, 6), Wq), K = project(batch_row(kv, b, Tk, 7), Wk),
                V = project(batch_row(vv, b, Tk, 7), Wv);
      Mat concat{Tq, h, Values(static_cast<std::size_t>(Tq * h))};
      for (std::int64_t head = 0; head < heads; ++head) {
        const std::int64_t d = h / heads;
        const Mat out = attend(columns(Q, head * d, d), columns(K, head * d, d), columns(V, head * d, d), b == 0 ? 3 : 5);
        for (std::int64_t t = 0; t < Tq; ++t)
          for (std::int64_t c = 0; c < d; ++c) concat.v[static_cast<std::size_t>(t * h + head * d + c)] = out.at(t, c);
      }
      const Mat Y = project(concat, Wo);
      want.insert(want.end(), Y.v.begin(), Y.v.end());
    }
    check_close(y, want, 1e-5, 1e-6);
    BOOST_TEST(attention.attention_weights().shape() == (mx::Shape{B * heads, Tq, Tk}));
  });
}

BOOST_AUTO_TEST_CASE(multi_head_attention_gradients_match_finite_differences) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::MultiHeadAttention attention(4, 2, 0.0, /*use_bias=*/true);
    attention.initialize(mx::init::Xavier(), ctx);
    attention(nd::zeros({1, 2, 3}, ctx), nd::zeros({1, 3, 3}, ctx), nd::zeros({1, 3, 3}, ctx));
    attention.cast(DType::float64);
    const Values q0 = ndg_test::uniform_values(6, 6), kv0 = ndg_test::uniform_values(9, 7), r = ndg_test::uniform_values(8, 8);
    const nd::NDArray lens = nd::array({2}, ctx, DType::float64);
    const auto loss = [&](const Values& qv) {
      const nd::NDArray k = from(kv0, {1, 3, 3}, ctx, DType::float64);
      return (attention(from(qv, {1, 2, 3}, ctx, DType::float64), k, k, lens) * from(r, {1, 2, 4}, ctx, DType::float64))
          .sum()
          .asscalar<double>();
    };
    const Values numeric = ndg_test::numeric_gradient(loss, q0);
    nd::NDArray q = from(q0, {1, 2, 3}, ctx, DType::float64);
    q.attach_grad();
    {
      auto recording = ag::record();
      const nd::NDArray k = from(kv0, {1, 3, 3}, ctx, DType::float64);
      (attention(q, k, k, lens) * from(r, {1, 2, 4}, ctx, DType::float64)).sum().backward();
    }
    check_close(q.grad(), numeric, 1e-6, 1e-8);
  });
}

BOOST_AUTO_TEST_CASE(positional_encoding_follows_its_formula) {
  nn::PositionalEncoding encoding(6, 0.0, 50);
  const Values P = ndg_test::values(encoding.table());
  for (int t : {0, 1, 7, 49}) {
    for (int j = 0; j < 6; j += 2) {
      const double angle = t / std::pow(10000.0, j / 6.0);
      BOOST_TEST(P[static_cast<std::size_t>(t * 6 + j)] == std::sin(angle), boost::test_tools::tolerance(1e-5));
      BOOST_TEST(P[static_cast<std::size_t>(t * 6 + j + 1)] == std::cos(angle), boost::test_tools::tolerance(1e-5));
    }
  }
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray X = random_array({2, 4, 6}, ctx, 9);
    const Values x = ndg_test::values(X);
    Values want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] + P[i % 24];
    check_close(encoding(X), want, 1e-6, 1e-6);
    NDG_CHECK_THROWS_WITH(encoding(nd::zeros({1, 51, 6}, ctx)), mx::ShapeError, "PositionalEncoding", "(1, 51, 6)",
                          "max_len 50");
    // From an offset: the rows of P that far on.
    const Values shifted = ndg_test::values(encoding(nd::zeros({1, 2, 6}, ctx), 7));
    check_close(nd::array(shifted, {12}), Values(P.begin() + 42, P.begin() + 54), 1e-6, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(the_encoder_keeps_its_shape_and_ignores_padding) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::TransformerEncoder encoder(200, 24, 48, 8, 2, 0.0);
    encoder.initialize(mx::init::Xavier(), ctx);
    const std::int64_t T = 100, lens[2] = {3, 2};
    std::vector<float> tokens(2 * T), padded(2 * T);
    for (std::int64_t b = 0; b < 2; ++b) {
      for (std::int64_t t = 0; t < T; ++t) {
        const auto i = static_cast<std::size_t>(b * T + t);
        tokens[i] = static_cast<float>((t * (b + 2) + 1) % 200);
        padded[i] = t < lens[b] ? tokens[i] : 5.0f;  // the same sentence, other padding
      }
    }
    const nd::NDArray valid_lens = nd::array({3, 2}, ctx);
    const nd::NDArray H = encoder(nd::array(tokens, {2, T}, ctx), valid_lens);
    BOOST_TEST(H.shape() == (mx::Shape{2, T, 24}));
    BOOST_TEST(encoder.attention_weights().size() == 2u);
    // What lies past a row's length never reaches its valid positions.
    const Values a = ndg_test::values(H), b = ndg_test::values(encoder(nd::array(padded, {2, T}, ctx), valid_lens));
    for (std::int64_t row = 0; row < 2; ++row) {
      for (std::int64_t t = 0; t < lens[row]; ++t) {
        for (std::int64_t c = 0; c < 24; ++c) {
          const auto i = static_cast<std::size_t>((row * T + t) * 24 + c);
          BOOST_TEST(a[i] == b[i], boost::test_tools::tolerance(1e-5));
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(the_decoder_is_causal_and_predicts_step_by_step_as_one_pass) {
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::TransformerEncoder encoder(20, 16, 32, 4, 2, 0.0);
    nn::TransformerDecoder decoder(20, 16, 32, 4, 2, 0.0);
    encoder.initialize(mx::init::Xavier(), ctx);
    decoder.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray src = nd::array({{1, 4, 5, 9, 0}, {3, 3, 2, 0, 0}}, ctx), src_lens = nd::array({4, 3}, ctx);
    const nd::NDArray memory = encoder(src, src_lens);
    const nd::NDArray tgt = nd::array({{2, 6, 7, 8}, {2, 5, 1, 1}}, ctx);
    // One causal pass over the whole target, as in training (dropout 0: the values are those of prediction).
    nd::NDArray full;
    {
      auto training = ag::train_mode();
      full = decoder(tgt, decoder.init_state(memory, src_lens)).first;
    }
    BOOST_TEST(full.shape() == (mx::Shape{2, 4, 20}));
    // The last step changed: the earlier steps' scores stay.
    nd::NDArray later;
    {
      auto training = ag::train_mode();
      later = decoder(nd::array({{2, 6, 7, 3}, {2, 5, 1, 9}}, ctx), decoder.init_state(memory, src_lens)).first;
    }
    const Values f = ndg_test::values(full), l = ndg_test::values(later);
    for (std::size_t i = 0; i < f.size(); ++i) {
      const std::size_t step = i / 20 % 4;
      if (step < 3) BOOST_TEST(f[i] == l[i], boost::test_tools::tolerance(1e-5));
    }
    // Prediction, one step at a time, each block keeping the steps it has seen.
    nn::TransformerDecoderState state = decoder.init_state(memory, src_lens);
    Values stepwise(f.size());
    for (std::int64_t t = 0; t < 4; ++t) {
      auto [scores, next] = decoder(nd::slice_axis(tgt, 1, t, t + 1), std::move(state));
      state = std::move(next);
      const Values s = ndg_test::values(scores);  // (2, 1, 20)
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t c = 0; c < 20; ++c) stepwise[(b * 4 + static_cast<std::size_t>(t)) * 20 + c] = s[b * 20 + c];
    }
    check_close(nd::array(stepwise, {2, 4, 20}), f, 1e-4, 1e-5);
    BOOST_TEST(state.key_values[0].shape() == (mx::Shape{2, 4, 16}));
  });
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_typed_errors) {
  NDG_CHECK_THROWS_WITH(nn::MultiHeadAttention(10, 3, 0.1), mx::ValueError, "num_hiddens 10", "num_heads 3");
  NDG_CHECK_THROWS_WITH(nn::PositionalEncoding(5, 0.1), mx::ValueError, "even");
  NDG_CHECK_THROWS_WITH(nn::TransformerEncoder(10, 8, 16, 2, 0, 0.1), mx::ValueError, "num_layers");
  ndg_test::for_each_context([](mx::Context ctx) {
    nn::DotProductAttention dot(0.0);
    NDG_CHECK_THROWS_WITH(dot(nd::ones({2, 3, 4}, ctx), nd::ones({2, 5, 3}, ctx), nd::ones({2, 5, 3}, ctx)),
                          mx::ShapeError, "DotProductAttention", "one feature size");
    NDG_CHECK_THROWS_WITH(dot(nd::ones({2, 3, 4}, ctx), nd::ones({2, 5, 4}, ctx), nd::ones({2, 4, 3}, ctx)),
                          mx::ShapeError, "(B, Tk, dv)");
    nn::TransformerDecoder decoder(10, 8, 16, 2, 1, 0.0);
    decoder.initialize(mx::init::Xavier(), ctx);
    NDG_CHECK_THROWS_WITH(decoder(nd::ones({1, 2}, ctx)), mx::ValueError, "TransformerDecoder", "init_state");
  });
}

BOOST_AUTO_TEST_SUITE_END()
