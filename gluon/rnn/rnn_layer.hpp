#pragma once
// mx::gluon::rnn's layers, as mxnet.gluon.rnn's RNN, LSTM and GRU: a stack of recurrent layers run
// over a whole sequence by one call of the fused RNN op (cuDNN's RNN on GPUs; GEMMs and a fused
// kernel per step on cpu(0)).
//
//   rnn::LSTM lstm(256, 2);                          // hidden 256, 2 layers, layout "TNC"
//   lstm.initialize(mx::init::Xavier(), ctx);        // input size inferred at the first call
//   auto y = lstm(x);                                // x (T, N, C) -> y (T, N, 256), zero states
//   auto state = lstm.begin_state(N, ctx);           // {h, c}, (2, N, 256) each
//   auto [y2, next] = lstm(x, state);                // the last states too
//
// Parameters have MXNet's names, lstm0_l0_i2h_weight (G·H, C), ..._l0_h2h_weight (G·H, H),
// ..._l0_i2h_bias, ..._l0_h2h_bias, r0_ for the reverse direction, h2r_weight (P, H) with a
// projection, and save_parameters writes the keys MXNet 1.9 writes for them ("_unfused.0.i2h_weight",
// "_unfused.0.l_cell.i2h_weight" when bidirectional); load_parameters reads those and the bare
// "l0_i2h_weight". forward(x) hybridizes (the RNN op inside the CUDA graph) and exports as MXNet's
// parameters concatenated into RNN; forward(x, states) runs eagerly.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gluon/block.hpp"

namespace mx::gluon::rnn {

// What the layers take beyond hidden_size and num_layers, with MXNet's defaults.
struct LayerOptions {
  std::string layout = "TNC";  // or "NTC"
  double dropout = 0;          // on each layer's output but the last, in training
  bool bidirectional = false;
  std::int64_t input_size = 0;  // 0: inferred at the first call
  init::InitializerRef i2h_weight_initializer{}, h2h_weight_initializer{};
  init::InitializerRef i2h_bias_initializer = init::Zero(), h2h_bias_initializer = init::Zero();
  // LSTM only: the projection's size (0: none) and its weight's initializer; cell-state clipping.
  std::int64_t projection_size = 0;
  init::InitializerRef h2r_weight_initializer{};
  std::optional<double> state_clip_min, state_clip_max;
  bool state_clip_nan = false;
  std::string prefix;
};

// MXNet's _RNNLayer: what RNN, LSTM and GRU share.
class RecurrentLayer : public Block {
 public:
  using States = std::vector<nd::NDArray>;

  // x (T, N, C) for "TNC" or (N, T, C) for "NTC" -> the outputs, (T, N, D·H) or (N, T, D·H), from
  // zero states.
  nd::NDArray forward(const nd::NDArray& x) override;
  // The same from `states` (begin_state's shapes, on x's context), and the last states.
  // Wrong shapes or contexts: mx::ShapeError / mx::ContextMismatch naming the layer.
  std::pair<nd::NDArray, States> forward(const nd::NDArray& x, const States& states);
  using Block::operator();
  std::pair<nd::NDArray, States> operator()(const nd::NDArray& x, const States& states) { return forward(x, states); }

  // The states' shapes for a batch: (L·D, N, S) for h, and (L·D, N, H) for an LSTM's c.
  std::vector<Shape> state_shapes(std::int64_t batch) const;
  States begin_state(std::int64_t batch, Context ctx = current_context(), DType dtype = DType::float32) const;

  std::int64_t hidden_size() const { return hidden_size_; }
  std::int64_t num_layers() const { return num_layers_; }

 protected:
  RecurrentLayer(const std::string& kind, const std::string& mode, std::int64_t hidden_size, std::int64_t num_layers,
                 const LayerOptions& options);

 private:
  nd::NDArray flat_parameters(const nd::NDArray& x);  // MXNet's _rnn_param_concat
  std::pair<nd::NDArray, States> run(const nd::NDArray& x, const States& states, bool state_outputs);

  std::string mode_;
  std::int64_t hidden_size_, num_layers_;
  LayerOptions options_;
};

// Elman RNN: h' = activation(W_i x + b_i + W_h h + b_h), activation "relu" (MXNet's default) or "tanh".
class RNN : public RecurrentLayer {
 public:
  explicit RNN(std::int64_t hidden_size, std::int64_t num_layers = 1, const std::string& activation = "relu",
               const LayerOptions& options = {});
};

// LSTM with MXNet's gates (i, f, g, o); optional projection (LSTMP) and cell-state clipping.
class LSTM : public RecurrentLayer {
 public:
  explicit LSTM(std::int64_t hidden_size, std::int64_t num_layers = 1, const LayerOptions& options = {});
};

// GRU with MXNet's (and cuDNN's) gates (r, z, n), n = tanh(W_in x + b_in + r (W_hn h + b_hn)).
class GRU : public RecurrentLayer {
 public:
  explicit GRU(std::int64_t hidden_size, std::int64_t num_layers = 1, const LayerOptions& options = {});
};

}  // namespace mx::gluon::rnn
