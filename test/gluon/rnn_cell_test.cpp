// gluon::rnn's cells: MXNet's parameter names and shapes, one step of each cell against a float64
// evaluation of MXNet's formulas on the weights read back, unroll in both layouts equal to steps
// taken one at a time, a finite-difference check of the LSTM's gradient, GPU equal to cpu(0), and
// the errors. Then the cells over cells (SequentialRNNCell, DropoutCell, ResidualCell, ZoneoutCell,
// BidirectionalCell) against their cells run by hand, valid_length against each sequence unrolled
// alone, finite differences of their unrolls' gradients, their names and their errors.
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

// --- The cells that stack, wrap or combine cells ----------------------------------------------

namespace {

using mx::test_utils::almost_equal;

// An LSTMCell and a GRUCell with explicit prefixes, so that the names are known.
rnn::LSTMCell lstm_cell(std::int64_t hidden, const std::string& prefix) {
  return rnn::LSTMCell(hidden, 0, {}, {}, mx::init::Zero(), mx::init::Zero(), prefix);
}
rnn::GRUCell gru_cell(std::int64_t hidden, const std::string& prefix) {
  return rnn::GRUCell(hidden, 0, {}, {}, mx::init::Zero(), mx::init::Zero(), prefix);
}

std::vector<std::string> sorted_names(const mx::gluon::Block& block) {
  std::vector<std::string> names;
  for (const auto& entry : block.collect_params()) names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

// Random states of the cell's shapes for a batch, on ctx.
rnn::RecurrentCell::States random_states(const rnn::RecurrentCell& cell, std::int64_t batch, mx::Context ctx,
                                         unsigned seed) {
  rnn::RecurrentCell::States states;
  for (const mx::Shape& s : cell.state_shapes(batch)) states.push_back(ndg_test::random_array(s, ctx, seed++));
  return states;
}

void check_states_equal(const rnn::RecurrentCell::States& got, const rnn::RecurrentCell::States& want,
                        double rtol = 0, double atol = 0) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    BOOST_TEST_CONTEXT("state " << i) { BOOST_TEST(almost_equal(got[i], want[i], rtol, atol)); }
  }
}

// The gradient of sum(unroll(x) * weights) with respect to every 3rd element of the parameter
// `name`, by autograd, against central differences. float64 (the cell cast), so that the
// differences are exact to ~1e-8.
void check_unroll_gradient(rnn::RecurrentCell& cell, const std::string& name, const nd::NDArray& x) {
  const std::int64_t length = x.shape()[1];
  const mx::Context ctx = x.context();
  mx::gluon::Parameter param = cell.collect_params()[name];
  // Fixed random weights of the outputs, so that the gradients of no two outputs cancel.
  const nd::NDArray weights =
      ndg_test::random_array(cell.unroll(length, x).first.shape(), ctx, 31).astype(mx::DType::float64);
  const auto loss = [&cell, &x, &weights, length] {
    return (cell.unroll(length, x).first * weights).sum().asscalar<double>();
  };
  {
    auto rec = mx::autograd::record();
    nd::NDArray l = (cell.unroll(length, x).first * weights).sum();
    l.backward();
  }
  const Values grad = ndg_test::values(param.grad(ctx));
  nd::NDArray data = param.data(ctx);
  const Values base = ndg_test::values(data);
  const double eps = 1e-5;
  for (std::size_t i = 0; i < base.size(); i += 3) {
    Values plus = base, minus = base;
    plus[i] += eps;
    minus[i] -= eps;
    nd::array(plus, data.shape(), ctx, mx::DType::float64).copyto(data);
    const double up = loss();
    nd::array(minus, data.shape(), ctx, mx::DType::float64).copyto(data);
    const double down = loss();
    nd::array(base, data.shape(), ctx, mx::DType::float64).copyto(data);
    const double numeric = (up - down) / (2 * eps);
    BOOST_TEST(std::abs(numeric - grad[i]) < 1e-6 + 1e-5 * std::abs(numeric),
               name << "[" << i << "]: finite differences " << numeric << " vs autograd " << grad[i]);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rnn_composite_cells)

BOOST_AUTO_TEST_CASE(parameters_keep_the_names_of_the_cells_inside) {
  // MXNet's rnn layers build BidirectionalCell(LSTMCell(prefix='l0_'), LSTMCell(prefix='r0_')).
  rnn::BidirectionalCell bi(lstm_cell(3, "l0_"), lstm_cell(3, "r0_"));
  BOOST_TEST(sorted_names(bi) ==
                 (std::vector<std::string>{"l0_h2h_bias", "l0_h2h_weight", "l0_i2h_bias", "l0_i2h_weight", "r0_h2h_bias",
                                           "r0_h2h_weight", "r0_i2h_bias", "r0_i2h_weight"}),
             boost::test_tools::per_element());
  BOOST_TEST(bi.prefix().rfind("bidirectionalcell", 0) == 0u);
  std::vector<std::string> structural;
  for (const auto& entry : bi.structural_params()) structural.push_back(entry.first);
  BOOST_TEST(structural.front() == "l_cell.i2h_weight");  // MXNet's child names l_cell, r_cell
  BOOST_TEST(structural.back() == "r_cell.h2h_bias");

  rnn::SequentialRNNCell stack;
  stack.add(lstm_cell(3, "s0_"), rnn::DropoutCell(0.5), gru_cell(3, "s1_"));
  BOOST_TEST(stack.prefix().rfind("sequentialrnncell", 0) == 0u);
  BOOST_TEST(stack.size() == 3u);
  BOOST_TEST(sorted_names(stack) ==
                 (std::vector<std::string>{"s0_h2h_bias", "s0_h2h_weight", "s0_i2h_bias", "s0_i2h_weight", "s1_h2h_bias",
                                           "s1_h2h_weight", "s1_i2h_bias", "s1_i2h_weight"}),
             boost::test_tools::per_element());
  BOOST_TEST(stack.structural_params().front().first == "0.i2h_weight");
  BOOST_TEST(stack[1].prefix().rfind("dropout", 0) == 0u);
  BOOST_TEST(stack[1].collect_params().size() == 0u);

  // A modifier's prefix is its base's + its alias; its parameters are its base's.
  rnn::GRUCell gru = gru_cell(3, "g0_");
  rnn::ZoneoutCell zoneout(gru, 0.2, 0.1);
  BOOST_TEST(zoneout.prefix() == "g0_zoneout");
  BOOST_TEST(sorted_names(zoneout) == sorted_names(gru), boost::test_tools::per_element());
  BOOST_TEST(zoneout.structural_params().front().first == "base_cell.i2h_weight");
  rnn::ResidualCell residual(lstm_cell(3, "res0_"));
  BOOST_TEST(residual.prefix() == "res0_residualcell");
  BOOST_TEST(residual.collect_params().size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_sequential_cell_equals_its_cells_run_by_hand) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::LSTMCell lstm(4);
    rnn::GRUCell gru(3);
    rnn::SequentialRNNCell stack;
    stack.add(lstm, gru);
    stack.initialize(mx::init::Uniform(0.5), ctx);
    // The states: the LSTM's (h, c), then the GRU's h.
    const std::vector<mx::Shape> shapes = stack.state_shapes(2);
    BOOST_TEST(shapes == (std::vector<mx::Shape>{{2, 4}, {2, 4}, {2, 3}}), boost::test_tools::per_element());
    BOOST_TEST(stack.begin_state(2, ctx).size() == 3u);

    const nd::NDArray x = ndg_test::random_array({2, 5}, ctx, 3);
    const rnn::RecurrentCell::States states = random_states(stack, 2, ctx, 4);
    const auto [y, next] = stack.step(x, states);
    const auto [y_lstm, next_lstm] = lstm.step(x, {states[0], states[1]});
    const auto [y_gru, next_gru] = gru.step(y_lstm, {states[2]});
    BOOST_TEST(almost_equal(y, y_gru, 0, 0));
    check_states_equal(next, {next_lstm[0], next_lstm[1], next_gru[0]});

    // unroll: each cell unrolled over the sequence in turn, from the given states.
    const nd::NDArray xs = ndg_test::random_array({2, 6, 5}, ctx, 8);
    const auto [ys, last] = stack.unroll(6, xs, states);
    const auto [ys_lstm, last_lstm] = lstm.unroll(6, xs, {states[0], states[1]});
    const auto [ys_gru, last_gru] = gru.unroll(6, ys_lstm, {states[2]});
    BOOST_TEST(ys.shape() == (mx::Shape{2, 6, 3}));
    BOOST_TEST(almost_equal(ys, ys_gru, 0, 0));
    check_states_equal(last, {last_lstm[0], last_lstm[1], last_gru[0]});
    // And unrolled one step at a time by the stack itself.
    rnn::RecurrentCell::States s = states;
    for (std::int64_t t = 0; t < 6; ++t) {
      auto [y_t, next_t] = stack.step(nd::slice_axis(xs, 1, t, t + 1).reshape({2, 5}), s);
      BOOST_TEST(almost_equal(nd::slice_axis(ys, 1, t, t + 1).reshape({2, 3}), y_t, 0, 0));
      s = next_t;
    }
    check_states_equal(s, last);
  });
}

BOOST_AUTO_TEST_CASE(a_residual_cell_adds_the_input_to_its_base_output) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::GRUCell gru(3);
    rnn::ResidualCell residual(gru);
    residual.initialize(mx::init::Uniform(0.5), ctx);
    BOOST_TEST(residual.state_shapes(2) == gru.state_shapes(2), boost::test_tools::per_element());
    const nd::NDArray x = ndg_test::random_array({2, 3}, ctx, 5);
    const rnn::RecurrentCell::States states = random_states(residual, 2, ctx, 6);
    const auto [y, next] = residual.step(x, states);
    const auto [y_gru, next_gru] = gru.step(x, states);
    BOOST_TEST(almost_equal(y, y_gru + x, 0, 0));
    check_states_equal(next, next_gru);

    const nd::NDArray xs = ndg_test::random_array({4, 2, 3}, ctx, 9);  // "TNC"
    const auto [ys, last] = residual.unroll(4, xs, {}, "TNC");
    const auto [ys_gru, last_gru] = gru.unroll(4, xs, {}, "TNC");
    BOOST_TEST(almost_equal(ys, ys_gru + xs, 0, 0));
    check_states_equal(last, last_gru);
  });
}

BOOST_AUTO_TEST_CASE(a_dropout_cell_is_the_identity_in_prediction_and_drops_in_training) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::DropoutCell cell(0.4);
    BOOST_TEST(cell.state_shapes(8).empty());
    const nd::NDArray x = ndg_test::random_array({8, 16}, ctx, 12);
    const auto [y, states] = cell.step(x, {});
    BOOST_TEST(almost_equal(y, x, 0, 0));
    BOOST_TEST(states.empty());
    const nd::NDArray xs = ndg_test::random_array({4, 5, 6}, ctx, 13);
    BOOST_TEST(almost_equal(cell.unroll(5, xs).first, xs, 0, 0));

    // In training: each element 0 or x / (1 - p), both seen among 128.
    const auto train = mx::autograd::train_mode();
    const Values in = ndg_test::values(x), out = ndg_test::values(cell.step(x, {}).first);
    std::size_t zeros = 0, kept = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (out[i] == 0) {
        ++zeros;
      } else {
        BOOST_TEST(std::abs(out[i] - in[i] / 0.6) <= 1e-6 * std::abs(in[i] / 0.6), i << ": " << out[i] << " from " << in[i]);
        ++kept;
      }
    }
    BOOST_TEST(zeros > 0u);
    BOOST_TEST(kept > 0u);
    // axes {0}: one mask shared by the batch, so a column is dropped or kept as a whole.
    rnn::DropoutCell shared(0.5, {0});
    const Values col = ndg_test::values(shared.step(x, {}).first);
    std::size_t dropped_columns = 0;
    for (std::size_t c = 0; c < 16; ++c) {
      const bool dropped = col[c] == 0;
      dropped_columns += dropped;
      for (std::size_t r = 0; r < 8; ++r) {
        const double want = dropped ? 0.0 : in[r * 16 + c] / 0.5;
        BOOST_TEST(std::abs(col[r * 16 + c] - want) <= 1e-6 * std::abs(want), "(" << r << ", " << c << ")");
      }
    }
    BOOST_TEST(dropped_columns > 0u);
    BOOST_TEST(dropped_columns < 16u);
    // unroll drops over the whole sequence and hands the states back.
    rnn::RecurrentCell::States given{nd::ones({4, 2}, ctx)};
    const auto [ys, kept_states] = cell.unroll(5, xs, given);
    BOOST_TEST(ys.shape() == xs.shape());
    BOOST_TEST(kept_states.size() == 1u);
    BOOST_TEST(kept_states[0].is(given[0]));
  });
}

BOOST_AUTO_TEST_CASE(a_zoneout_cell_is_its_base_in_prediction_and_keeps_old_values_in_training) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::LSTMCell lstm(16);
    rnn::ZoneoutCell zoneout(lstm, 0.5, 0.5);
    zoneout.initialize(mx::init::Uniform(0.5), ctx);
    const nd::NDArray x = ndg_test::random_array({4, 3}, ctx, 21);
    const rnn::RecurrentCell::States states = random_states(zoneout, 4, ctx, 22);
    {
      const auto [y, next] = zoneout.step(x, states);
      const auto [y_base, next_base] = lstm.step(x, states);
      BOOST_TEST(almost_equal(y, y_base, 0, 0));
      check_states_equal(next, next_base);
      const nd::NDArray xs = ndg_test::random_array({4, 5, 3}, ctx, 23);
      BOOST_TEST(almost_equal(zoneout.unroll(5, xs).first, lstm.unroll(5, xs).first, 0, 0));
    }

    // In training, each element is the previous value (the output: zeros at the first step, then
    // the previous step's output) or the base cell's new one; both occur among 64.
    const auto train = mx::autograd::train_mode();
    zoneout.reset();
    std::size_t old_count = 0, new_count = 0;
    const auto tally = [&old_count, &new_count](const Values& got, const Values& old_v, const Values& new_v) {
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i] == new_v[i]) {
          ++new_count;
        } else {
          BOOST_TEST(got[i] == old_v[i], i << ": " << got[i] << " is neither " << old_v[i] << " nor " << new_v[i]);
          ++old_count;
        }
      }
    };
    rnn::RecurrentCell::States s = states;
    Values prev_output(64, 0.0);
    for (int t = 0; t < 2; ++t) {
      const auto [y, next] = zoneout.step(x, s);
      const auto [y_base, next_base] = lstm.step(x, s);  // an LSTM step draws nothing
      tally(ndg_test::values(y), prev_output, ndg_test::values(y_base));
      for (std::size_t i = 0; i < s.size(); ++i) {
        tally(ndg_test::values(next[i]), ndg_test::values(s[i]), ndg_test::values(next_base[i]));
      }
      prev_output = ndg_test::values(y);
      s = next;
    }
    BOOST_TEST(old_count > 0u);
    BOOST_TEST(new_count > 0u);
    // begin_state starts a new sequence: the previous output is zeros again, so an output that
    // keeps its old value is 0.
    const rnn::RecurrentCell::States fresh = zoneout.begin_state(4, ctx);
    const Values y0 = ndg_test::values(zoneout.step(x, fresh).first);
    const Values y0_base = ndg_test::values(lstm.step(x, fresh).first);
    for (std::size_t i = 0; i < y0.size(); ++i) BOOST_TEST((y0[i] == 0 || y0[i] == y0_base[i]));
  });
}

BOOST_AUTO_TEST_CASE(a_bidirectional_cell_unrolls_forward_and_backward) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::LSTMCell l_cell = lstm_cell(4, "bl0_");
    rnn::GRUCell r_cell = gru_cell(3, "br0_");
    rnn::BidirectionalCell bi(l_cell, r_cell);
    bi.initialize(mx::init::Uniform(0.5), ctx);
    BOOST_TEST(bi.state_shapes(2) == (std::vector<mx::Shape>{{2, 4}, {2, 4}, {2, 3}}), boost::test_tools::per_element());
    for (const std::string layout : {"NTC", "TNC"}) {
      BOOST_TEST_CONTEXT(layout) {
        const int time_axis = layout == "NTC" ? 1 : 0;
        const nd::NDArray xs = ndg_test::random_array(layout == "NTC" ? mx::Shape{2, 5, 3} : mx::Shape{5, 2, 3}, ctx, 41);
        const rnn::RecurrentCell::States states = random_states(bi, 2, ctx, 42);
        const auto [ys, last] = bi.unroll(5, xs, states, layout);
        const auto [l_ys, l_last] = l_cell.unroll(5, xs, {states[0], states[1]}, layout);
        const auto [r_ys, r_last] = r_cell.unroll(5, nd::reverse(xs, {time_axis}), {states[2]}, layout);
        BOOST_TEST(ys.shape()[2] == 7);
        BOOST_TEST(almost_equal(ys, nd::concat({l_ys, nd::reverse(r_ys, {time_axis})}, 2), 0, 0));
        check_states_equal(last, {l_last[0], l_last[1], r_last[0]});
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(unroll_with_valid_length_is_each_sequence_unrolled_alone) {
  ndg_test::for_each_context([](mx::Context ctx) {
    rnn::LSTMCell l_cell(4);
    rnn::LSTMCell r_cell(4);
    rnn::BidirectionalCell bi(l_cell, r_cell);
    rnn::SequentialRNNCell stack;
    stack.add(rnn::GRUCell(3), rnn::ResidualCell(rnn::RNNCell(3)));
    bi.initialize(mx::init::Uniform(0.5), ctx);
    stack.initialize(mx::init::Uniform(0.5), ctx);
    const nd::NDArray xs = ndg_test::random_array({2, 5, 3}, ctx, 51);
    const nd::NDArray valid_length = nd::array({3, 5}, ctx);
    for (rnn::RecurrentCell* cell : std::vector<rnn::RecurrentCell*>{&l_cell, &bi, &stack}) {
      BOOST_TEST_CONTEXT(cell->name()) {
        const auto [ys, last] = cell->unroll(5, xs, {}, "NTC", valid_length);
        for (std::int64_t n = 0; n < 2; ++n) {
          const std::int64_t len = n == 0 ? 3 : 5;
          const nd::NDArray alone = nd::slice_axis(nd::slice_axis(xs, 0, n, n + 1), 1, 0, len);
          const auto [ys_alone, last_alone] = cell->unroll(len, alone);
          const nd::NDArray row = nd::slice_axis(ys, 0, n, n + 1);
          BOOST_TEST(almost_equal(nd::slice_axis(row, 1, 0, len), ys_alone, 1e-5, 1e-6));
          if (len < 5) BOOST_TEST(almost_equal(nd::slice_axis(row, 1, len, 5), nd::zeros({1, 5 - len, ys.shape()[2]}, ctx), 0, 0));
          BOOST_TEST_REQUIRE(last.size() == last_alone.size());
          for (std::size_t i = 0; i < last.size(); ++i) {
            BOOST_TEST(almost_equal(nd::slice_axis(last[i], 0, n, n + 1), last_alone[i], 1e-5, 1e-6));
          }
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(gradients_of_sequential_and_bidirectional_unrolls_match_finite_differences) {
  ndg_test::for_each_context([](mx::Context ctx) {
    const nd::NDArray x = ndg_test::random_array({2, 3, 2}, ctx, 61).astype(mx::DType::float64);
    rnn::SequentialRNNCell stack;
    stack.add(lstm_cell(3, "gs0_"), rnn::ResidualCell(gru_cell(3, "gs1_")));
    stack.initialize(mx::init::Uniform(0.5), ctx);
    stack.cast(mx::DType::float64);
    check_unroll_gradient(stack, "gs0_i2h_weight", x);
    check_unroll_gradient(stack, "gs1_h2h_weight", x);

    rnn::BidirectionalCell bi(lstm_cell(2, "gl0_"), gru_cell(3, "gr0_"));
    bi.initialize(mx::init::Uniform(0.5), ctx);
    bi.cast(mx::DType::float64);
    check_unroll_gradient(bi, "gl0_h2h_weight", x);
    check_unroll_gradient(bi, "gr0_i2h_weight", x);
    check_unroll_gradient(bi, "gr0_h2h_bias", x);
  });
}

BOOST_AUTO_TEST_CASE(bad_use_of_the_composite_cells_is_refused) {
  const nd::NDArray x = nd::ones({2, 3});
  const nd::NDArray xs = nd::ones({2, 4, 3});

  rnn::BidirectionalCell bi(rnn::LSTMCell(3), rnn::LSTMCell(3));
  bi.initialize(mx::init::Xavier(), mx::cpu());
  NDG_CHECK_THROWS_WITH(bi.step(x, bi.begin_state(2)), mx::ValueError, bi.name(), "cannot be stepped",
                        "Please use unroll");
  NDG_CHECK_THROWS_WITH(bi(x), mx::ValueError, "cannot be stepped");
  NDG_CHECK_THROWS_WITH(bi.unroll(4, xs, {nd::zeros({2, 3})}), mx::ShapeError, "1 begin states", "has 4");
  NDG_CHECK_THROWS_WITH(bi.unroll(4, xs, {}, "NTC", nd::array({1, 2, 3})), mx::ShapeError, "valid_length", "(2,)");
  NDG_CHECK_THROWS_WITH(rnn::ZoneoutCell(bi, 0.1), mx::ValueError, "ZoneoutCell", "BidirectionalCell", "doesn't support zoneout");
  // A stack holding one unrolls, but neither steps nor takes zoneout.
  rnn::SequentialRNNCell with_bi;
  with_bi.add(bi);
  BOOST_TEST(with_bi.unroll(4, xs).first.shape() == (mx::Shape{2, 4, 6}));
  NDG_CHECK_THROWS_WITH(with_bi.step(x, with_bi.begin_state(2)), mx::ValueError, "cannot be stepped");
  NDG_CHECK_THROWS_WITH(rnn::ZoneoutCell(with_bi, 0.1), mx::ValueError, with_bi.name() + " holds BidirectionalCell");

  rnn::SequentialRNNCell empty;
  NDG_CHECK_THROWS_WITH(empty.step(x, {}), mx::ValueError, empty.name(), "has no cells");
  NDG_CHECK_THROWS_WITH(empty.unroll(4, xs), mx::ValueError, "has no cells");
  NDG_CHECK_THROWS_WITH(empty.begin_state(2), mx::ValueError, "has no cells");

  NDG_CHECK_THROWS_WITH(rnn::DropoutCell(1.0), mx::ValueError, "DropoutCell", "rate must be in [0, 1)");
  NDG_CHECK_THROWS_WITH(rnn::DropoutCell(-0.1), mx::ValueError, "rate must be in [0, 1)");
  NDG_CHECK_THROWS_WITH(rnn::DropoutCell(0.5).step(x, {nd::ones({2, 3})}), mx::ShapeError, "1 states given", "has 0");
  {
    const auto train = mx::autograd::train_mode();
    NDG_CHECK_THROWS_WITH(rnn::DropoutCell(0.5, {2}).step(x, {}), mx::ValueError, "axis 2", "(2, 3)");
  }

  rnn::LSTMCell lstm(3);
  lstm.initialize(mx::init::Xavier(), mx::cpu());
  NDG_CHECK_THROWS_WITH(rnn::ZoneoutCell(lstm, 1.0), mx::ValueError, "zoneout_outputs must be in [0, 1)");
  NDG_CHECK_THROWS_WITH(rnn::ZoneoutCell(lstm, 0.0, -0.5), mx::ValueError, "zoneout_states must be in [0, 1)");
  BOOST_TEST(lstm.begin_state(2).size() == 2u);  // a refused modifier leaves its base as it was
  rnn::ZoneoutCell zoneout(lstm, 0.5, 0.5);
  NDG_CHECK_THROWS_WITH(lstm.begin_state(2), mx::ValueError, lstm.name(), "call the modifier cell instead");
  NDG_CHECK_THROWS_WITH(rnn::ResidualCell{lstm}, mx::ValueError, lstm.name(), "cannot be modified twice");
  BOOST_TEST(zoneout.begin_state(2).size() == 2u);
  {
    // A batch of another size without a new sequence: the previous output does not fit.
    const auto train = mx::autograd::train_mode();
    zoneout.step(x, zoneout.begin_state(2));
    NDG_CHECK_THROWS_WITH(zoneout.step(nd::ones({3, 3}), random_states(zoneout, 3, mx::cpu(), 1)), mx::ShapeError,
                          "previous step's output", "reset()");
  }

  rnn::ResidualCell residual(rnn::GRUCell(4));
  residual.initialize(mx::init::Xavier(), mx::cpu());
  NDG_CHECK_THROWS_WITH(residual.step(x, residual.begin_state(2)), mx::ShapeError, "ResidualCell", "(2, 4)", "(2, 3)");
  NDG_CHECK_THROWS_WITH(residual.unroll(4, xs), mx::ShapeError, "hidden size must be the input size");
  NDG_CHECK_THROWS_WITH(residual.unroll(4, xs, {}, "CTN"), mx::ValueError, residual.name(), "layout \"CTN\"");
}

BOOST_AUTO_TEST_SUITE_END()
