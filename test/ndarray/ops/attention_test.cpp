// MXNet's interleaved attention products (nd::contrib::interleaved_matmul_*): each against a
// float64 loop written from MXNet's definition of the interleaved layout (per head, q, k and v
// side by side on the last axis), the gradients of every input against finite differences, the
// self-attention pair against the encoder-decoder pair on the same projections, and the typed
// errors. Every case runs on every context.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <optional>
#include <vector>

#include <ndarray/ndarray.hpp>

namespace nd = mx::nd;
namespace ag = mx::autograd;
using mx::DType;
using ndg_test::check_close;
using ndg_test::Values;

namespace {

constexpr std::int64_t B = 2, H = 2, d = 3, Tq = 4, Tk = 5;

// Element c of head h's slot `slot` of an interleaved (T, B, H·slots·d) array at (t, b).
double slot(const Values& x, std::int64_t slots, std::int64_t t, std::int64_t b, std::int64_t h, std::int64_t s,
            std::int64_t c) {
  return x[static_cast<std::size_t>(((t * B + b) * H + h) * slots * d + s * d + c)];
}

// scores (B·H, Tq, Tk) = q · kᵀ / sqrt(d): q from slot qs of `qx` (qslots wide), k from slot ks of `kx`.
Values qk(const Values& qx, std::int64_t qslots, std::int64_t qs, std::int64_t tq, const Values& kx,
          std::int64_t kslots, std::int64_t ks, std::int64_t tk) {
  Values out;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < tq; ++i)
        for (std::int64_t j = 0; j < tk; ++j) {
          double sum = 0;
          for (std::int64_t c = 0; c < d; ++c) sum += slot(qx, qslots, i, b, h, qs, c) * slot(kx, kslots, j, b, h, ks, c);
          out.push_back(sum / std::sqrt(static_cast<double>(d)));
        }
  return out;
}

// out (tq, B, H·d) = attention · v: v from slot vs of `vx` (vslots wide, tk steps).
Values valatt(const Values& vx, std::int64_t vslots, std::int64_t vs, std::int64_t tk, const Values& att,
              std::int64_t tq) {
  Values out(static_cast<std::size_t>(tq * B * H * d), 0.0);
  for (std::int64_t t = 0; t < tq; ++t)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t c = 0; c < d; ++c) {
          double sum = 0;
          for (std::int64_t j = 0; j < tk; ++j) {
            sum += att[static_cast<std::size_t>(((b * H + h) * tq + t) * tk + j)] * slot(vx, vslots, j, b, h, vs, c);
          }
          out[static_cast<std::size_t>(((t * B + b) * H + h) * d + c)] = sum;
        }
  return out;
}

double dot(const Values& a, const Values& r) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * r[i];
  return s;
}

nd::NDArray f64(const Values& v, const mx::Shape& shape, mx::Context ctx) {
  return ndg_test::array_of(v, shape, ctx, DType::float64);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(interleaved_attention)

BOOST_AUTO_TEST_CASE(each_product_matches_a_float64_loop_of_the_layout) {
  const Values qkv = ndg_test::uniform_values(Tq * B * H * 3 * d, 71), q = ndg_test::uniform_values(Tq * B * H * d, 72),
               kv = ndg_test::uniform_values(Tk * B * H * 2 * d, 73);
  const Values self_att = ndg_test::uniform_values(B * H * Tq * Tq, 74), cross_att = ndg_test::uniform_values(B * H * Tq * Tk, 75);
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (DType dt : ndg_test::kFloatDTypes) {
      BOOST_TEST_CONTEXT(dt) {
        const double tol = dt == DType::float64 ? 1e-12 : 1e-5;
        const nd::NDArray x = ndg_test::array_of(qkv, {Tq, B, H * 3 * d}, ctx, dt);
        const nd::NDArray scores = nd::contrib::interleaved_matmul_selfatt_qk(x, H);
        BOOST_TEST(scores.shape() == (mx::Shape{B * H, Tq, Tq}));
        check_close(scores, qk(qkv, 3, 0, Tq, qkv, 3, 1, Tq), tol, tol);
        const nd::NDArray out =
            nd::contrib::interleaved_matmul_selfatt_valatt(x, ndg_test::array_of(self_att, {B * H, Tq, Tq}, ctx, dt), H);
        BOOST_TEST(out.shape() == (mx::Shape{Tq, B, H * d}));
        check_close(out, valatt(qkv, 3, 2, Tq, self_att, Tq), tol, tol);
        const nd::NDArray qa = ndg_test::array_of(q, {Tq, B, H * d}, ctx, dt), kva = ndg_test::array_of(kv, {Tk, B, H * 2 * d}, ctx, dt);
        check_close(nd::contrib::interleaved_matmul_encdec_qk(qa, kva, H), qk(q, 1, 0, Tq, kv, 2, 0, Tk), tol, tol);
        check_close(nd::contrib::interleaved_matmul_encdec_valatt(kva, ndg_test::array_of(cross_att, {B * H, Tq, Tk}, ctx, dt), H),
                    valatt(kv, 2, 1, Tk, cross_att, Tq), tol, tol);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(gradients_of_every_input_match_finite_differences) {
  const Values qkv0 = ndg_test::uniform_values(Tq * B * H * 3 * d, 81), q0 = ndg_test::uniform_values(Tq * B * H * d, 82),
               kv0 = ndg_test::uniform_values(Tk * B * H * 2 * d, 83);
  const Values sa0 = ndg_test::uniform_values(B * H * Tq * Tq, 84), ca0 = ndg_test::uniform_values(B * H * Tq * Tk, 85);
  const Values r_self = ndg_test::uniform_values(B * H * Tq * Tq, 86), r_cross = ndg_test::uniform_values(B * H * Tq * Tk, 87),
               r_out = ndg_test::uniform_values(Tq * B * H * d, 88);
  // The losses Σ output · r, in double, of each op's inputs.
  const Values g_selfqk = ndg_test::numeric_gradient(
      [&](const Values& x) { return dot(qk(x, 3, 0, Tq, x, 3, 1, Tq), r_self); }, qkv0);
  const Values g_selfval_x = ndg_test::numeric_gradient(
      [&](const Values& x) { return dot(valatt(x, 3, 2, Tq, sa0, Tq), r_out); }, qkv0);
  const Values g_selfval_a = ndg_test::numeric_gradient(
      [&](const Values& a) { return dot(valatt(qkv0, 3, 2, Tq, a, Tq), r_out); }, sa0);
  const Values g_encqk_q = ndg_test::numeric_gradient(
      [&](const Values& x) { return dot(qk(x, 1, 0, Tq, kv0, 2, 0, Tk), r_cross); }, q0);
  const Values g_encqk_kv = ndg_test::numeric_gradient(
      [&](const Values& x) { return dot(qk(q0, 1, 0, Tq, x, 2, 0, Tk), r_cross); }, kv0);
  const Values g_encval_kv = ndg_test::numeric_gradient(
      [&](const Values& x) { return dot(valatt(x, 2, 1, Tk, ca0, Tq), r_out); }, kv0);
  const Values g_encval_a = ndg_test::numeric_gradient(
      [&](const Values& a) { return dot(valatt(kv0, 2, 1, Tk, a, Tq), r_out); }, ca0);
  ndg_test::for_each_context([&](mx::Context ctx) {
    nd::NDArray qkv = f64(qkv0, {Tq, B, H * 3 * d}, ctx), q = f64(q0, {Tq, B, H * d}, ctx),
                kv = f64(kv0, {Tk, B, H * 2 * d}, ctx), sa = f64(sa0, {B * H, Tq, Tq}, ctx),
                ca = f64(ca0, {B * H, Tq, Tk}, ctx);
    for (nd::NDArray* a : {&qkv, &q, &kv, &sa, &ca}) a->attach_grad();
    const auto backward = [&](const nd::NDArray& y, const Values& r) { (y * f64(r, y.shape(), ctx)).sum().backward(); };
    {
      auto recording = ag::record();
      backward(nd::contrib::interleaved_matmul_selfatt_qk(qkv, H), r_self);
    }
    check_close(qkv.grad(), g_selfqk, 1e-6, 1e-8);
    {
      auto recording = ag::record();
      backward(nd::contrib::interleaved_matmul_selfatt_valatt(qkv, sa, H), r_out);
    }
    check_close(qkv.grad(), g_selfval_x, 1e-6, 1e-8);
    check_close(sa.grad(), g_selfval_a, 1e-6, 1e-8);
    {
      auto recording = ag::record();
      backward(nd::contrib::interleaved_matmul_encdec_qk(q, kv, H), r_cross);
    }
    check_close(q.grad(), g_encqk_q, 1e-6, 1e-8);
    check_close(kv.grad(), g_encqk_kv, 1e-6, 1e-8);
    {
      auto recording = ag::record();
      backward(nd::contrib::interleaved_matmul_encdec_valatt(kv, ca, H), r_out);
    }
    check_close(kv.grad(), g_encval_kv, 1e-6, 1e-8);
    check_close(ca.grad(), g_encval_a, 1e-6, 1e-8);
  });
}

BOOST_AUTO_TEST_CASE(self_attention_is_encoder_decoder_attention_on_the_same_projections) {
  // q taken apart from [q, k, v] and [k, v] kept together: the two pairs of ops agree.
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray qkv = ndg_test::random_array({Tq, B, H * 3 * d}, ctx, 91);
    const nd::NDArray heads = qkv.reshape({Tq, B, H, 3 * d});
    const nd::NDArray q = nd::slice_axis(heads, 3, 0, d).reshape({Tq, B, H * d});
    const nd::NDArray kv = nd::slice_axis(heads, 3, d, 3 * d).reshape({Tq, B, H * 2 * d});
    const nd::NDArray att = nd::softmax(nd::contrib::interleaved_matmul_selfatt_qk(qkv, H), -1);
    check_close(nd::contrib::interleaved_matmul_encdec_qk(q, kv, H),
                ndg_test::values(nd::contrib::interleaved_matmul_selfatt_qk(qkv, H)), 1e-6, 1e-6);
    check_close(nd::contrib::interleaved_matmul_encdec_valatt(kv, att, H),
                ndg_test::values(nd::contrib::interleaved_matmul_selfatt_valatt(qkv, att, H)), 1e-6, 1e-6);
  });
}

BOOST_AUTO_TEST_CASE(shapes_that_do_not_fit_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray qkv = nd::ones({4, 2, 18}, ctx);
    NDG_CHECK_THROWS_WITH(nd::contrib::interleaved_matmul_selfatt_qk(qkv, 4), mx::ShapeError,
                          "_contrib_interleaved_matmul_selfatt_qk", "(4, 2, 18)", "heads=4");
    NDG_CHECK_THROWS_WITH(nd::contrib::interleaved_matmul_selfatt_qk(qkv, 0), mx::ValueError, "heads must be >= 1");
    NDG_CHECK_THROWS_WITH(nd::contrib::interleaved_matmul_selfatt_valatt(qkv, nd::ones({6, 4, 3}, ctx), 3),
                          mx::ShapeError, "attention", "(6, 4, 3)", "expected (6, 4, 4)");
    NDG_CHECK_THROWS_WITH(nd::contrib::interleaved_matmul_encdec_qk(nd::ones({4, 3, 6}, ctx), nd::ones({5, 2, 12}, ctx), 2),
                          mx::ShapeError, "queries", "keys_values");
    NDG_CHECK_THROWS_WITH(nd::contrib::interleaved_matmul_encdec_valatt(nd::ones({5, 2, 12}, ctx), nd::ones({4, 3, 4}, ctx), 2),
                          mx::ShapeError, "attention", "(4, 3, 4)", "expected (4, Tq, 5)");
    NDG_CHECK_THROWS_WITH(nd::contrib::interleaved_matmul_selfatt_qk(nd::ones({4, 2, 6}, ctx, DType::int32), 1),
                          mx::DTypeError, "selfatt_qk");
  });
}

// scaled_dot_product_attention against a float64 loop: q (B, H, Tq, d), k, v (B, H, Tk, d), with
// key padding, causal masking, both, and a custom scale; its gradients against finite differences.
namespace {

Values sdpa_reference(const Values& q, const Values& k, const Values& v, std::int64_t b_, std::int64_t h_,
                      std::int64_t tq, std::int64_t tk, std::int64_t dd, const std::vector<int>& valid, bool causal,
                      double scale) {
  Values out(static_cast<std::size_t>(b_ * h_ * tq * dd), 0.0);
  for (std::int64_t b = 0; b < b_; ++b) {
    for (std::int64_t h = 0; h < h_; ++h) {
      const std::int64_t bh = b * h_ + h;
      for (std::int64_t i = 0; i < tq; ++i) {
        std::int64_t keys = valid.empty() ? tk : valid[static_cast<std::size_t>(b)];
        if (causal) keys = std::min(keys, i + 1);
        std::vector<double> w(static_cast<std::size_t>(std::max<std::int64_t>(keys, 0)));
        double top = -1e300, sum = 0;
        for (std::int64_t j = 0; j < keys; ++j) {
          double s = 0;
          for (std::int64_t e = 0; e < dd; ++e) {
            s += q[static_cast<std::size_t>((bh * tq + i) * dd + e)] * k[static_cast<std::size_t>((bh * tk + j) * dd + e)];
          }
          w[static_cast<std::size_t>(j)] = s * scale;
          top = std::max(top, s * scale);
        }
        for (double& e : w) sum += (e = std::exp(e - top));
        for (std::int64_t j = 0; j < keys; ++j) {
          for (std::int64_t e = 0; e < dd; ++e) {
            out[static_cast<std::size_t>((bh * tq + i) * dd + e)] +=
                w[static_cast<std::size_t>(j)] / sum * v[static_cast<std::size_t>((bh * tk + j) * dd + e)];
          }
        }
      }
    }
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(scaled_dot_product_attention_matches_a_float64_loop) {
  const std::int64_t b = 2, h = 3, tq = 5, tk = 6, dd = 4;
  const Values q0 = ndg_test::uniform_values(b * h * tq * dd, 101), k0 = ndg_test::uniform_values(b * h * tk * dd, 102),
               v0 = ndg_test::uniform_values(b * h * tk * dd, 103), r = ndg_test::uniform_values(b * h * tq * dd, 104);
  const std::vector<int> valid{6, 2};
  struct Case {
    bool padded, causal;
    std::optional<double> scale;
  };
  for (const Case c : {Case{false, false, {}}, Case{true, false, {}}, Case{false, true, {}}, Case{true, true, 0.3}}) {
    const double scale = c.scale.value_or(1 / std::sqrt(static_cast<double>(dd)));
    const std::vector<int> lengths = c.padded ? valid : std::vector<int>{};
    const auto loss = [&](const Values& q, const Values& k, const Values& v) {
      return dot(sdpa_reference(q, k, v, b, h, tq, tk, dd, lengths, c.causal, scale), r);
    };
    const Values want = sdpa_reference(q0, k0, v0, b, h, tq, tk, dd, lengths, c.causal, scale);
    const Values gq = ndg_test::numeric_gradient([&](const Values& x) { return loss(x, k0, v0); }, q0);
    const Values gk = ndg_test::numeric_gradient([&](const Values& x) { return loss(q0, x, v0); }, k0);
    const Values gv = ndg_test::numeric_gradient([&](const Values& x) { return loss(q0, k0, x); }, v0);
    ndg_test::for_each_context([&](mx::Context ctx) {
      BOOST_TEST_CONTEXT((c.padded ? "padded" : "") << (c.causal ? " causal" : "")) {
        nd::NDArray q = f64(q0, {b, h, tq, dd}, ctx), k = f64(k0, {b, h, tk, dd}, ctx), v = f64(v0, {b, h, tk, dd}, ctx);
        for (nd::NDArray* a : {&q, &k, &v}) a->attach_grad();
        nd::SDPAOptions o{.causal = c.causal, .scale = c.scale};
        if (c.padded) o.valid_length = nd::array({6, 2}, ctx);
        {
          auto recording = ag::record();
          const nd::NDArray y = nd::scaled_dot_product_attention(q, k, v, o);
          check_close(y, want, 1e-9, 1e-12);
          (y * f64(r, y.shape(), ctx)).sum().backward();
        }
        check_close(q.grad(), gq, 1e-6, 1e-8);
        check_close(k.grad(), gk, 1e-6, 1e-8);
        check_close(v.grad(), gv, 1e-6, 1e-8);
        // float32 gives the same to float32's precision.
        const nd::NDArray y32 = nd::scaled_dot_product_attention(q.astype(mx::DType::float32), k.astype(mx::DType::float32),
                                                                 v.astype(mx::DType::float32), o);
        check_close(y32, want, 1e-4, 1e-5);
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(scaled_dot_product_attention_errors_name_the_operands) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray q = nd::zeros({2, 3, 5, 4}, ctx), k = nd::zeros({2, 3, 6, 4}, ctx);
    NDG_CHECK_THROWS_WITH(nd::scaled_dot_product_attention(q, nd::zeros({2, 3, 6, 5}, ctx), k), mx::ShapeError,
                          "k (2, 3, 6, 5)");
    NDG_CHECK_THROWS_WITH(nd::scaled_dot_product_attention(q.reshape({6, 5, 4}), k, k), mx::ShapeError, "(batch, heads");
    NDG_CHECK_THROWS_WITH(nd::scaled_dot_product_attention(q, k, k, {.valid_length = nd::ones({3}, ctx)}), mx::ShapeError,
                          "valid_length (3,)");
    NDG_CHECK_THROWS_WITH(nd::scaled_dot_product_attention(q, k, k, {.dropout = 1.0}), mx::ValueError, "dropout");
  });
}

// The fused path (cuDNN flash attention on GPUs, float16 and bfloat16) against the reference path
// in float32 on the same half-rounded values. On cpu(0), and for the calls the fused path leaves
// to the reference (valid_length given, extents not multiples of 128), the half-precision call
// takes the reference path itself, so the same checks hold there.
namespace {

struct Attention {
  Values y, gq, gk, gv;
};

// y = scaled_dot_product_attention(q, k, v, o) in dtype on ctx, and the gradients of Σ y · r.
Attention attend(const Values& q0, const Values& k0, const Values& v0, const Values& r, const mx::Shape& qs,
                 const mx::Shape& ks, mx::Context ctx, DType dt, const nd::SDPAOptions& o) {
  nd::NDArray q = ndg_test::array_of(q0, qs, ctx, dt), k = ndg_test::array_of(k0, ks, ctx, dt),
              v = ndg_test::array_of(v0, ks, ctx, dt);
  for (nd::NDArray* a : {&q, &k, &v}) a->attach_grad();
  nd::NDArray y;
  {
    auto recording = ag::record();
    y = nd::scaled_dot_product_attention(q, k, v, o);
    (y * ndg_test::array_of(r, y.shape(), ctx, dt)).sum().backward();
  }
  return {ndg_test::values(y), ndg_test::values(q.grad()), ndg_test::values(k.grad()), ndg_test::values(v.grad())};
}

// The values rounded to dtype.
Values rounded(const Values& v, DType dt) {
  return ndg_test::values(ndg_test::array_of(v, {static_cast<std::int64_t>(v.size())}, mx::cpu(), dt));
}

double tolerance(DType dt) { return dt == DType::bfloat16 ? 2e-2 : 5e-3; }

void check_against_float32(const Values& q0, const Values& k0, const Values& v0, const Values& r0,
                           const mx::Shape& qs, const mx::Shape& ks, mx::Context ctx, DType dt,
                           const nd::SDPAOptions& o) {
  const Values q = rounded(q0, dt), k = rounded(k0, dt), v = rounded(v0, dt), r = rounded(r0, dt);
  const Attention got = attend(q, k, v, r, qs, ks, ctx, dt, o);
  const Attention want = attend(q, k, v, r, qs, ks, ctx, DType::float32, o);
  const double tol = tolerance(dt);
  BOOST_TEST(ndg_test::relative_error(got.y, want.y) < tol);
  BOOST_TEST(ndg_test::relative_error(got.gq, want.gq) < tol);
  BOOST_TEST(ndg_test::relative_error(got.gk, want.gk) < tol);
  BOOST_TEST(ndg_test::relative_error(got.gv, want.gv) < tol);
}

}  // namespace

BOOST_AUTO_TEST_CASE(fused_attention_matches_the_float32_reference) {
  const std::int64_t b = 2, h = 3, tq = 128, tk = 128;
  for (const std::int64_t dd : {64, 128}) {
    const Values q0 = ndg_test::uniform_values(b * h * tq * dd, 201), k0 = ndg_test::uniform_values(b * h * tk * dd, 202),
                 v0 = ndg_test::uniform_values(b * h * tk * dd, 203), r = ndg_test::uniform_values(b * h * tq * dd, 204);
    ndg_test::for_each_context([&](mx::Context ctx) {
      for (const DType dt : {DType::bfloat16, DType::float16}) {
        for (const bool causal : {false, true}) {
          for (const bool padded : {false, true}) {
            BOOST_TEST_CONTEXT(dt << " d=" << dd << (causal ? " causal" : "") << (padded ? " padded" : "")) {
              nd::SDPAOptions o{.causal = causal};
              if (padded) o.valid_length = nd::array({128, 37}, ctx);
              check_against_float32(q0, k0, v0, r, {b, h, tq, dd}, {b, h, tk, dd}, ctx, dt, o);
            }
          }
        }
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(fused_attention_with_a_custom_scale_and_square_causal) {
  const std::int64_t b = 1, h = 4, t = 128, dd = 64;
  const Values q0 = ndg_test::uniform_values(b * h * t * dd, 211), k0 = ndg_test::uniform_values(b * h * t * dd, 212),
               v0 = ndg_test::uniform_values(b * h * t * dd, 213), r = ndg_test::uniform_values(b * h * t * dd, 214);
  ndg_test::for_each_context([&](mx::Context ctx) {
    check_against_float32(q0, k0, v0, r, {b, h, t, dd}, {b, h, t, dd}, ctx, DType::bfloat16,
                          {.causal = true, .scale = 0.3});
  });
}

BOOST_AUTO_TEST_CASE(fused_attention_gives_zeros_where_no_key_is_valid) {
  const std::int64_t b = 3, h = 2, tq = 32, tk = 64, dd = 64;
  const Values q0 = ndg_test::uniform_values(b * h * tq * dd, 221), k0 = ndg_test::uniform_values(b * h * tk * dd, 222),
               v0 = ndg_test::uniform_values(b * h * tk * dd, 223), r = ndg_test::uniform_values(b * h * tq * dd, 224);
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const bool causal : {false, true}) {
      BOOST_TEST_CONTEXT((causal ? "causal" : "")) {
        // lengths 0, 77 (more than Tk: all keys) and 5, as floats: truncated as the reference does
        const nd::SDPAOptions o{.valid_length = nd::array({0.0, 77.0, 5.0}, ctx), .causal = causal};
        check_against_float32(q0, k0, v0, r, {b, h, tq, dd}, {b, h, tk, dd}, ctx, DType::bfloat16, o);
        const Attention got = attend(rounded(q0, DType::bfloat16), rounded(k0, DType::bfloat16),
                                     rounded(v0, DType::bfloat16), rounded(r, DType::bfloat16), {b, h, tq, dd},
                                     {b, h, tk, dd}, ctx, DType::bfloat16, o);
        const auto first_row_zero = [&](const Values& x, std::int64_t t) {
          for (std::int64_t i = 0; i < h * t * dd; ++i) {
            if (x[static_cast<std::size_t>(i)] != 0) return false;
          }
          return true;
        };
        BOOST_TEST(first_row_zero(got.y, tq));
        BOOST_TEST(first_row_zero(got.gq, tq));
        BOOST_TEST(first_row_zero(got.gk, tk));
        BOOST_TEST(first_row_zero(got.gv, tk));
      }
    }
  });
}

// Dropout: with v the identity (Tk = d), the output is the dropped-out weights themselves, so
// the mask can be read back: its keep rate, its 1 / (1 - p) scaling and that each call draws a
// new one. Replayed at the same generator position, the same mask comes back, and the gradients
// equal those of the float32 reference under that mask.
BOOST_AUTO_TEST_CASE(fused_dropout_keeps_one_minus_p_and_its_backward_uses_the_forward_mask) {
  const std::int64_t b = 2, h = 2, t = 128, dd = 128, n = b * h * t * t;
  const double p = 0.25;
  const DType dt = DType::bfloat16;
  const Values q0 = rounded(ndg_test::uniform_values(b * h * t * dd, 231), dt),
               k0 = rounded(ndg_test::uniform_values(b * h * t * dd, 232), dt),
               v0 = rounded(ndg_test::uniform_values(b * h * t * dd, 233), dt),
               r = rounded(ndg_test::uniform_values(b * h * t * dd, 234), dt);
  Values eye(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t bh = 0; bh < b * h; ++bh)
    for (std::int64_t j = 0; j < t; ++j) eye[static_cast<std::size_t>((bh * t + j) * dd + j)] = 1;
  const mx::Shape shape{b, h, t, dd};
  ndg_test::for_each_context([&](mx::Context ctx) {
    const nd::NDArray q = ndg_test::array_of(q0, shape, ctx, dt), k = ndg_test::array_of(k0, shape, ctx, dt),
                      identity = ndg_test::array_of(eye, shape, ctx, dt);
    const nd::SDPAOptions o{.dropout = p};
    // The weights without dropout (prediction: dropout is off) and with it.
    const Values weights = ndg_test::values(nd::scaled_dot_product_attention(q, k, identity, o));
    BOOST_TEST(ndg_test::relative_error(weights, ndg_test::values(nd::scaled_dot_product_attention(q, k, identity))) == 0);
    const std::uint64_t position = mx::random::get_state(ctx);
    Values dropped, again;
    {
      auto training = ag::train_mode();  // dropout on, nothing recorded
      dropped = ndg_test::values(nd::scaled_dot_product_attention(q, k, identity, o));
      again = ndg_test::values(nd::scaled_dot_product_attention(q, k, identity, o));
    }
    Values scaled_mask(static_cast<std::size_t>(n)), expected(static_cast<std::size_t>(n));
    double kept = 0, changed = 0;
    for (std::size_t i = 0; i < dropped.size(); ++i) {
      const bool keep = dropped[i] != 0;
      kept += keep;
      changed += keep != (again[i] != 0);
      scaled_mask[i] = keep ? 1 / (1 - p) : 0;
      expected[i] = weights[i] * scaled_mask[i];
    }
    BOOST_TEST(std::abs(kept / static_cast<double>(n) - (1 - p)) < 0.02);
    BOOST_TEST(changed / static_cast<double>(n) > 0.2);  // about 2p(1 - p) for independent masks
    BOOST_TEST(ndg_test::relative_error(dropped, expected) < 2e-2);

    // The same position, the real v: forward and gradients against float32 under the read mask.
    mx::random::set_state(ctx, position);
    const Attention got = attend(q0, k0, v0, r, shape, shape, ctx, dt, o);
    nd::NDArray q32 = ndg_test::array_of(q0, shape, ctx), k32 = ndg_test::array_of(k0, shape, ctx),
                v32 = ndg_test::array_of(v0, shape, ctx);
    for (nd::NDArray* a : {&q32, &k32, &v32}) a->attach_grad();
    nd::NDArray y;
    {
      auto recording = ag::record();
      const nd::NDArray scores =
          nd::batch_dot(q32.reshape({b * h, t, dd}), k32.reshape({b * h, t, dd}), false, true) *
          (1 / std::sqrt(static_cast<double>(dd)));
      const nd::NDArray w = nd::softmax(scores, -1) * ndg_test::array_of(scaled_mask, {b * h, t, t}, ctx);
      y = nd::batch_dot(w, v32.reshape({b * h, t, dd})).reshape(shape);
      (y * ndg_test::array_of(r, shape, ctx)).sum().backward();
    }
    BOOST_TEST(ndg_test::relative_error(got.y, ndg_test::values(y)) < 2e-2);
    BOOST_TEST(ndg_test::relative_error(got.gq, ndg_test::values(q32.grad())) < 2e-2);
    BOOST_TEST(ndg_test::relative_error(got.gk, ndg_test::values(k32.grad())) < 2e-2);
    BOOST_TEST(ndg_test::relative_error(got.gv, ndg_test::values(v32.grad())) < 2e-2);
  });
}

BOOST_AUTO_TEST_CASE(half_precision_attention_errors_stay_typed) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray q = nd::zeros({2, 3, 16, 64}, ctx, DType::bfloat16), k = nd::zeros({2, 3, 24, 64}, ctx, DType::bfloat16);
    BOOST_CHECK_THROW(nd::scaled_dot_product_attention(q, k.astype(DType::float32), k), mx::DTypeError);
    NDG_CHECK_THROWS_WITH(nd::scaled_dot_product_attention(q, k, nd::zeros({2, 3, 23, 64}, ctx, DType::bfloat16)),
                          mx::ShapeError, "v (2, 3, 23, 64)");
    NDG_CHECK_THROWS_WITH(nd::scaled_dot_product_attention(q, k, k, {.valid_length = nd::ones({3}, ctx)}),
                          mx::ShapeError, "valid_length (3,)");
    NDG_CHECK_THROWS_WITH(nd::scaled_dot_product_attention(q, k, k, {.dropout = -0.1}), mx::ValueError, "dropout");
  });
}

BOOST_AUTO_TEST_SUITE_END()
