// gluon::rnn's cells: MXNet's parameter names and shapes, one step of each cell against a float64
// evaluation of MXNet's formulas on the weights read back, unroll in both layouts equal to steps
// taken one at a time, a finite-difference check of the LSTM's gradient, GPU equal to cpu(0), and
// the errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gluon/rnn.hpp>

namespace nd = mx::nd;
namespace rnn = mx::gluon::rnn;
using ndg_test::Values;

namespace {

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

// W v + b for W (rows, cols) and b (rows,) given as values.
Values affine(const Values& w, const Values& b, const Values& v) {
  Values out(b.size());
  const std::size_t cols = v.size();
  for (std::size_t r = 0; r < b.size(); ++r) {
    double s = b[r];
    for (std::size_t c = 0; c < cols; ++c) s += w[r * cols + c] * v[c];
    out[r] = s;
  }
  return out;
}

struct Weights {
  Values wi, wh, bi, bh;
};

Weights weights_of(rnn::RecurrentCell& cell, mx::Context ctx) {
  const auto p = cell.collect_params();
  const auto get = [&](const std::string& suffix) {
    for (const auto& [name, param] : p) {
      if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        return ndg_test::values(param.data(ctx));
      }
    }
    BOOST_FAIL("no parameter " << suffix);
    return Values{};
  };
  return {get("i2h_weight"), get("h2h_weight"), get("i2h_bias"), get("h2h_bias")};
}

// One step of sample 0: x (in,), states (H,) each -> the next states, by MXNet's formulas.
std::vector<Values> reference_step(const std::string& kind, const Weights& w, const Values& x,
                                   const std::vector<Values>& states) {
  const std::size_t H = states[0].size();
  const Values i = affine(w.wi, w.bi, x), h = affine(w.wh, w.bh, states[0]);
  Values out(H), c(H);
  for (std::size_t k = 0; k < H; ++k) {
    if (kind == "rnn") {
      out[k] = std::tanh(i[k] + h[k]);
    } else if (kind == "lstm") {
      const double in = sigmoid(i[k] + h[k]), f = sigmoid(i[H + k] + h[H + k]);
      const double g = std::tanh(i[2 * H + k] + h[2 * H + k]), o = sigmoid(i[3 * H + k] + h[3 * H + k]);
      c[k] = f * states[1][k] + in * g;
      out[k] = o * std::tanh(c[k]);
    } else {
      const double r = sigmoid(i[k] + h[k]), z = sigmoid(i[H + k] + h[H + k]);
      const double n = std::tanh(i[2 * H + k] + r * h[2 * H + k]);
      out[k] = (1 - z) * n + z * states[0][k];
    }
  }
  return kind == "lstm" ? std::vector<Values>{out, c} : std::vector<Values>{out};
}

Values first_row(const nd::NDArray& x) {
  Values v = ndg_test::values(x);
  v.resize(static_cast<std::size_t>(x.shape()[1]));
  return v;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rnn_cells)

BOOST_AUTO_TEST_CASE(parameters_have_mxnets_names_and_shapes) {
  rnn::LSTMCell lstm(8, 0, {}, {}, mx::init::Zero(), mx::init::Zero(), "lstm0_");
  const auto params = lstm.collect_params();
  std::vector<std::string> names;
  for (const auto& [name, param] : params) names.push_back(name);
  std::sort(names.begin(), names.end());
  BOOST_TEST(names == (std::vector<std::string>{"lstm0_h2h_bias", "lstm0_h2h_weight", "lstm0_i2h_bias", "lstm0_i2h_weight"}),
             boost::test_tools::per_element());
  BOOST_TEST(params["lstm0_h2h_weight"].shape() == (mx::Shape{32, 8}));
  BOOST_TEST(params["lstm0_i2h_weight"].shape() == (mx::Shape{32, 0}));  // inferred at the first step
  BOOST_TEST(rnn::GRUCell(5, 3).collect_params().size() == 4u);
  BOOST_TEST(rnn::RNNCell(5).prefix().rfind("rnn", 0) == 0u);
  BOOST_TEST(rnn::GRUCell(5).prefix().rfind("gru", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(each_cell_steps_as_mxnets_formulas) {
  ndg_test::for_each_context([](mx::Context ctx) {
    for (const std::string kind : {"rnn", "lstm", "gru"}) {
      BOOST_TEST_CONTEXT(kind) {
        std::unique_ptr<rnn::RecurrentCell> cell;
        if (kind == "rnn") cell = std::make_unique<rnn::RNNCell>(4);
        if (kind == "lstm") cell = std::make_unique<rnn::LSTMCell>(4);
        if (kind == "gru") cell = std::make_unique<rnn::GRUCell>(4);
        cell->initialize(mx::init::Uniform(0.5), ctx);
        const nd::NDArray x = ndg_test::random_array({2, 3}, ctx, 1);
        rnn::RecurrentCell::States states;
        for (std::size_t s = 0; s < cell->state_shapes(2).size(); ++s) {
          states.push_back(ndg_test::random_array({2, 4}, ctx, 2 + static_cast<unsigned>(s)));
        }
        const auto [y, next] = cell->step(x, states);
        std::vector<Values> given;
        for (const nd::NDArray& s : states) given.push_back(first_row(s));
        const std::vector<Values> want = reference_step(kind, weights_of(*cell, ctx), first_row(x), given);
        ndg_test::check_close(y[0], want[0], 1e-5, 1e-6);
        BOOST_TEST(next.size() == want.size());
        for (std::size_t s = 0; s < want.size(); ++s) ndg_test::check_close(next[s][0], want[s], 1e-5, 1e-6);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(unroll_equals_one_step_at_a_time_in_both_layouts) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::LSTMCell cell(5);
    cell.initialize(mx::init::Xavier(), ctx);
    const nd::NDArray ntc = ndg_test::random_array({2, 4, 3}, ctx, 7);  // (batch, time, input)
    const auto [ys, last] = cell.unroll(4, ntc);
    BOOST_TEST(ys.shape() == (mx::Shape{2, 4, 5}));
    auto states = cell.begin_state(2, ctx);
    for (std::int64_t t = 0; t < 4; ++t) {
      auto [y, next] = cell.step(nd::slice_axis(ntc, 1, t, t + 1).reshape({2, 3}), states);
      ndg_test::check_close(nd::slice_axis(ys, 1, t, t + 1).reshape({2, 5}), ndg_test::values(y), 0, 0);
      states = next;
    }
    ndg_test::check_close(last[1], ndg_test::values(states[1]), 0, 0);
    // "TNC": the same sequence time-major gives the same outputs, time-major.
    const auto [ys_t, last_t] = cell.unroll(4, nd::swapaxes(ntc, 0, 1).copy(), {}, "TNC");
    ndg_test::check_close(ys_t, ndg_test::values(nd::swapaxes(ys, 0, 1).copy()), 0, 0);
    NDG_CHECK_THROWS_WITH(cell.unroll(4, ntc, {}, "NCT"), mx::ValueError, "layout \"NCT\"");
    NDG_CHECK_THROWS_WITH(cell.unroll(3, ntc), mx::ShapeError, "unroll(3)", "(2, 4, 3)");
  });
}

BOOST_AUTO_TEST_CASE(the_lstm_gradient_matches_finite_differences) {
  rnn::LSTMCell cell(3, 2);
  cell.initialize(mx::init::Uniform(0.5), mx::cpu());
  const nd::NDArray x = ndg_test::random_array({2, 3, 2}, mx::cpu(), 11);
  mx::gluon::Parameter w = cell.collect_params()[cell.prefix() + "i2h_weight"];
  const auto loss = [&] { return cell.unroll(3, x).first.sum().asscalar<double>(); };
  {
    auto rec = mx::autograd::record();
    nd::NDArray l = cell.unroll(3, x).first.sum();
    l.backward();
  }
  const Values grad = ndg_test::values(w.grad(mx::cpu()));
  nd::NDArray data = w.data(mx::cpu());
  const Values base = ndg_test::values(data);
  for (std::size_t i = 0; i < base.size(); i += 5) {
    const double eps = 1e-2;
    Values plus = base, minus = base;
    plus[i] += eps;
    minus[i] -= eps;
    nd::array(plus, data.shape(), mx::cpu(), mx::DType::float32).copyto(data);
    const double up = loss();
    nd::array(minus, data.shape(), mx::cpu(), mx::DType::float32).copyto(data);
    const double down = loss();
    nd::array(base, data.shape(), mx::cpu(), mx::DType::float32).copyto(data);
    BOOST_TEST(std::abs((up - down) / (2 * eps) - grad[i]) < 2e-3, "weight " << i << ": " << (up - down) / (2 * eps)
                                                                         << " vs " << grad[i]);
  }
}

BOOST_AUTO_TEST_CASE(bad_states_are_refused) {
  rnn::GRUCell gru(4);
  gru.initialize(mx::init::Xavier(), mx::cpu());
  const nd::NDArray x = nd::ones({2, 3});
  NDG_CHECK_THROWS_WITH(gru.step(x, {}), mx::ShapeError, "0 states given", "has 1");
  NDG_CHECK_THROWS_WITH(gru.step(x, {nd::zeros({2, 5})}), mx::ShapeError, "state 0", "(2, 5)", "(2, 4)");
  NDG_CHECK_THROWS_WITH(gru.step(nd::ones({2, 3, 1}), gru.begin_state(2, mx::cpu())), mx::ShapeError, "(batch, input_size)");
  gru.step(x, gru.begin_state(2, mx::cpu()));
  NDG_CHECK_THROWS_WITH(gru.step(nd::ones({2, 7}), gru.begin_state(2, mx::cpu())), mx::ShapeError, "7 features");
  NDG_CHECK_THROWS_WITH(rnn::RNNCell(4, "sigmoid"), mx::ValueError, "activation \"sigmoid\"");
  NDG_CHECK_THROWS_WITH(rnn::LSTMCell(0), mx::ValueError, "hidden_size must be >= 1");
  if (mx::num_gpus() > 0) {
    NDG_CHECK_THROWS_WITH(gru.step(x, {nd::zeros({2, 4}, mx::gpu(0))}), mx::ContextMismatch, "state 0", "gpu(0)");
  }
}

BOOST_AUTO_TEST_SUITE_END()
