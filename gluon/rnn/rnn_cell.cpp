#include "gluon/rnn/rnn_cell.hpp"

#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/shape_ops.hpp"

namespace mx::gluon::rnn {

RecurrentCell::RecurrentCell(const std::string& kind, const std::string& prefix, std::int64_t hidden_size,
                             std::int64_t gates, std::int64_t input_size, init::InitializerRef i2h_weight_init,
                             init::InitializerRef h2h_weight_init, init::InitializerRef i2h_bias_init,
                             init::InitializerRef h2h_bias_init)
    : Block(kind, prefix), hidden_size_(hidden_size), gates_(gates) {
  if (hidden_size < 1) throw ValueError(kind + " cell: hidden_size must be >= 1, got " + std::to_string(hidden_size));
  if (input_size < 0) {
    throw ValueError(kind + " cell: input_size must be >= 0 (0 = infer at the first step), got " +
                     std::to_string(input_size));
  }
  register_parameter("i2h_weight", Shape{gates * hidden_size, input_size}, std::move(i2h_weight_init));
  register_parameter("h2h_weight", Shape{gates * hidden_size, hidden_size}, std::move(h2h_weight_init));
  register_parameter("i2h_bias", Shape{gates * hidden_size}, std::move(i2h_bias_init));
  register_parameter("h2h_bias", Shape{gates * hidden_size}, std::move(h2h_bias_init));
}

RecurrentCell::States RecurrentCell::begin_state(std::int64_t batch, Context ctx, DType dtype) const {
  States states;
  for (const Shape& s : state_shapes(batch)) states.push_back(nd::zeros(s, ctx, dtype));
  return states;
}

void RecurrentCell::check_states(const nd::NDArray& x, const States& states) const {
  nd::check_not_none(name().c_str(), x);
  if (x.ndim() != 2) {
    throw ShapeError(name() + ": a step's input must be (batch, input_size), got " + nd::describe(x));
  }
  const std::vector<Shape> want = state_shapes(x.shape()[0]);
  if (states.size() != want.size()) {
    throw ShapeError(name() + ": " + std::to_string(states.size()) + " states given, the cell has " +
                     std::to_string(want.size()));
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    nd::check_not_none(name().c_str(), states[i]);
    if (states[i].shape() != want[i]) {
      throw ShapeError(name() + ": state " + std::to_string(i) + " is " + nd::describe(states[i]) + ", the cell needs " +
                       want[i].tuple_str() + " for input " + nd::describe(x));
    }
    if (states[i].context() != x.context()) {
      throw ContextMismatch(name() + ": state " + std::to_string(i) + " is on " + states[i].context().str() +
                            " but the input is on " + x.context().str() + "; move one with as_in_context");
    }
  }
}

nd::NDArray RecurrentCell::i2h(const nd::NDArray& x) {
  Parameter w = parameter("i2h_weight");
  w.check_initialized();
  if (w.is_deferred()) {
    w.infer_shape(Shape{gates_ * hidden_size_, x.shape()[1]});
  } else if (w.shape()[1] != x.shape()[1]) {
    throw ShapeError(name() + ": input " + nd::describe(x) + " has " + std::to_string(x.shape()[1]) +
                     " features, the i2h weight " + w.shape().tuple_str() + " expects " + std::to_string(w.shape()[1]));
  }
  return nd::FullyConnected(x, w.data(x.context()), parameter("i2h_bias").data(x.context()), gates_ * hidden_size_);
}

nd::NDArray RecurrentCell::h2h(const nd::NDArray& h) {
  return nd::FullyConnected(h, parameter("h2h_weight").data(h.context()), parameter("h2h_bias").data(h.context()),
                            gates_ * hidden_size_);
}

nd::NDArray RecurrentCell::forward(const nd::NDArray& x) {
  nd::check_not_none(name().c_str(), x);
  return step(x, begin_state(x.ndim() > 0 ? x.shape()[0] : 0, x.context(), x.dtype())).first;
}

std::pair<nd::NDArray, RecurrentCell::States> RecurrentCell::unroll(std::int64_t length, const nd::NDArray& inputs,
                                                                     States states, const std::string& layout) {
  nd::check_not_none(name().c_str(), inputs);
  if (layout != "NTC" && layout != "TNC") {
    throw ValueError(name() + ": layout \"" + layout + "\" is not \"NTC\" or \"TNC\"");
  }
  const int time_axis = layout == "NTC" ? 1 : 0;
  if (inputs.ndim() != 3 || inputs.shape()[time_axis] != length || length < 1) {
    throw ShapeError(name() + ": unroll(" + std::to_string(length) + ") needs inputs of " + std::to_string(length) +
                     " steps laid out " + layout + ", got " + nd::describe(inputs));
  }
  if (states.empty()) states = begin_state(inputs.shape()[1 - time_axis], inputs.context(), inputs.dtype());
  const std::vector<nd::NDArray> steps =
      length == 1 ? std::vector<nd::NDArray>{inputs.reshape({inputs.shape()[1 - time_axis], inputs.shape()[2]})}
                  : nd::split(inputs, static_cast<int>(length), time_axis, true);
  std::vector<nd::NDArray> outputs;
  outputs.reserve(steps.size());
  for (const nd::NDArray& x : steps) {
    auto [y, next] = step(x, states);
    outputs.push_back(std::move(y));
    states = std::move(next);
  }
  return {nd::stack(outputs, time_axis), std::move(states)};
}

// --- RNNCell -------------------------------------------------------------------------------------

RNNCell::RNNCell(std::int64_t hidden_size, const std::string& activation, std::int64_t input_size,
                 init::InitializerRef i2h_weight_initializer, init::InitializerRef h2h_weight_initializer,
                 init::InitializerRef i2h_bias_initializer, init::InitializerRef h2h_bias_initializer,
                 const std::string& prefix)
    : RecurrentCell("rnn", prefix, hidden_size, 1, input_size, std::move(i2h_weight_initializer),
                    std::move(h2h_weight_initializer), std::move(i2h_bias_initializer), std::move(h2h_bias_initializer)),
      relu_(activation == "relu") {
  if (activation != "tanh" && activation != "relu") {
    throw ValueError("RNNCell: activation \"" + activation + "\" is not \"tanh\" or \"relu\"");
  }
}

std::vector<Shape> RNNCell::state_shapes(std::int64_t batch) const { return {Shape{batch, hidden_size_}}; }

std::pair<nd::NDArray, RecurrentCell::States> RNNCell::step(const nd::NDArray& x, const States& states) {
  check_states(x, states);
  const nd::NDArray g = i2h(x) + h2h(states[0]);
  nd::NDArray h = relu_ ? nd::relu(g) : nd::tanh(g);
  return {h, {h}};
}

// --- LSTMCell ------------------------------------------------------------------------------------

LSTMCell::LSTMCell(std::int64_t hidden_size, std::int64_t input_size, init::InitializerRef i2h_weight_initializer,
                   init::InitializerRef h2h_weight_initializer, init::InitializerRef i2h_bias_initializer,
                   init::InitializerRef h2h_bias_initializer, const std::string& prefix)
    : RecurrentCell("lstm", prefix, hidden_size, 4, input_size, std::move(i2h_weight_initializer),
                    std::move(h2h_weight_initializer), std::move(i2h_bias_initializer), std::move(h2h_bias_initializer)) {}

std::vector<Shape> LSTMCell::state_shapes(std::int64_t batch) const {
  return {Shape{batch, hidden_size_}, Shape{batch, hidden_size_}};
}

std::pair<nd::NDArray, RecurrentCell::States> LSTMCell::step(const nd::NDArray& x, const States& states) {
  check_states(x, states);
  const std::vector<nd::NDArray> g = nd::split(i2h(x) + h2h(states[0]), 4, 1);
  const nd::NDArray c = nd::sigmoid(g[1]) * states[1] + nd::sigmoid(g[0]) * nd::tanh(g[2]);
  nd::NDArray h = nd::sigmoid(g[3]) * nd::tanh(c);
  return {h, {h, c}};
}

// --- GRUCell -------------------------------------------------------------------------------------

GRUCell::GRUCell(std::int64_t hidden_size, std::int64_t input_size, init::InitializerRef i2h_weight_initializer,
                 init::InitializerRef h2h_weight_initializer, init::InitializerRef i2h_bias_initializer,
                 init::InitializerRef h2h_bias_initializer, const std::string& prefix)
    : RecurrentCell("gru", prefix, hidden_size, 3, input_size, std::move(i2h_weight_initializer),
                    std::move(h2h_weight_initializer), std::move(i2h_bias_initializer), std::move(h2h_bias_initializer)) {}

std::vector<Shape> GRUCell::state_shapes(std::int64_t batch) const { return {Shape{batch, hidden_size_}}; }

// The new gate reads r * (W_hn h + b_hn), so i2h and h2h stay apart here (MXNet's GRUCell).
std::pair<nd::NDArray, RecurrentCell::States> GRUCell::step(const nd::NDArray& x, const States& states) {
  check_states(x, states);
  const std::vector<nd::NDArray> i = nd::split(i2h(x), 3, 1), hh = nd::split(h2h(states[0]), 3, 1);
  const nd::NDArray& h = states[0];
  const nd::NDArray r = nd::sigmoid(i[0] + hh[0]), z = nd::sigmoid(i[1] + hh[1]);
  const nd::NDArray n = nd::tanh(i[2] + r * hh[2]);
  nd::NDArray next = (1.0 - z) * n + z * h;
  return {next, {next}};
}

}  // namespace mx::gluon::rnn
