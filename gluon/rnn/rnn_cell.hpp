#pragma once
// mx::gluon::rnn's cells, as mxnet.gluon.rnn's: one time step of a recurrent network, with MXNet's
// parameter names (lstm0_i2h_weight, lstm0_h2h_weight, lstm0_i2h_bias, lstm0_h2h_bias), gate order
// and formulas, and unroll over a sequence.
//
//   rnn::LSTMCell cell(100);                        // input size inferred at the first step
//   cell.initialize(mx::init::Xavier(), ctx);
//   auto state = cell.begin_state(32, ctx);         // {h, c}, (32, 100) zeros each
//   auto [y, next] = cell.step(x, state);           // x (32, input), y (32, 100)
//   auto [ys, last] = cell.unroll(35, xs, state, "NTC");   // xs (32, 35, input) -> ys (32, 35, 100)
//
// The cells are built from registered ops (FullyConnected, split, sigmoid, tanh), so they run on
// every context, are differentiated by autograd and traced by hybridize like any block.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gluon/block.hpp"

namespace mx::gluon::rnn {

class RecurrentCell : public Block {
 public:
  using States = std::vector<nd::NDArray>;

  // The shapes of the states for a batch (MXNet's state_info).
  virtual std::vector<Shape> state_shapes(std::int64_t batch) const = 0;
  // Zero states for a batch on ctx (MXNet's begin_state(batch_size, func=zeros)).
  States begin_state(std::int64_t batch, Context ctx = current_context(), DType dtype = DType::float32) const;
  // One step: x (batch, input_size) and the states -> the output (batch, hidden) and the next
  // states. States of the wrong number, shape or context are an mx::ShapeError /
  // mx::ContextMismatch naming the cell.
  virtual std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) = 0;
  // MXNet's unroll: inputs (batch, length, input) for layout "NTC" or (length, batch, input) for
  // "TNC" run through `length` steps from begin_state (zeros when empty); the outputs merged
  // along the time axis of the layout, and the last states. Another layout or a length other than
  // the inputs' is an mx::ValueError / mx::ShapeError.
  std::pair<nd::NDArray, States> unroll(std::int64_t length, const nd::NDArray& inputs, States begin_state = {},
                                        const std::string& layout = "NTC");
  // One step from zero states; the output alone (so that a cell is a Block of one input).
  nd::NDArray forward(const nd::NDArray& x) override;

  std::int64_t hidden_size() const { return hidden_size_; }

 protected:
  // gates: the gate blocks of the i2h and h2h weights (1 for RNN, 4 for LSTM, 3 for GRU).
  RecurrentCell(const std::string& kind, const std::string& prefix, std::int64_t hidden_size, std::int64_t gates,
                std::int64_t input_size, init::InitializerRef i2h_weight_init, init::InitializerRef h2h_weight_init,
                init::InitializerRef i2h_bias_init, init::InitializerRef h2h_bias_init);
  // The states checked against state_shapes (their batch from x) and x's context.
  void check_states(const nd::NDArray& x, const States& states) const;
  // W_i x + b_i and W_h h + b_h: (batch, gates * hidden); the input size inferred at the first call.
  nd::NDArray i2h(const nd::NDArray& x);
  nd::NDArray h2h(const nd::NDArray& h);

  std::int64_t hidden_size_, gates_;
};

// h' = activation(W_i x + b_i + W_h h + b_h), activation "tanh" or "relu" (MXNet's RNNCell).
class RNNCell : public RecurrentCell {
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
class LSTMCell : public RecurrentCell {
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
class GRUCell : public RecurrentCell {
 public:
  explicit GRUCell(std::int64_t hidden_size, std::int64_t input_size = 0,
                   init::InitializerRef i2h_weight_initializer = {}, init::InitializerRef h2h_weight_initializer = {},
                   init::InitializerRef i2h_bias_initializer = init::Zero(),
                   init::InitializerRef h2h_bias_initializer = init::Zero(), const std::string& prefix = "");
  std::vector<Shape> state_shapes(std::int64_t batch) const override;
  std::pair<nd::NDArray, States> step(const nd::NDArray& x, const States& states) override;
};

}  // namespace mx::gluon::rnn
