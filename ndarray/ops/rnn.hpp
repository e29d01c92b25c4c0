#pragma once
// MXNet's fused recurrent op, RNN: a stack of RNN (tanh or relu), LSTM or GRU layers over a whole
// sequence in one call. On a GPU it runs through cuDNN's RNN API (one call for the stack, forward
// and backward); on cpu(0), and on a GPU where cuDNN has no RNN for the case, by GEMMs (OpenBLAS or
// cuBLAS) and one fused kernel per time step. gluon::rnn's RNN, LSTM and GRU layers call it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ndarray/core/array.hpp"

namespace mx::nd {

struct RNNOptions {
  std::int64_t state_size = 0;      // H
  std::int64_t num_layers = 1;      // L
  std::string mode = "lstm";        // "rnn_relu", "rnn_tanh", "lstm", "gru"
  bool bidirectional = false;       // D = 2
  double p = 0;                     // dropout on each layer's output but the last, in training
  bool state_outputs = false;       // also return the last states
  std::int64_t projection_size = 0; // LSTM only: h = W_hr (o·tanh(c)), of this size (S); 0: none
  std::optional<double> lstm_state_clip_min, lstm_state_clip_max;  // LSTM only, both or neither
  bool lstm_state_clip_nan = false;
};

// RNN(data (T, N, I), parameters (P,), state (L·D, N, S), state_cell (L·D, N, H) for an LSTM, else
// a none array) -> {out (T, N, D·S)} and, with state_outputs, the last states {hy (L·D, N, S)} and
// for an LSTM {cy (L·D, N, H)}, as mx.nd.RNN. S is H, or projection_size. parameters is MXNet's
// flat vector (see rnn_param_size). Gradients reach data, parameters and the initial states.
// Wrong shapes, dtypes or contexts: mx::ShapeError / DTypeError / ContextMismatch naming the
// operand; bad options: mx::ValueError.
std::vector<NDArray> RNN(const NDArray& data, const NDArray& parameters, const NDArray& state,
                         const NDArray& state_cell, const RNNOptions& options);

// The length of RNN's flat parameter vector for input size I: every weight, then every bias;
// within each, layer by layer and direction by direction (l0, r0, l1, ...): i2h (G·H, I or D·S),
// h2h (G·H, S), h2r (S, H) with a projection; the biases i2h (G·H) and h2h (G·H). G is 1 (rnn_*),
// 4 (lstm: gates i, f, g, o) or 3 (gru: r, z, n). MXNet's and cuDNN's canonical order.
std::int64_t rnn_param_size(const RNNOptions& options, std::int64_t input_size);

// Whether GPUs run RNN through cuDNN where it can (true) or through the unfused path (false, the
// default: GEMMs and a fused kernel per step); returns the previous setting. Calls already made
// keep their path (a hybridized graph replays the one it traced). The default is the faster of the
// two on an H200 in every case bench/rnn_bench measures: a 2-layer LSTM of 1,024 (sequence 64,
// batch 64) forward and backward in 12.6 ms against cuDNN's 15.0 in float32, 6.5 against 7.6 in
// bfloat16, even with TF32; a generation step at batch 1, 114 µs against 127.
bool set_rnn_cudnn(bool enabled);

}  // namespace mx::nd
