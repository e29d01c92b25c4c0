#pragma once
// mx::gluon::rnn's cells, as mxnet.gluon.rnn's (MXNet 1.9): one time step of a recurrent network,
// with MXNet's parameter names (lstm0_i2h_weight, lstm0_h2h_weight, lstm0_i2h_bias, lstm0_h2h_bias),
// gate order and formulas, and unroll over a sequence.
//
//   rnn::LSTMCell cell(100);                        // input size inferred at the first step
//   cell.initialize(mx::init::Xavier(), ctx);
//   auto state = cell.begin_state(32, ctx);         // {h, c}, (32, 100) zeros each
//   auto [y, next] = cell.step(x, state);           // x (32, input), y (32, 100)
//   auto [ys, last] = cell.unroll(35, xs, state, "NTC");   // xs (32, 35, input) -> ys (32, 35, 100)
//
// Cells that combine or modify other cells, as MXNet's:
//
//   rnn::SequentialRNNCell stack;                   // stacked cells, states concatenated
//   stack.add(rnn::LSTMCell(100), rnn::DropoutCell(0.5), rnn::ResidualCell(rnn::LSTMCell(100)));
//   rnn::ZoneoutCell zoned(rnn::GRUCell(100), 0.1, 0.1);
//   rnn::BidirectionalCell bi(rnn::LSTMCell(100, 0, {}, {}, init::Zero(), init::Zero(), "l0_"),
//                             rnn::LSTMCell(100, 0, {}, {}, init::Zero(), init::Zero(), "r0_"));  // unroll only
//
// A cell added to a container or wrapped by a modifier is the same cell (Block's handles), and its
// parameters keep their own names (lstm0_i2h_weight inside a sequentialrnncell0), as in MXNet.
//
// The cells are built from registered ops (FullyConnected, split, sigmoid, tanh, Dropout, where,
// SequenceMask, ...), so they run on every context, are differentiated by autograd and traced by
// hybridize like any block.
//
// Where ndgluon differs from MXNet: unroll always returns the outputs merged into one array
// (MXNet's merge_outputs=True; a list per step is not offered), its inputs are one array (not a
// list of steps), begin_state makes zeros only (MXNet's func=), and BidirectionalCell has a prefix
// of its own ("bidirectionalcell0_", MXNet's is empty) and no output_prefix (a name for symbols).
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gluon/block.hpp"

namespace mx::gluon::rnn {

// The base of every cell (MXNet's RecurrentCell / HybridRecurrentCell): state handling, step and
// unroll. It has no parameters of its own; GatedCell adds the i2h/h2h weights.
class RecurrentCell : public Block {
 public:
  using States = std::vector<nd::NDArray>;

  // The shapes of the states for a batch (MXNet's state_info).
  virtual std::vector<Shape> state_shapes(std::int64_t batch) const = 0;
  // Zero states for a batch on ctx (MXNet's begin_state(batch_size, func=zeros)); also starts a new
  // sequence for cells that remember one (ZoneoutCell's previous output). A cell that a modifier
  // (ZoneoutCell, ResidualCell) wraps is an mx::ValueError: call the modifier instead, as MXNet.
  States begin_state(std::int64_t batch, Context ctx = current_context(), DType dtype = DType::float32) const;
  // One step: x (batch, input_size) and the states -> the output (batch, hidden) and the next
  // states. States of the wrong number, shape or context are an mx::ShapeError /
  // mx::ContextMismatch naming the cell.
  virtual std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) = 0;
  // MXNet's unroll: inputs (batch, length, input) for layout "NTC" or (length, batch, input) for
  // "TNC" run through `length` steps from begin_state (zeros when empty); the outputs merged
  // along the time axis of the layout, and the last states. Another layout or a length other than
  // the inputs' is an mx::ValueError / mx::ShapeError.
  // valid_length (batch,), any dtype, optional: each sequence's length; the outputs past it are
  // zeros and the states returned are those of each sequence's last valid step (MXNet's
  // SequenceMask / SequenceLast), so that padded batches give each sequence's own result.
  virtual std::pair<nd::NDArray, States> unroll(std::int64_t length, const nd::NDArray& inputs,
                                                States begin_state = {}, const std::string& layout = "NTC",
                                                const nd::NDArray& valid_length = {});
  // Forgets what a cell remembers between steps (ZoneoutCell's previous output), in this cell and
  // the cells in it, as MXNet's reset(); unroll calls it first.
  virtual void reset();
  // One step from zero states; the output alone (so that a cell is a Block of one input).
  nd::NDArray forward(const nd::NDArray& x) override;

 protected:
  RecurrentCell(const std::string& kind, const std::string& prefix);

  // The zero states of begin_state, without its check for a wrapped cell (a modifier's own call).
  // Containers concatenate their cells' so that every cell in them starts a new sequence.
  virtual States zero_states(std::int64_t batch, Context ctx, DType dtype) const;
  // cell.zero_states(...) for a cell held in this one (protected access goes through the base).
  static States zero_states_of(const RecurrentCell& cell, std::int64_t batch, Context ctx, DType dtype) {
    return cell.zero_states(batch, ctx, dtype);
  }
  // Marks base as wrapped by the modifier `by` (MXNet's _modified); a cell already wrapped is an
  // mx::ValueError: one cell cannot be modified twice.
  static void mark_modified(const RecurrentCell& base, const std::string& by);

  // The i-th child as a cell.
  RecurrentCell& cell_at(std::size_t i) const;
  // The states checked against state_shapes (their batch from x) and x's context.
  void check_states(const nd::NDArray& x, const States& states) const;
  // The inputs of unroll(length, inputs, ..., layout) checked; returns the time axis (1 for "NTC",
  // 0 for "TNC").
  int check_sequence(std::int64_t length, const nd::NDArray& inputs, const std::string& layout) const;
  // valid_length checked against the inputs: none, or 1-D (batch,) on the inputs' context.
  void check_valid_length(const nd::NDArray& valid_length, const nd::NDArray& inputs, int time_axis) const;
  // The states an unroll starts from: zero states when none are given, else the given ones, whose
  // number must be the cell's (mx::ShapeError).
  States unroll_states(States given, const nd::NDArray& inputs, int time_axis) const;

 private:
  std::shared_ptr<bool> modified_ = std::make_shared<bool>(false);  // shared by the handles of one cell
};

// The cells with MXNet's i2h and h2h weights: W_i x + b_i and W_h h + b_h of `gates` blocks of
// hidden_size rows (1 for RNN, 4 for LSTM, 3 for GRU).
class GatedCell : public RecurrentCell {
 public:
  std::int64_t hidden_size() const { return hidden_size_; }

 protected:
  GatedCell(const std::string& kind, const std::string& prefix, std::int64_t hidden_size, std::int64_t gates,
            std::int64_t input_size, init::InitializerRef i2h_weight_init, init::InitializerRef h2h_weight_init,
            init::InitializerRef i2h_bias_init, init::InitializerRef h2h_bias_init);
  // W_i x + b_i and W_h h + b_h: (batch, gates * hidden); the input size inferred at the first call.
  nd::NDArray i2h(const nd::NDArray& x);
  nd::NDArray h2h(const nd::NDArray& h);

  std::int64_t hidden_size_, gates_;
};

// h' = activation(W_i x + b_i + W_h h + b_h), activation "tanh" or "relu" (MXNet's RNNCell).
class RNNCell : public GatedCell {
 public:
  explicit RNNCell(std::int64_t hidden_size, const std::string& activation = "tanh", std::int64_t input_size = 0,
                   init::InitializerRef i2h_weight_initializer = {}, init::InitializerRef h2h_weight_initializer = {},
                   init::InitializerRef i2h_bias_initializer = init::Zero(),
                   init::InitializerRef h2h_bias_initializer = init::Zero(), const std::string& prefix = "");
  std::vector<Shape> state_shapes(std::int64_t batch) const override;
  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;

 private:
  bool relu_;
};

// MXNet's LSTMCell: the gates in the order input, forget, cell, output; states {h, c}:
//   i = σ(.), f = σ(.), g = tanh(.), o = σ(.);  c' = f c + i g;  h' = o tanh(c').
class LSTMCell : public GatedCell {
 public:
  explicit LSTMCell(std::int64_t hidden_size, std::int64_t input_size = 0,
                    init::InitializerRef i2h_weight_initializer = {}, init::InitializerRef h2h_weight_initializer = {},
                    init::InitializerRef i2h_bias_initializer = init::Zero(),
                    init::InitializerRef h2h_bias_initializer = init::Zero(), const std::string& prefix = "");
  std::vector<Shape> state_shapes(std::int64_t batch) const override;
  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;
};

// MXNet's GRUCell: the gates in the order reset, update, new; one state h:
//   r = σ(i_r + h_r), z = σ(i_z + h_z), n = tanh(i_n + r h_n);  h' = (1 - z) n + z h.
class GRUCell : public GatedCell {
 public:
  explicit GRUCell(std::int64_t hidden_size, std::int64_t input_size = 0,
                   init::InitializerRef i2h_weight_initializer = {}, init::InitializerRef h2h_weight_initializer = {},
                   init::InitializerRef i2h_bias_initializer = init::Zero(),
                   init::InitializerRef h2h_bias_initializer = init::Zero(), const std::string& prefix = "");
  std::vector<Shape> state_shapes(std::int64_t batch) const override;
  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;
};

// MXNet's SequentialRNNCell: cells stacked, each step's output the next cell's input; the states
// are the concatenation of the cells' states, in order. unroll unrolls each cell over the whole
// sequence in turn (so a BidirectionalCell may be stacked; step then throws). Prefix
// "sequentialrnncell0_"; the cells' parameters keep their names. A stack with no cells is an
// mx::ValueError when used.
class SequentialRNNCell : public RecurrentCell {
 public:
  explicit SequentialRNNCell(const std::string& prefix = "") : RecurrentCell("sequentialrnncell", prefix) {}

  // Appends cells (the same cells the caller holds, not copies).
  template <class... Cells>
  SequentialRNNCell& add(const Cells&... cells) {
    static_assert((std::is_base_of_v<RecurrentCell, Cells> && ...), "SequentialRNNCell::add takes cells");
    (register_child(cells), ...);
    return *this;
  }
  std::size_t size() const { return num_children(); }
  RecurrentCell& operator[](std::size_t i) const { return cell_at(i); }

  std::vector<Shape> state_shapes(std::int64_t batch) const override;
  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;
  std::pair<nd::NDArray, States> unroll(std::int64_t length, const nd::NDArray& inputs, States begin_state = {},
                                        const std::string& layout = "NTC",
                                        const nd::NDArray& valid_length = {}) override;

 protected:
  States zero_states(std::int64_t batch, Context ctx, DType dtype) const override;

 private:
  void check_not_empty() const;
};

// MXNet's DropoutCell: dropout on the input, no states. rate in [0, 1) (else mx::ValueError); axes:
// the axes along which one mask is shared (empty: an independent mask per element), of the step's
// (batch, size) input in step and of the whole sequence in unroll, as MXNet's. nd::Dropout, so the
// identity in prediction. Prefix "dropout0_".
class DropoutCell : public RecurrentCell {
 public:
  explicit DropoutCell(double rate, std::vector<int> axes = {}, const std::string& prefix = "");
  double rate() const { return rate_; }

  std::vector<Shape> state_shapes(std::int64_t batch) const override;
  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;
  // Dropout on the whole sequence at once; the states given come back as they are, and
  // valid_length is checked but not applied (MXNet's ignores it too).
  std::pair<nd::NDArray, States> unroll(std::int64_t length, const nd::NDArray& inputs, States begin_state = {},
                                        const std::string& layout = "NTC",
                                        const nd::NDArray& valid_length = {}) override;

 private:
  nd::NDArray dropout(const nd::NDArray& x) const;
  double rate_;
  std::vector<int> axes_;
};

// MXNet's ModifierCell: wraps a base cell (its child "base_cell") and modifies its step. Its prefix
// is the base's prefix + the modifier's alias ("lstm0_zoneout"); its parameters are the base's.
// The base cell is then wrapped: its begin_state throws and it cannot be wrapped again, as MXNet's.
class ModifierCell : public RecurrentCell {
 public:
  RecurrentCell& base_cell() const { return cell_at(0); }
  std::vector<Shape> state_shapes(std::int64_t batch) const override { return base_cell().state_shapes(batch); }

 protected:
  template <class Cell>
  ModifierCell(const Cell& base_cell, const std::string& alias) : RecurrentCell(alias, base_cell.prefix() + alias) {
    static_assert(std::is_base_of_v<RecurrentCell, Cell>, "a modifier cell wraps a cell");
    register_child(base_cell, "base_cell");
    mark_modified(base_cell, alias);  // last, so that a modifier that fails leaves its base as it was
  }
  States zero_states(std::int64_t batch, Context ctx, DType dtype) const override;
};

// MXNet's ResidualCell (Wu et al. 2016): the base cell's output plus its input, so the base's
// hidden size must be the input size (else mx::ShapeError naming the cell). Prefix: the base's +
// "residualcell".
class ResidualCell : public ModifierCell {
 public:
  template <class Cell>
  explicit ResidualCell(const Cell& base_cell) : ModifierCell(base_cell, "residualcell") {}
  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;
  // The base cell's unroll plus the inputs (masked past valid_length, as MXNet's).
  std::pair<nd::NDArray, States> unroll(std::int64_t length, const nd::NDArray& inputs, States begin_state = {},
                                        const std::string& layout = "NTC",
                                        const nd::NDArray& valid_length = {}) override;
};

// MXNet's ZoneoutCell (Krueger et al. 2016): in training, each element of the output and of the
// states keeps its previous value with probability zoneout_outputs / zoneout_states, else takes
// the base cell's new one. MXNet's formula: mask = Dropout(ones, p), new = where(mask, next, prev),
// the previous output being zeros at a sequence's first step (begin_state, reset and unroll start
// one). In prediction: the base cell. The rates in [0, 1), and a base that cannot step (a
// BidirectionalCell, or a SequentialRNNCell holding one), are an mx::ValueError. Prefix: the
// base's + "zoneout".
class ZoneoutCell : public ModifierCell {
 public:
  template <class Cell>
  explicit ZoneoutCell(const Cell& base_cell, double zoneout_outputs = 0.0, double zoneout_states = 0.0)
      : ModifierCell(checked_base(base_cell, zoneout_outputs, zoneout_states), "zoneout"),
        zoneout_outputs_(zoneout_outputs),
        zoneout_states_(zoneout_states) {}
  double zoneout_outputs() const { return zoneout_outputs_; }
  double zoneout_states() const { return zoneout_states_; }

  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;
  void reset() override;

 protected:
  States zero_states(std::int64_t batch, Context ctx, DType dtype) const override;

 private:
  // base_cell, once the rates and the base's kind are checked (before the base is marked wrapped).
  template <class Cell>
  static const Cell& checked_base(const Cell& base_cell, double zoneout_outputs, double zoneout_states) {
    check_arguments(base_cell, zoneout_outputs, zoneout_states);
    return base_cell;
  }
  static void check_arguments(const RecurrentCell& base_cell, double zoneout_outputs, double zoneout_states);

  double zoneout_outputs_, zoneout_states_;
  // The previous step's output (none at a sequence's start), shared by the handles of one cell.
  std::shared_ptr<nd::NDArray> prev_output_ = std::make_shared<nd::NDArray>();
};

// MXNet's BidirectionalCell: l_cell (child "l_cell") unrolled forward and r_cell ("r_cell") over
// the reversed sequence (each sequence's first valid_length steps, when given); the outputs
// concatenated on the feature axis, l's first: (batch, length, l_hidden + r_hidden) for "NTC". The
// states are l_cell's followed by r_cell's. It cannot be stepped: step (and forward) throw
// mx::ValueError, as MXNet's "Bidirectional cannot be stepped. Please use unroll".
class BidirectionalCell : public RecurrentCell {
 public:
  template <class LCell, class RCell>
  BidirectionalCell(const LCell& l_cell, const RCell& r_cell, const std::string& prefix = "")
      : RecurrentCell("bidirectionalcell", prefix) {
    static_assert(std::is_base_of_v<RecurrentCell, LCell> && std::is_base_of_v<RecurrentCell, RCell>,
                  "BidirectionalCell takes two cells");
    register_child(l_cell, "l_cell");
    register_child(r_cell, "r_cell");
  }
  RecurrentCell& l_cell() const { return cell_at(0); }
  RecurrentCell& r_cell() const { return cell_at(1); }

  std::vector<Shape> state_shapes(std::int64_t batch) const override;
  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;
  std::pair<nd::NDArray, States> unroll(std::int64_t length, const nd::NDArray& inputs, States begin_state = {},
                                        const std::string& layout = "NTC",
                                        const nd::NDArray& valid_length = {}) override;

 protected:
  States zero_states(std::int64_t batch, Context ctx, DType dtype) const override;
};

}  // namespace mx::gluon::rnn
