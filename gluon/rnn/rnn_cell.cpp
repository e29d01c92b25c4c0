#include "gluon/rnn/rnn_cell.hpp"

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/elementwise.hpp"
#include "ndarray/ops/indexing.hpp"
#include "ndarray/ops/manipulation.hpp"
#include "ndarray/ops/nn.hpp"
#include "ndarray/ops/shape_ops.hpp"

namespace mx::gluon::rnn {

namespace {

// inputs cut into `length` steps along the time axis, each (batch, input).
std::vector<nd::NDArray> split_steps(const nd::NDArray& inputs, std::int64_t length, int time_axis) {
  if (length == 1) return {inputs.reshape({inputs.shape()[1 - time_axis], inputs.shape()[2]})};
  return nd::split(inputs, static_cast<int>(length), time_axis, true);
}

// x with its time axis reversed: every step, or each sequence's first valid_length steps (the
// padding kept at the end, MXNet's SequenceReverse, which reads time on axis 0 only).
nd::NDArray reverse_time(const nd::NDArray& x, int time_axis, const nd::NDArray& valid_length) {
  if (valid_length.is_none()) return nd::reverse(x, {time_axis});
  if (time_axis == 0) return nd::SequenceReverse(x, valid_length, true, 0);
  return nd::swapaxes(nd::SequenceReverse(nd::swapaxes(x, 0, 1), valid_length, true, 0), 0, 1);
}

// The steps past each sequence's valid length set to zero (the inputs unchanged without lengths).
nd::NDArray mask_padding(const nd::NDArray& x, int time_axis, const nd::NDArray& valid_length) {
  return valid_length.is_none() ? x : nd::SequenceMask(x, valid_length, true, 0, time_axis);
}

// ResidualCell's sum needs the base cell's output shaped as its input.
void check_residual(const std::string& cell, const nd::NDArray& output, const nd::NDArray& input) {
  if (output.shape() != input.shape()) {
    throw ShapeError("ResidualCell " + cell + ": the base cell's output " + nd::describe(output) +
                     " cannot be added to the input " + nd::describe(input) +
                     "; the base cell's hidden size must be the input size");
  }
}

void check_rate(const std::string& cell, const char* what, double rate) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    throw ValueError(cell + ": " + what + " must be in [0, 1), got " + std::to_string(rate));
  }
}

}  // namespace

// --- RecurrentCell -------------------------------------------------------------------------------

RecurrentCell::RecurrentCell(const std::string& kind, const std::string& prefix) : Block(kind, prefix) {}

RecurrentCell::States RecurrentCell::begin_state(std::int64_t batch, Context ctx, DType dtype) const {
  if (*modified_) {
    throw ValueError(name() + ": after applying modifier cells (e.g. ZoneoutCell) the base cell cannot be called "
                              "directly; call the modifier cell instead");
  }
  return zero_states(batch, ctx, dtype);
}

RecurrentCell::States RecurrentCell::zero_states(std::int64_t batch, Context ctx, DType dtype) const {
  States states;
  for (const Shape& s : state_shapes(batch)) states.push_back(nd::zeros(s, ctx, dtype));
  return states;
}

void RecurrentCell::mark_modified(const RecurrentCell& base, const std::string& by) {
  if (*base.modified_) {
    throw ValueError(by + ": cell " + base.name() + " is already modified; one cell cannot be modified twice");
  }
  *base.modified_ = true;
}

RecurrentCell& RecurrentCell::cell_at(std::size_t i) const { return dynamic_cast<RecurrentCell&>(child(i)); }

void RecurrentCell::reset() {
  for (std::size_t i = 0; i < num_children(); ++i) {
    if (auto* cell = dynamic_cast<RecurrentCell*>(&child(i))) cell->reset();
  }
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

int RecurrentCell::check_sequence(std::int64_t length, const nd::NDArray& inputs, const std::string& layout) const {
  nd::check_not_none(name().c_str(), inputs);
  if (layout != "NTC" && layout != "TNC") {
    throw ValueError(name() + ": layout \"" + layout + "\" is not \"NTC\" or \"TNC\"");
  }
  const int time_axis = layout == "NTC" ? 1 : 0;
  if (inputs.ndim() != 3 || inputs.shape()[time_axis] != length || length < 1) {
    throw ShapeError(name() + ": unroll(" + std::to_string(length) + ") needs inputs of " + std::to_string(length) +
                     " steps laid out " + layout + ", got " + nd::describe(inputs));
  }
  return time_axis;
}

void RecurrentCell::check_valid_length(const nd::NDArray& valid_length, const nd::NDArray& inputs,
                                       int time_axis) const {
  if (valid_length.is_none()) return;
  const std::int64_t batch = inputs.shape()[1 - time_axis];
  if (valid_length.ndim() != 1 || valid_length.shape()[0] != batch) {
    throw ShapeError(name() + ": valid_length must be (batch,) = (" + std::to_string(batch) + ",) for inputs " +
                     nd::describe(inputs) + ", got " + nd::describe(valid_length));
  }
  if (valid_length.context() != inputs.context()) {
    throw ContextMismatch(name() + ": valid_length is on " + valid_length.context().str() + " but the inputs are on " +
                          inputs.context().str() + "; move one with as_in_context");
  }
}

RecurrentCell::States RecurrentCell::unroll_states(States given, const nd::NDArray& inputs, int time_axis) const {
  const std::int64_t batch = inputs.shape()[1 - time_axis];
  if (given.empty()) return zero_states(batch, inputs.context(), inputs.dtype());
  const std::size_t want = state_shapes(batch).size();
  if (given.size() != want) {
    throw ShapeError(name() + ": unroll was given " + std::to_string(given.size()) + " begin states, the cell has " +
                     std::to_string(want));
  }
  return given;
}

nd::NDArray RecurrentCell::forward(const nd::NDArray& x) {
  nd::check_not_none(name().c_str(), x);
  return step(x, zero_states(x.ndim() > 0 ? x.shape()[0] : 0, x.context(), x.dtype())).first;
}

// Steps one at a time (MXNet's unroll); with valid_length, the states of every step are kept so
// that each sequence's last valid one can be picked.
std::pair<nd::NDArray, RecurrentCell::States> RecurrentCell::unroll(std::int64_t length, const nd::NDArray& inputs,
                                                                     States begin_state, const std::string& layout,
                                                                     const nd::NDArray& valid_length) {
  reset();
  const int time_axis = check_sequence(length, inputs, layout);
  check_valid_length(valid_length, inputs, time_axis);
  States states = unroll_states(std::move(begin_state), inputs, time_axis);
  std::vector<nd::NDArray> outputs;
  std::vector<States> all_states;  // per step, with valid_length only
  for (const nd::NDArray& x : split_steps(inputs, length, time_axis)) {
    auto [y, next] = step(x, states);
    outputs.push_back(std::move(y));
    states = std::move(next);
    if (!valid_length.is_none()) all_states.push_back(states);
  }
  if (!valid_length.is_none()) {
    for (std::size_t i = 0; i < states.size(); ++i) {
      std::vector<nd::NDArray> over_time;
      for (const States& s : all_states) over_time.push_back(s[i]);
      states[i] = nd::SequenceLast(nd::stack(over_time, 0), valid_length, true, 0);
    }
  }
  return {mask_padding(nd::stack(outputs, time_axis), time_axis, valid_length), std::move(states)};
}

// --- GatedCell -----------------------------------------------------------------------------------

GatedCell::GatedCell(const std::string& kind, const std::string& prefix, std::int64_t hidden_size, std::int64_t gates,
                     std::int64_t input_size, init::InitializerRef i2h_weight_init,
                     init::InitializerRef h2h_weight_init, init::InitializerRef i2h_bias_init,
                     init::InitializerRef h2h_bias_init)
    : RecurrentCell(kind, prefix), hidden_size_(hidden_size), gates_(gates) {
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

nd::NDArray GatedCell::i2h(const nd::NDArray& x) {
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

nd::NDArray GatedCell::h2h(const nd::NDArray& h) {
  return nd::FullyConnected(h, parameter("h2h_weight").data(h.context()), parameter("h2h_bias").data(h.context()),
                            gates_ * hidden_size_);
}

// --- RNNCell -------------------------------------------------------------------------------------

RNNCell::RNNCell(std::int64_t hidden_size, const std::string& activation, std::int64_t input_size,
                 init::InitializerRef i2h_weight_initializer, init::InitializerRef h2h_weight_initializer,
                 init::InitializerRef i2h_bias_initializer, init::InitializerRef h2h_bias_initializer,
                 const std::string& prefix)
    : GatedCell("rnn", prefix, hidden_size, 1, input_size, std::move(i2h_weight_initializer),
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
    : GatedCell("lstm", prefix, hidden_size, 4, input_size, std::move(i2h_weight_initializer),
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
    : GatedCell("gru", prefix, hidden_size, 3, input_size, std::move(i2h_weight_initializer),
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

// --- SequentialRNNCell ---------------------------------------------------------------------------

void SequentialRNNCell::check_not_empty() const {
  if (num_children() == 0) throw ValueError("SequentialRNNCell " + name() + " has no cells; add() cells first");
}

std::vector<Shape> SequentialRNNCell::state_shapes(std::int64_t batch) const {
  check_not_empty();
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < size(); ++i) {
    for (const Shape& s : cell_at(i).state_shapes(batch)) shapes.push_back(s);
  }
  return shapes;
}

RecurrentCell::States SequentialRNNCell::zero_states(std::int64_t batch, Context ctx, DType dtype) const {
  check_not_empty();
  States states;
  for (std::size_t i = 0; i < size(); ++i) {
    for (nd::NDArray& s : zero_states_of(cell_at(i), batch, ctx, dtype)) states.push_back(std::move(s));
  }
  return states;
}

// Each cell takes its own run of the states, in order, and the previous cell's output.
std::pair<nd::NDArray, RecurrentCell::States> SequentialRNNCell::step(const nd::NDArray& x, const States& states) {
  check_not_empty();
  check_states(x, states);
  nd::NDArray output = x;
  States next;
  std::size_t first = 0;
  for (std::size_t i = 0; i < size(); ++i) {
    RecurrentCell& cell = cell_at(i);
    const std::size_t n = cell.state_shapes(x.shape()[0]).size();
    auto [y, cell_next] = cell.step(output, States(states.begin() + first, states.begin() + first + n));
    first += n;
    output = std::move(y);
    for (nd::NDArray& s : cell_next) next.push_back(std::move(s));
  }
  return {output, std::move(next)};
}

// Each cell unrolled over the whole sequence in turn, as MXNet's.
std::pair<nd::NDArray, RecurrentCell::States> SequentialRNNCell::unroll(std::int64_t length, const nd::NDArray& inputs,
                                                                         States begin_state, const std::string& layout,
                                                                         const nd::NDArray& valid_length) {
  check_not_empty();
  reset();
  const int time_axis = check_sequence(length, inputs, layout);
  check_valid_length(valid_length, inputs, time_axis);
  const States states = unroll_states(std::move(begin_state), inputs, time_axis);
  const std::int64_t batch = inputs.shape()[1 - time_axis];
  nd::NDArray outputs = inputs;
  States last;
  std::size_t first = 0;
  for (std::size_t i = 0; i < size(); ++i) {
    RecurrentCell& cell = cell_at(i);
    const std::size_t n = cell.state_shapes(batch).size();
    auto [ys, cell_last] = cell.unroll(length, outputs, States(states.begin() + first, states.begin() + first + n),
                                       layout, valid_length);
    first += n;
    outputs = std::move(ys);
    for (nd::NDArray& s : cell_last) last.push_back(std::move(s));
  }
  return {outputs, std::move(last)};
}

// --- DropoutCell ---------------------------------------------------------------------------------

DropoutCell::DropoutCell(double rate, std::vector<int> axes, const std::string& prefix)
    : RecurrentCell("dropout", prefix), rate_(rate), axes_(std::move(axes)) {
  check_rate("DropoutCell", "rate", rate);
}

std::vector<Shape> DropoutCell::state_shapes(std::int64_t) const { return {}; }

// With axes, one mask (zeros and 1 / (1 - rate)) drawn by nd::Dropout over x's shape with those
// axes of extent 1 and broadcast, as MXNet's Dropout(axes=...); nd::Dropout itself has no axes.
nd::NDArray DropoutCell::dropout(const nd::NDArray& x) const {
  if (rate_ == 0.0) return x;
  if (axes_.empty()) return nd::Dropout(x, rate_);
  Shape mask_shape = x.shape();
  for (int axis : axes_) {
    if (axis < -x.ndim() || axis >= x.ndim()) {
      throw ValueError("DropoutCell " + name() + ": axis " + std::to_string(axis) + " is out of range for input " +
                       nd::describe(x));
    }
    mask_shape[axis < 0 ? axis + x.ndim() : axis] = 1;
  }
  if (!autograd::is_training()) return x;  // nd::Dropout's identity in prediction
  return x * nd::Dropout(nd::ones(mask_shape, x.context(), x.dtype()), rate_);
}

std::pair<nd::NDArray, RecurrentCell::States> DropoutCell::step(const nd::NDArray& x, const States& states) {
  check_states(x, states);
  return {dropout(x), states};
}

std::pair<nd::NDArray, RecurrentCell::States> DropoutCell::unroll(std::int64_t length, const nd::NDArray& inputs,
                                                                   States begin_state, const std::string& layout,
                                                                   const nd::NDArray& valid_length) {
  reset();
  const int time_axis = check_sequence(length, inputs, layout);
  check_valid_length(valid_length, inputs, time_axis);
  return {dropout(inputs), std::move(begin_state)};
}

// --- ModifierCell, ResidualCell ------------------------------------------------------------------

RecurrentCell::States ModifierCell::zero_states(std::int64_t batch, Context ctx, DType dtype) const {
  return zero_states_of(base_cell(), batch, ctx, dtype);
}

std::pair<nd::NDArray, RecurrentCell::States> ResidualCell::step(const nd::NDArray& x, const States& states) {
  nd::check_not_none(name().c_str(), x);
  auto [y, next] = base_cell().step(x, states);
  check_residual(name(), y, x);
  return {y + x, std::move(next)};
}

std::pair<nd::NDArray, RecurrentCell::States> ResidualCell::unroll(std::int64_t length, const nd::NDArray& inputs,
                                                                    States begin_state, const std::string& layout,
                                                                    const nd::NDArray& valid_length) {
  reset();
  const int time_axis = check_sequence(length, inputs, layout);
  check_valid_length(valid_length, inputs, time_axis);
  auto [ys, last] = base_cell().unroll(length, inputs, std::move(begin_state), layout, valid_length);
  check_residual(name(), ys, inputs);
  return {ys + mask_padding(inputs, time_axis, valid_length), std::move(last)};
}

// --- ZoneoutCell ---------------------------------------------------------------------------------

namespace {

// The first BidirectionalCell that stepping `cell` would step, or null.
const BidirectionalCell* stepped_bidirectional(const RecurrentCell& cell) {
  if (const auto* bi = dynamic_cast<const BidirectionalCell*>(&cell)) return bi;
  for (std::size_t i = 0; i < cell.num_children(); ++i) {
    if (const auto* inner = dynamic_cast<const RecurrentCell*>(&cell.child(i))) {
      if (const BidirectionalCell* bi = stepped_bidirectional(*inner)) return bi;
    }
  }
  return nullptr;
}

}  // namespace

void ZoneoutCell::check_arguments(const RecurrentCell& base_cell, double zoneout_outputs, double zoneout_states) {
  check_rate("ZoneoutCell", "zoneout_outputs", zoneout_outputs);
  check_rate("ZoneoutCell", "zoneout_states", zoneout_states);
  if (const BidirectionalCell* bi = stepped_bidirectional(base_cell)) {
    throw ValueError("ZoneoutCell: " + (bi == &base_cell ? std::string("the base cell ") : base_cell.name() + " holds ") +
                     "BidirectionalCell " + bi->name() +
                     ", which doesn't support zoneout since it doesn't support step; add ZoneoutCell to the cells "
                     "underneath instead");
  }
}

RecurrentCell::States ZoneoutCell::zero_states(std::int64_t batch, Context ctx, DType dtype) const {
  *prev_output_ = nd::NDArray();  // a new sequence
  return ModifierCell::zero_states(batch, ctx, dtype);
}

void ZoneoutCell::reset() {
  ModifierCell::reset();
  *prev_output_ = nd::NDArray();
}

// MXNet's hybrid_forward: where(Dropout(ones, p), new, previous). In prediction the masks are all
// ones, so the base cell's values are returned without drawing them.
std::pair<nd::NDArray, RecurrentCell::States> ZoneoutCell::step(const nd::NDArray& x, const States& states) {
  auto [next_output, next_states] = base_cell().step(x, states);
  const bool training = autograd::is_training();
  const auto mask = [](double p, const nd::NDArray& like) { return nd::Dropout(nd::ones_like(like), p); };
  nd::NDArray output = next_output;
  if (training && zoneout_outputs_ > 0.0) {
    nd::NDArray prev = *prev_output_;
    if (prev.is_none()) {
      prev = nd::zeros_like(next_output);
    } else if (prev.shape() != next_output.shape() || prev.context() != next_output.context()) {
      throw ShapeError(name() + ": the previous step's output " + nd::describe(prev) + " does not match this step's " +
                       nd::describe(next_output) + "; call reset() or begin_state() to start a new sequence");
    }
    output = nd::where(mask(zoneout_outputs_, next_output), next_output, prev);
  }
  States out_states = next_states;
  if (training && zoneout_states_ > 0.0) {
    for (std::size_t i = 0; i < out_states.size(); ++i) {
      out_states[i] = nd::where(mask(zoneout_states_, next_states[i]), next_states[i], states[i]);
    }
  }
  *prev_output_ = output;
  return {output, std::move(out_states)};
}

// --- BidirectionalCell ---------------------------------------------------------------------------

std::vector<Shape> BidirectionalCell::state_shapes(std::int64_t batch) const {
  std::vector<Shape> shapes = l_cell().state_shapes(batch);
  for (const Shape& s : r_cell().state_shapes(batch)) shapes.push_back(s);
  return shapes;
}

RecurrentCell::States BidirectionalCell::zero_states(std::int64_t batch, Context ctx, DType dtype) const {
  States states = zero_states_of(l_cell(), batch, ctx, dtype);
  for (nd::NDArray& s : zero_states_of(r_cell(), batch, ctx, dtype)) states.push_back(std::move(s));
  return states;
}

std::pair<nd::NDArray, RecurrentCell::States> BidirectionalCell::step(const nd::NDArray&, const States&) {
  throw ValueError("BidirectionalCell " + name() + ": Bidirectional cannot be stepped. Please use unroll");
}

std::pair<nd::NDArray, RecurrentCell::States> BidirectionalCell::unroll(std::int64_t length, const nd::NDArray& inputs,
                                                                         States begin_state, const std::string& layout,
                                                                         const nd::NDArray& valid_length) {
  reset();
  const int time_axis = check_sequence(length, inputs, layout);
  check_valid_length(valid_length, inputs, time_axis);
  const States states = unroll_states(std::move(begin_state), inputs, time_axis);
  const auto l_count = static_cast<std::ptrdiff_t>(l_cell().state_shapes(inputs.shape()[1 - time_axis]).size());
  auto [l_outputs, l_last] =
      l_cell().unroll(length, inputs, States(states.begin(), states.begin() + l_count), layout, valid_length);
  auto [r_outputs, r_last] = r_cell().unroll(length, reverse_time(inputs, time_axis, valid_length),
                                             States(states.begin() + l_count, states.end()), layout, valid_length);
  // r_cell's outputs back in time order, beside l_cell's on the feature axis.
  const nd::NDArray outputs = nd::concat({l_outputs, reverse_time(r_outputs, time_axis, valid_length)}, 2);
  States last = std::move(l_last);
  for (nd::NDArray& s : r_last) last.push_back(std::move(s));
  return {mask_padding(outputs, time_axis, valid_length), std::move(last)};
}

}  // namespace mx::gluon::rnn
