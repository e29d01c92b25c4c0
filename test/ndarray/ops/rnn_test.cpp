// The RNN op (MXNet's fused recurrent op) on every context: outputs and last states against a
// float64 loop written from MXNet's equations for every mode, several layers, both directions, an
// LSTM projection and state clipping; gradients of data, parameters and initial states against
// finite differences in float64; dropout between layers; the errors it throws. On a GPU the cases
// run through cuDNN and again through the unfused path (nd::set_rnn_cudnn(false)).
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <cmath>
#include <limits>
#include <cstdint>
#include <string>
#include <vector>

#include <ndarray/ndarray.hpp>
#include <ndarray/ops/rnn.hpp>

#include "ndarray/ops/rnn_kernels.hpp"

namespace nd = mx::nd;
namespace ag = mx::autograd;
using mx::DType;
using ndg_test::Values;
using ndg_test::values;

namespace {

struct Case {
  std::string mode;
  std::int64_t seq, batch, input, hidden, layers;
  bool bidirectional = false;
  std::int64_t projection = 0;
  bool clip = false;
  double clip_min = 0, clip_max = 0;
  bool clip_nan = false;

  std::int64_t gates() const { return mode == "lstm" ? 4 : mode == "gru" ? 3 : 1; }
  std::int64_t directions() const { return bidirectional ? 2 : 1; }
  std::int64_t state() const { return projection > 0 ? projection : hidden; }
  std::int64_t layer_input(std::int64_t l) const { return l == 0 ? input : directions() * state(); }
  bool lstm() const { return mode == "lstm"; }
  nd::RNNOptions options(bool state_outputs = true) const {
    nd::RNNOptions o;
    o.state_size = hidden;
    o.num_layers = layers;
    o.mode = mode;
    o.bidirectional = bidirectional;
    o.state_outputs = state_outputs;
    o.projection_size = projection;
    if (clip) {
      o.lstm_state_clip_min = clip_min;
      o.lstm_state_clip_max = clip_max;
      o.lstm_state_clip_nan = clip_nan;
    }
    return o;
  }
  std::string str() const {
    return mode + " T=" + std::to_string(seq) + " N=" + std::to_string(batch) + " I=" + std::to_string(input) +
           " H=" + std::to_string(hidden) + " L=" + std::to_string(layers) + (bidirectional ? " bidirectional" : "") +
           (projection ? " P=" + std::to_string(projection) : "") + (clip ? " clipped" : "") +
           (clip_nan ? " (clip_nan)" : "");
  }
};

// MXNet's flat parameter vector, read as matrices: every weight, then every bias, layer by layer
// and direction by direction.
struct Weights {
  const Case& c;
  const Values& w;
  struct Layer {
    std::int64_t i2h, h2h, h2r, bi, bh;
  };
  std::vector<Layer> at;  // [l * D + d]
  Weights(const Case& cs, const Values& values) : c(cs), w(values) {
    const std::int64_t gh = c.gates() * c.hidden;
    std::int64_t offset = 0;
    for (std::int64_t l = 0; l < c.layers; ++l) {
      for (std::int64_t d = 0; d < c.directions(); ++d) {
        Layer e{};
        e.i2h = offset;
        offset += gh * c.layer_input(l);
        e.h2h = offset;
        offset += gh * c.state();
        e.h2r = offset;
        if (c.projection) offset += c.projection * c.hidden;
        at.push_back(e);
      }
    }
    for (Layer& e : at) {
      e.bi = offset;
      e.bh = offset + gh;
      offset += 2 * gh;
    }
    count = offset;
  }
  std::int64_t count = 0;
};

struct Result {
  Values out, hy, cy;
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The float64 reference: MXNet's (and cuDNN's) equations, step by step.
Result reference(const Case& c, const Values& x, const Values& params, const Values& hx, const Values& cx) {
  const Weights wt(c, params);
  const Values& w = params;
  const std::int64_t T = c.seq, N = c.batch, H = c.hidden, S = c.state(), D = c.directions(), G = c.gates();
  Result r;
  r.hy.assign(static_cast<std::size_t>(c.layers * D * N * S), 0);
  r.cy.assign(static_cast<std::size_t>(c.layers * D * N * H), 0);
  Values input = x;
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const std::int64_t in = c.layer_input(l);
    Values out(static_cast<std::size_t>(T * N * D * S));
    for (std::int64_t d = 0; d < D; ++d) {
      const auto& e = wt.at[static_cast<std::size_t>(l * D + d)];
      const std::int64_t k = l * D + d;
      for (std::int64_t n = 0; n < N; ++n) {
        Values h(hx.begin() + (k * N + n) * S, hx.begin() + (k * N + n + 1) * S);
        Values cell = c.lstm() ? Values(cx.begin() + (k * N + n) * H, cx.begin() + (k * N + n + 1) * H) : Values(H);
        for (std::int64_t step = 0; step < T; ++step) {
          const std::int64_t t = d == 0 ? step : T - 1 - step;
          Values xi(G * H), hh(G * H);
          for (std::int64_t g = 0; g < G * H; ++g) {
            xi[g] = w[e.bi + g];
            hh[g] = w[e.bh + g];
            for (std::int64_t j = 0; j < in; ++j) xi[g] += w[e.i2h + g * in + j] * input[(t * N + n) * in + j];
            for (std::int64_t j = 0; j < S; ++j) hh[g] += w[e.h2h + g * S + j] * h[j];
          }
          Values next(H);
          for (std::int64_t j = 0; j < H; ++j) {
            if (c.mode == "rnn_tanh") next[j] = std::tanh(xi[j] + hh[j]);
            if (c.mode == "rnn_relu") next[j] = std::max(0.0, xi[j] + hh[j]);
            if (c.mode == "gru") {
              const double rg = sigmoid(xi[j] + hh[j]), z = sigmoid(xi[H + j] + hh[H + j]);
              const double ng = std::tanh(xi[2 * H + j] + rg * hh[2 * H + j]);
              next[j] = (1 - z) * ng + z * h[j];
            }
            if (c.lstm()) {
              const double i = sigmoid(xi[j] + hh[j]), f = sigmoid(xi[H + j] + hh[H + j]);
              const double g = std::tanh(xi[2 * H + j] + hh[2 * H + j]), o = sigmoid(xi[3 * H + j] + hh[3 * H + j]);
              cell[j] = f * cell[j] + i * g;
              if (c.clip) cell[j] = std::min(std::max(cell[j], c.clip_min), c.clip_max);
              next[j] = o * std::tanh(cell[j]);
            }
          }
          if (c.projection) {
            Values projected(S, 0.0);
            for (std::int64_t p = 0; p < S; ++p) {
              for (std::int64_t j = 0; j < H; ++j) projected[p] += w[e.h2r + p * H + j] * next[j];
            }
            next = projected;
          }
          h = next;
          for (std::int64_t j = 0; j < S; ++j) out[(t * N + n) * D * S + d * S + j] = h[j];
        }
        for (std::int64_t j = 0; j < S; ++j) r.hy[(k * N + n) * S + j] = h[j];
        if (c.lstm()) {
          for (std::int64_t j = 0; j < H; ++j) r.cy[(k * N + n) * H + j] = cell[j];
        }
      }
    }
    input = out;
  }
  r.out = input;
  if (!c.lstm()) r.cy.clear();
  return r;
}

struct Operands {
  nd::NDArray x, w, hx, cx;
};

Operands operands(const Case& c, mx::Context ctx, DType dtype, unsigned seed) {
  const std::int64_t states = c.layers * c.directions();
  const auto make = [&](const mx::Shape& shape, unsigned s, double scale) {
    Values v = ndg_test::uniform_values(static_cast<std::size_t>(shape.numel()), s);
    for (double& e : v) e *= scale;
    return nd::array(v, shape, ctx, dtype);
  };
  Operands o;
  o.x = make({c.seq, c.batch, c.input}, seed, 1.0);
  o.w = make({nd::rnn_param_size(c.options(), c.input)}, seed + 1, 0.6);
  o.hx = make({states, c.batch, c.state()}, seed + 2, 0.5);
  if (c.lstm()) o.cx = make({states, c.batch, c.hidden}, seed + 3, 0.5);
  return o;
}

std::vector<Case> forward_cases() {
  std::vector<Case> cases = {
      {"lstm", 4, 3, 5, 4, 1},
      {"lstm", 3, 2, 3, 4, 2, true},
      {"gru", 4, 3, 5, 4, 2, true},
      {"gru", 3, 2, 3, 3, 1},
      {"rnn_tanh", 4, 3, 5, 4, 2},
      {"rnn_relu", 3, 2, 3, 4, 1, true},
      {"lstm", 3, 2, 3, 4, 2, true, 2},                     // projection
      {"lstm", 4, 2, 3, 4, 1, false, 0, true, -0.2, 0.25},  // state clipping
  };
  cases.push_back({"lstm", 3, 2, 3, 4, 2, true, 0, true, -1e9, 1e9, true});  // NaN clipping
  return cases;
}

// fn() on ctx: on a GPU through cuDNN and again through the unfused path.
template <class F>
void for_each_path(mx::Context ctx, F&& fn) {
  for (bool cudnn : {true, false}) {
    if (!cudnn && !ctx.is_gpu()) break;
    const bool previous = nd::set_rnn_cudnn(cudnn);
    BOOST_TEST_CONTEXT((ctx.is_gpu() ? (cudnn ? "cuDNN" : "unfused") : "cpu")) { fn(); }
    nd::set_rnn_cudnn(previous);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rnn_op)

BOOST_AUTO_TEST_CASE(outputs_and_last_states_match_a_float64_loop_of_mxnets_equations) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const Case& c : forward_cases()) {
      BOOST_TEST_CONTEXT(c.str()) for_each_path(ctx, [&] {
        const Operands o = operands(c, ctx, DType::float32, 7);
        const std::vector<nd::NDArray> y = nd::RNN(o.x, o.w, o.hx, o.cx, c.options());
        BOOST_TEST(y.size() == (c.lstm() ? 3u : 2u));
        const Result want = reference(c, values(o.x), values(o.w), values(o.hx), c.lstm() ? values(o.cx) : Values{});
        BOOST_TEST((y[0].shape() == mx::Shape{c.seq, c.batch, c.directions() * c.state()}));
        ndg_test::check_close(y[0], want.out, 1e-4, 1e-5);
        ndg_test::check_close(y[1], want.hy, 1e-4, 1e-5);
        if (c.lstm()) ndg_test::check_close(y[2], want.cy, 1e-4, 1e-5);
        // Without state_outputs: the output alone, the same values.
        const std::vector<nd::NDArray> alone = nd::RNN(o.x, o.w, o.hx, o.cx, c.options(false));
        BOOST_TEST(alone.size() == 1u);
        ndg_test::check_close(alone[0], want.out, 1e-4, 1e-5);
      });
    }
  });
}

BOOST_AUTO_TEST_CASE(float64_gradients_match_finite_differences) {
  const std::vector<Case> cases = {
      {"lstm", 3, 2, 2, 2, 2, true},
      {"gru", 3, 2, 2, 2, 2, true},
      {"rnn_tanh", 3, 2, 2, 3, 1},
      {"lstm", 3, 2, 2, 3, 1, true, 2},
      {"lstm", 4, 2, 2, 3, 1, false, 0, true, -0.1, 0.15},  // clipped
  };
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const Case& c : cases) {
      BOOST_TEST_CONTEXT(c.str()) for_each_path(ctx, [&] {
        const Operands o = operands(c, ctx, DType::float64, 11);
        const mx::Shape out_shape{c.seq, c.batch, c.directions() * c.state()};
        const nd::NDArray head = nd::array(ndg_test::uniform_values(out_shape.numel(), 3), out_shape, ctx, DType::float64);
        const nd::NDArray head_h = nd::array(ndg_test::uniform_values(o.hx.size(), 4), o.hx.shape(), ctx, DType::float64);
        const nd::NDArray head_c =
            c.lstm() ? nd::array(ndg_test::uniform_values(o.cx.size(), 5), o.cx.shape(), ctx, DType::float64) : nd::NDArray();
        // loss = Σ out·head + Σ hy·head_h (+ Σ cy·head_c)
        const auto loss = [&](const Operands& in) {
          const std::vector<nd::NDArray> y = nd::RNN(in.x, in.w, in.hx, in.cx, c.options());
          nd::NDArray l = (y[0] * head).sum() + (y[1] * head_h).sum();
          if (c.lstm()) l = l + (y[2] * head_c).sum();
          return l;
        };
        Operands g = o;
        std::vector<nd::NDArray*> leaves{&g.x, &g.w, &g.hx};
        if (c.lstm()) leaves.push_back(&g.cx);
        for (nd::NDArray* a : leaves) a->attach_grad();
        {
          auto scope = ag::record();
          loss(g).backward();
        }
        const char* names[] = {"data", "parameters", "state", "state_cell"};
        for (std::size_t k = 0; k < leaves.size(); ++k) {
          BOOST_TEST_CONTEXT(names[k]) {
            const Values analytic = values(leaves[k]->grad());
            Values base = values(*leaves[k]);
            Values numeric(base.size());
            const double eps = 1e-6;
            for (std::size_t i = 0; i < base.size(); ++i) {
              Operands shifted = o;
              nd::NDArray* target[] = {&shifted.x, &shifted.w, &shifted.hx, &shifted.cx};
              Values v = base;
              v[i] = base[i] + eps;
              *target[k] = nd::array(v, leaves[k]->shape(), ctx, DType::float64);
              const double up = loss(shifted).asscalar<double>();
              v[i] = base[i] - eps;
              *target[k] = nd::array(v, leaves[k]->shape(), ctx, DType::float64);
              numeric[i] = (up - loss(shifted).asscalar<double>()) / (2 * eps);
            }
            for (std::size_t i = 0; i < base.size(); ++i) {
              BOOST_TEST(analytic[i] == numeric[i], boost::test_tools::tolerance(1e-5) << "element " << i);
            }
          }
        }
      });
    }
  });
}

// Sizes at which cpu(0) shares each step's products out over its team, a slice of units per thread
// (Note [the CPU's recurrence] in ndarray/ops/rnn.cpp; 100 units leave a shorter last slice):
// outputs against the float64 loop, gradients against the same call kept on one thread.
BOOST_AUTO_TEST_CASE(recurrences_shared_over_threads_match_the_loop_and_one_thread) {
  const std::vector<Case> cases = {{"lstm", 3, 4, 5, 128, 2, true}, {"gru", 3, 10, 5, 100, 1}, {"rnn_tanh", 4, 20, 3, 120, 1}};
  ndg_test::for_each_context([&](mx::Context ctx) {
    for (const Case& c : cases) {
      BOOST_TEST_CONTEXT(c.str()) for_each_path(ctx, [&] {
        const Operands o = operands(c, ctx, DType::float64, 13);
        const Result want = reference(c, values(o.x), values(o.w), values(o.hx), c.lstm() ? values(o.cx) : Values{});
        const auto run = [&] {
          Operands g = o;
          std::vector<nd::NDArray*> leaves{&g.x, &g.w, &g.hx};
          if (c.lstm()) leaves.push_back(&g.cx);
          for (nd::NDArray* a : leaves) a->attach_grad();
          std::vector<nd::NDArray> y;
          {
            auto scope = ag::record();
            y = nd::RNN(g.x, g.w, g.hx, g.cx, c.options());
            ((y[0] * y[0]).sum() + (y[1] * 3.0).sum()).backward();
          }
          std::vector<nd::NDArray> got{y[0]};
          for (nd::NDArray* a : leaves) got.push_back(a->grad());
          return got;
        };
        const std::vector<nd::NDArray> team = run();
        ndg_test::check_close(team[0], want.out, 1e-9, 1e-10);
        std::vector<nd::NDArray> alone;
        {
          const mx::nd::SingleThreadedOps one_thread;
          alone = run();
        }
        for (std::size_t k = 1; k < team.size(); ++k) {
          BOOST_TEST_CONTEXT("gradient " << k) ndg_test::check_close(team[k], values(alone[k]), 1e-9, 1e-10);
        }
      });
    }
  });
}

BOOST_AUTO_TEST_CASE(dropout_between_layers_draws_in_training_and_is_off_in_prediction) {
  Case c{"lstm", 4, 3, 4, 5, 2, true};
  nd::RNNOptions with_dropout = c.options();
  with_dropout.p = 0.5;
  std::vector<Values> per_context;
  ndg_test::for_each_context([&](mx::Context ctx) {
    const Operands o = operands(c, ctx, DType::float32, 5);
    const Result want = reference(c, values(o.x), values(o.w), values(o.hx), values(o.cx));
    // prediction: no dropout
    ndg_test::check_close(nd::RNN(o.x, o.w, o.hx, o.cx, with_dropout)[0], want.out, 1e-4, 1e-5);
    mx::random::seed(3);
    nd::NDArray trained;
    {
      auto scope = ag::record();
      trained = nd::RNN(o.x, o.w, o.hx, o.cx, with_dropout)[0];
    }
    const Values got = values(trained);
    double differs = 0;
    for (std::size_t i = 0; i < got.size(); ++i) differs = std::max(differs, std::abs(got[i] - want.out[i]));
    BOOST_TEST(differs > 1e-3);  // the second layer saw a masked input
    // the same seed draws the same masks
    mx::random::seed(3);
    {
      auto scope = ag::record();
      ndg_test::check_close(nd::RNN(o.x, o.w, o.hx, o.cx, with_dropout)[0], got, 1e-6, 1e-7);
    }
    per_context.push_back(got);
  });
  // cpu(0) and the GPUs draw the same uniform values for one seed, hence the same masks.
  for (std::size_t k = 1; k < per_context.size(); ++k) {
    for (std::size_t i = 0; i < per_context[0].size(); ++i) {
      BOOST_TEST(per_context[k][i] == per_context[0][i], boost::test_tools::tolerance(1e-4));
    }
  }
}

BOOST_AUTO_TEST_CASE(half_precision_outputs_follow_the_float32_ones) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (DType dtype : ndg_test::kHalfDTypes) {
      for (const Case& c : {Case{"lstm", 4, 3, 8, 8, 2, true}, Case{"gru", 4, 3, 8, 8, 1}}) {
        BOOST_TEST_CONTEXT(c.str() << " " << mx::dtype_name(dtype)) for_each_path(ctx, [&] {
          const Operands o = operands(c, ctx, dtype, 9);
          const Result want = reference(c, values(o.x), values(o.w), values(o.hx), c.lstm() ? values(o.cx) : Values{});
          const std::vector<nd::NDArray> y = nd::RNN(o.x, o.w, o.hx, o.cx, c.options());
          BOOST_TEST(y[0].dtype() == dtype);
          const double tol = dtype == DType::bfloat16 ? 4e-2 : 5e-3;
          ndg_test::check_close(y[0], want.out, tol, tol);
          ndg_test::check_close(y[1], want.hy, tol, tol);
        });
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(bad_operands_and_options_are_typed_errors) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const Case c{"lstm", 3, 2, 3, 4, 1};
    const Operands o = operands(c, ctx, DType::float32, 1);
    BOOST_CHECK_THROW(nd::RNN(o.x, o.w.slice(0, 10), o.hx, o.cx, c.options()), mx::ShapeError);
    BOOST_CHECK_THROW(nd::RNN(o.x, o.w, o.hx.reshape({1, 1, 8}), o.cx, c.options()), mx::ShapeError);
    BOOST_CHECK_THROW(nd::RNN(o.x, o.w, o.hx, nd::NDArray(), c.options()), mx::Error);
    BOOST_CHECK_THROW(nd::RNN(o.x.reshape({6, 3}), o.w, o.hx, o.cx, c.options()), mx::ShapeError);
    BOOST_CHECK_THROW(nd::RNN(o.x, o.w.astype(DType::float64), o.hx, o.cx, c.options()), mx::DTypeError);
    if (ctx.is_gpu()) BOOST_CHECK_THROW(nd::RNN(o.x, o.w, o.hx, o.cx.copyto(mx::cpu()), c.options()), mx::ContextMismatch);
    nd::RNNOptions bad = c.options();
    bad.mode = "lstmp";
    BOOST_CHECK_THROW(nd::RNN(o.x, o.w, o.hx, o.cx, bad), mx::ValueError);
    bad = c.options();
    bad.p = 1.0;
    BOOST_CHECK_THROW(nd::RNN(o.x, o.w, o.hx, o.cx, bad), mx::ValueError);
    Case gru{"gru", 3, 2, 3, 4, 1};
    nd::RNNOptions projected = gru.options();
    projected.projection_size = 2;
    BOOST_CHECK_THROW(nd::rnn_param_size(projected, 3), mx::ValueError);
    // a GRU takes no cell state
    const Operands g = operands(gru, ctx, DType::float32, 1);
    BOOST_CHECK_THROW(nd::RNN(g.x, g.w, g.hx, o.cx, gru.options()), mx::ValueError);
    // the message names the operand and the shape expected
    try {
      nd::RNN(o.x, o.w, o.hx.reshape({1, 1, 8}), o.cx, c.options());
    } catch (const mx::ShapeError& e) {
      BOOST_TEST(std::string(e.what()).find("state") != std::string::npos);
      BOOST_TEST(std::string(e.what()).find("(1, 2, 4)") != std::string::npos);
    }
  });
}

BOOST_AUTO_TEST_CASE(param_size_follows_mxnets_layout) {
  // MXNet: LSTM(100, num_layers=2, bidirectional) over 50 inputs.
  nd::RNNOptions o;
  o.state_size = 100;
  o.num_layers = 2;
  o.bidirectional = true;
  o.mode = "lstm";
  const std::int64_t layer0 = 2 * (400 * 50 + 400 * 100 + 800), layer1 = 2 * (400 * 200 + 400 * 100 + 800);
  BOOST_TEST(nd::rnn_param_size(o, 50) == layer0 + layer1);
  o.mode = "gru";
  o.bidirectional = false;
  o.num_layers = 1;
  BOOST_TEST(nd::rnn_param_size(o, 50) == 300 * 50 + 300 * 100 + 600);
  o.mode = "lstm";
  o.projection_size = 30;
  BOOST_TEST(nd::rnn_param_size(o, 50) == 400 * 50 + 400 * 30 + 30 * 100 + 800);
}

// The CPU step kernels' exp and tanh (polynomials the loops vectorise) against the C library's,
// in double, over the whole range a gate sees, with NaN and the saturated ends.
BOOST_AUTO_TEST_CASE(host_exp_and_tanh_match_the_c_library) {
  double exp_error = 0, tanh_error = 0;
  for (int i = -200000; i <= 200000; ++i) {
    const float x = static_cast<float>(i) * 4.3e-4f;  // [-86, 86]
    exp_error = std::max(exp_error, std::abs(mx::op::host_expf(x) / std::exp(static_cast<double>(x)) - 1));
    const double t = std::tanh(static_cast<double>(x));
    tanh_error = std::max(tanh_error, std::abs(mx::op::host_tanhf(x) - t) / std::max(std::abs(t), 1e-30));
  }
  BOOST_TEST(exp_error < 3e-7);   // 2.5 ulp of float
  BOOST_TEST(tanh_error < 5e-7);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  BOOST_TEST(std::isnan(mx::op::host_expf(nan)));
  BOOST_TEST(std::isnan(mx::op::host_tanhf(nan)));
  BOOST_TEST(mx::op::host_expf(-inf) < 1e-37f);
  BOOST_TEST(mx::op::host_tanhf(inf) == 1.0f);
  BOOST_TEST(mx::op::host_tanhf(-inf) == -1.0f);
  BOOST_TEST(mx::op::host_tanhf(1e-20f) == 1e-20f);
  BOOST_TEST(std::signbit(mx::op::host_tanhf(-0.0f)));
}

BOOST_AUTO_TEST_SUITE_END()
