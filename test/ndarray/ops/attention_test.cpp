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

BOOST_AUTO_TEST_SUITE_END()
