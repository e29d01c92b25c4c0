#pragma once
// The RNN family's attributes, dimensions, parameter and reserve layouts, and the element
// functions of one time step, written once for the CPU loops and the CUDA kernels. Internal.
//
// MXNet's fused RNN op runs a stack of recurrent layers over a sequence:
//   RNN(data (T, N, I), parameters (flat), state (L·D, N, S) [, state_cell (L·D, N, H)])
//     -> out (T, N, D·S) [, hy (L·D, N, S) [, cy (L·D, N, H)]]
// with L layers, D = 2 when bidirectional, H = state_size and S the recurrent state's size (H, or
// projection_size for an LSTM with a projection). The parameters are one flat vector, in MXNet's
// (and cuDNN's canonical) order: every weight, then every bias; within each, layer by layer and
// direction by direction (l0, r0, l1, r1, ...): i2h (G·H, in), h2h (G·H, S) and, with a projection,
// h2r (P, H); then the biases i2h (G·H) and h2h (G·H). G is the number of gates (1 for rnn_relu and
// rnn_tanh, 4 for lstm in the order i, f, g, o, 3 for gru in the order r, z, n).
#include <algorithm>
#include <cmath>
#include <bit>
#include <cstdint>
#include <functional>
#include <type_traits>

#include "ndarray/core/half.hpp"
#include "ndarray/core/host_device.hpp"
#include "ndarray/ops/op.hpp"

namespace mx::op {

enum class RNNMode : std::int32_t { rnn_relu, rnn_tanh, lstm, gru };

struct RNNParams {
  RNNMode mode = RNNMode::lstm;
  std::int64_t state_size = 0, num_layers = 1, projection_size = 0;
  bool bidirectional = false, state_outputs = false;
  // Dropout on the outputs of every layer but the last, in training only (MXNet's p).
  double p = 0;
  bool training = false;
  // LSTM cell-state clipping to [clip_min, clip_max] (MXNet's lstm_state_clip_*), applied to c
  // before h = o·tanh(c) and before c is carried to the next step (TensorFlow's cell_clip); clip_nan:
  // a NaN cell state becomes clip_min instead of propagating. MXNet left this to cuDNN, whose
  // values differ: where ndgluon differs on purpose, this is it.
  bool clip = false, clip_nan = false;
  double clip_min = 0, clip_max = 0;
};

NDG_HD std::int64_t rnn_gates(RNNMode mode) {
  return mode == RNNMode::lstm ? 4 : mode == RNNMode::gru ? 3 : 1;
}
const char* rnn_mode_name(RNNMode mode);
bool rnn_cudnn_enabled();  // nd::set_rnn_cudnn
// Whether a call draws dropout masks between layers (training, p > 0, two layers or more): the
// unfused path runs it on every context, with ndgluon's generator.
inline bool rnn_drops_out(const RNNParams& p) { return p.training && p.p > 0 && p.num_layers > 1; }

// The extents of one call, from the attributes and the data's shape.
struct RNNDims {
  std::int64_t seq = 0, batch = 0, input = 0;
  std::int64_t hidden = 0, state = 0, projection = 0, gates = 1, directions = 1, layers = 1;

  RNNDims() = default;
  RNNDims(const RNNParams& p, std::int64_t seq_length, std::int64_t batch_size, std::int64_t input_size)
      : seq(seq_length), batch(batch_size), input(input_size), hidden(p.state_size),
        state(p.projection_size > 0 ? p.projection_size : p.state_size), projection(p.projection_size),
        gates(rnn_gates(p.mode)), directions(p.bidirectional ? 2 : 1), layers(p.num_layers) {}

  std::int64_t layer_input(std::int64_t l) const { return l == 0 ? input : directions * state; }
  std::int64_t gate_rows() const { return gates * hidden; }
  std::int64_t states() const { return layers * directions; }  // L·D

  // Element offsets of each part of the flat parameter vector.
  std::int64_t i2h_weight(std::int64_t l, std::int64_t d) const { return weight_offset(l, d); }
  std::int64_t h2h_weight(std::int64_t l, std::int64_t d) const { return weight_offset(l, d) + gate_rows() * layer_input(l); }
  std::int64_t h2r_weight(std::int64_t l, std::int64_t d) const { return h2h_weight(l, d) + gate_rows() * state; }
  std::int64_t i2h_bias(std::int64_t l, std::int64_t d) const { return weights() + (l * directions + d) * 2 * gate_rows(); }
  std::int64_t h2h_bias(std::int64_t l, std::int64_t d) const { return i2h_bias(l, d) + gate_rows(); }
  std::int64_t weights() const { return weight_offset(layers, 0); }
  std::int64_t parameters() const { return weights() + layers * directions * 2 * gate_rows(); }

 private:
  std::int64_t layer_weights(std::int64_t l) const {
    return gate_rows() * (layer_input(l) + state) + (projection > 0 ? projection * hidden : 0);
  }
  std::int64_t weight_offset(std::int64_t l, std::int64_t d) const {
    std::int64_t offset = 0;
    for (std::int64_t k = 0; k < l; ++k) offset += directions * layer_weights(k);
    return offset + d * layer_weights(l);
  }
};

// Where the unfused path keeps what backward reads (elements of the data's dtype), per layer l and
// direction d: the activated gates (T, N, G·H); the states h with the initial one (T + 1, N, S),
// h_t in slot t + 1 going forward and slot t going backward in time, the initial state in the
// other end slot, so that each step's previous states are one contiguous block; for an LSTM the
// cell states likewise (T + 1, N, H); for a GRU W_hn h + b_hn (T, N, H); with a projection the
// unprojected o·tanh(c) (T, N, H). Per layer above the first: its input (T, N, D·S) and, with
// dropout, the mask it was multiplied by.
struct RNNReserve {
  struct Part {
    std::int64_t gates = 0, h = 0, c = 0, hn = 0, r = 0;
  };
  explicit RNNReserve(const RNNDims& dims);
  Part part(std::int64_t l, std::int64_t d) const;
  std::int64_t layer_input(std::int64_t l) const;  // l >= 1
  std::int64_t mask(std::int64_t l) const;         // l >= 1, with dropout
  std::int64_t elements() const { return total_; }

  // The slot of h_t (and c_t) and of the state before the first step, by direction.
  static std::int64_t slot(std::int64_t d, std::int64_t t) { return d == 0 ? t + 1 : t; }
  static std::int64_t initial_slot(std::int64_t d, std::int64_t seq) { return d == 0 ? 0 : seq; }

 private:
  RNNDims dims_;
  std::int64_t per_direction_ = 0, per_layer_ = 0, total_ = 0;
};

// One time step of one layer and direction over the batch, for the unfused path. Pointers are
// to elements of the data's dtype; (rows, cols) arrays are packed.
struct RNNStep {
  RNNMode mode = RNNMode::lstm;
  std::int64_t batch = 0, hidden = 0;
  bool clip = false, clip_nan = false;
  float clip_min = 0, clip_max = 0;
  // forward
  void* gates = nullptr;          // (N, G·H): in, the i2h product without bias; out, the activated gates
  const void* hh = nullptr;       // (N, G·H): the h2h product without bias
  const void* bias_i = nullptr;   // (G·H)
  const void* bias_h = nullptr;   // (G·H)
  const void* h_prev = nullptr;   // (N, H): GRU
  const void* c_prev = nullptr;   // (N, H): LSTM
  void* c = nullptr;              // (N, H): LSTM, the new cell state
  void* h = nullptr;              // (N, H): the new state (an LSTM with a projection: o·tanh(c))
  void* hn = nullptr;             // (N, H): GRU, W_hn h + b_hn
  // backward (gates, c_prev, c, h_prev and hn as the forward step left them)
  const void* dh = nullptr;       // (N, H): the gradient of h (of o·tanh(c) with a projection)
  void* dc = nullptr;             // (N, H): LSTM, in: the gradient of c; out: that of c_prev
  void* d_gates_i = nullptr;      // (N, G·H): the gradient of the i2h product (and its bias)
  void* d_gates_h = nullptr;      // (N, G·H): GRU, that of the h2h product; the others: d_gates_i
  void* dh_prev = nullptr;        // (N, H): GRU, z·dh (the h2h product's part is added by a GEMM)
};

// The time loop of one layer and direction (no projection), for a device that runs it whole
// (RNNDeviceKernels::recurrence). step(i) gives the i-th step's kernel arguments (t = i forward
// in time, T - 1 - i backward), s.hh the (N, G·H) buffer of the h2h product. Forward, per step:
// hh = h_prev · W_h2hᵀ, then the step. Backward, per step: s.dh = dy (rows dy_stride apart, null:
// zero) + dh_next, the step, then dh_next = d_gates_h · W_h2h (added to the step's z·dh for a GRU).
struct RNNRecurrence {
  bool forward = true;
  std::int64_t steps = 0, batch = 0, hidden = 0;
  const void* w_h2h = nullptr;  // (G·H, H)
  std::function<RNNStep(std::int64_t)> step;
  std::function<const void*(std::int64_t)> dy;  // backward
  std::int64_t dy_stride = 0;
  void* dh_next = nullptr;  // backward: (N, H), in: the gradient of the last state; out: the first's
};

// The unfused path's kernels on one device: the CPU loops (rnn.cpp) or CUDA kernels (cuda/ops/rnn.cu).
struct RNNDeviceKernels {
  void (*step_forward)(const ExecContext& ec, DType dt, const RNNStep& s);
  void (*step_backward)(const ExecContext& ec, DType dt, const RNNStep& s);
  // out (rows, cols) = a (rows, cols, rows a_stride elements apart) + b (packed; null: none).
  void (*add_rows)(const ExecContext& ec, DType dt, void* out, const void* a, std::int64_t a_stride, const void* b,
                   std::int64_t rows, std::int64_t cols);
  void (*fill)(const ExecContext& ec, DType dt, void* out, std::int64_t n, double value);
  // mask = 1/(1-p) where a uniform draw from ec's generator is above p, else 0; x *= mask.
  void (*dropout)(const ExecContext& ec, DType dt, void* x, void* mask, std::int64_t n, double p);
  void (*multiply)(const ExecContext& ec, DType dt, void* out, const void* a, const void* b, std::int64_t n);
  // The whole time loop in one call (RNNRecurrence); false, with nothing done, where the device
  // leaves the case to the loop of one GEMM and one step kernel per step. Null: always that loop.
  bool (*recurrence)(const ExecContext& ec, DType dt, RNNMode mode, const RNNRecurrence& r) = nullptr;
};

// RNN and _backward_RNN by GEMMs (gemm(): OpenBLAS or cuBLAS) and the step kernels of `device`:
// the reference path on every context, and the GPU's where cuDNN has no RNN for the case.
void unfused_rnn_forward(const ExecContext& ec, const Invocation& inv, const RNNDeviceKernels& device);
void unfused_rnn_backward(const ExecContext& ec, const Invocation& inv, const RNNDeviceKernels& device);
const RNNParams& rnn_params(const Invocation& inv);
RNNDims rnn_dims(const Invocation& inv);  // from RNN's invocation or _backward_RNN's

// --- the element functions of one step: row n of the batch, unit j of the hidden state ----------
// Each step computes in ComputeType<T> (float for the 16-bit types) and rounds once per store.
template <class T>
NDG_HD ComputeType<T> rnn_load(const void* p, std::int64_t i) {
  return static_cast<ComputeType<T>>(static_cast<const T*>(p)[i]);
}
template <class T, class A>
NDG_HD void rnn_store(void* p, std::int64_t i, A v) {
  static_cast<T*>(p)[i] = static_cast<T>(v);
}
// exp and tanh of the step kernels. A GPU has its own fast ones; on the host, float's are
// polynomials (Cephes' expf and tanhf, within 2 ulp) that the CPU loops vectorise, where glibc's
// expf and tanhf are calls, one element at a time: they took a third of an LSTM step on cpu(0).
[[gnu::always_inline]] inline float host_expf(float in) {
  const float x = in >= -87.0f ? (in <= 88.0f ? in : 88.0f) : -87.0f;  // 2^n a normal float; NaN: -87
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x / ln 2)
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);  // 2^n
  return in != in ? in : e * scale;
}
[[gnu::always_inline]] inline float host_tanhf(float x) {
  const float a = x < 0 ? -x : x;
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = x * (1.0f + p * z);  // keeps the sign of -0
  const float large = 1.0f - 2.0f / (host_expf(2.0f * a) + 1.0f);
  return a < 0.625f ? small : (x < 0 ? -large : large);
}
template <class A>
NDG_HD A step_exp(A x) {
#ifdef __CUDA_ARCH__
  return std::exp(x);
#else
  if constexpr (std::is_same_v<A, float>) return host_expf(x);
  else return std::exp(x);
#endif
}
template <class A>
NDG_HD A step_tanh(A x) {
#ifdef __CUDA_ARCH__
  return std::tanh(x);
#else
  if constexpr (std::is_same_v<A, float>) return host_tanhf(x);
  else return std::tanh(x);
#endif
}
template <class A>
NDG_HD A rnn_sigmoid(A x) { return A(1) / (A(1) + step_exp(-x)); }

// The step of mode M; rnn_step_*_element dispatch on the step's mode. The CPU loops call these
// directly, so that each vectorised loop is compiled for one mode without branches.
// kNoClip: the caller knows that s.clip is false (the CPU loops, which vectorise only without the
// clipping's selects on a scalar flag).
template <class T, RNNMode M, bool kNoClip = false>
NDG_HD void rnn_step_forward_as(const RNNStep& s, std::int64_t n, std::int64_t j) {
  using A = ComputeType<T>;
  const std::int64_t H = s.hidden, G = rnn_gates(M), row = n * G * H, at = n * H + j;
  // pre-activation of gate g: the i2h and h2h products and both biases
  const auto pre = [&](std::int64_t g) {
    return rnn_load<T>(s.gates, row + g * H + j) + rnn_load<T>(s.hh, row + g * H + j) +
           rnn_load<T>(s.bias_i, g * H + j) + rnn_load<T>(s.bias_h, g * H + j);
  };
  if constexpr (M == RNNMode::rnn_relu || M == RNNMode::rnn_tanh) {
    const A x = pre(0);
    A h;
    if constexpr (M == RNNMode::rnn_tanh) h = step_tanh(x);
    else h = x > A(0) ? x : A(0);
    rnn_store<T>(s.gates, row + j, h);
    rnn_store<T>(s.h, at, h);
  } else if constexpr (M == RNNMode::lstm) {
    const A i = rnn_sigmoid(pre(0)), f = rnn_sigmoid(pre(1)), g = step_tanh(pre(2)), o = rnn_sigmoid(pre(3));
    A c = f * rnn_load<T>(s.c_prev, at) + i * g;
    if (!kNoClip && s.clip) {
      const A lo = A(s.clip_min), hi = A(s.clip_max);
      const A kept = s.clip_nan && c != c ? lo : c;
      c = kept < lo ? lo : kept > hi ? hi : kept;
    }
    rnn_store<T>(s.gates, row + j, i);
    rnn_store<T>(s.gates, row + H + j, f);
    rnn_store<T>(s.gates, row + 2 * H + j, g);
    rnn_store<T>(s.gates, row + 3 * H + j, o);
    rnn_store<T>(s.c, at, c);
    // h from c as stored, so that backward (which reads the stored c) differentiates this h
    rnn_store<T>(s.h, at, o * step_tanh(static_cast<A>(static_cast<T>(c))));
  } else {
    const A r = rnn_sigmoid(pre(0)), z = rnn_sigmoid(pre(1));
    const A hn = rnn_load<T>(s.hh, row + 2 * H + j) + rnn_load<T>(s.bias_h, 2 * H + j);
    const A xn = rnn_load<T>(s.gates, row + 2 * H + j) + rnn_load<T>(s.bias_i, 2 * H + j);
    const A nn = step_tanh(xn + r * hn);
    rnn_store<T>(s.gates, row + j, r);
    rnn_store<T>(s.gates, row + H + j, z);
    rnn_store<T>(s.gates, row + 2 * H + j, nn);
    rnn_store<T>(s.hn, at, hn);
    rnn_store<T>(s.h, at, (A(1) - z) * nn + z * rnn_load<T>(s.h_prev, at));
  }
}

// GRU's gates have a gradient of the h2h product of their own (d_gates_h: n's differs); the
// other modes' d_gates_h is d_gates_i.
template <class T, RNNMode M, bool kNoClip = false>
NDG_HD void rnn_step_backward_as(const RNNStep& s, std::int64_t n, std::int64_t j) {
  using A = ComputeType<T>;
  const std::int64_t H = s.hidden, G = rnn_gates(M), row = n * G * H, at = n * H + j;
  const A dh = rnn_load<T>(s.dh, at);
  const auto gate = [&](std::int64_t g) { return rnn_load<T>(s.gates, row + g * H + j); };
  if constexpr (M == RNNMode::rnn_relu || M == RNNMode::rnn_tanh) {
    const A h = gate(0);
    A d;
    if constexpr (M == RNNMode::rnn_tanh) d = dh * (A(1) - h * h);
    else d = h > A(0) ? dh : A(0);
    rnn_store<T>(s.d_gates_i, row + j, d);
  } else if constexpr (M == RNNMode::lstm) {
    const A i = gate(0), f = gate(1), g = gate(2), o = gate(3);
    const A c = rnn_load<T>(s.c, at), tc = step_tanh(c);
    const A dc_in = rnn_load<T>(s.dc, at) + dh * o * (A(1) - tc * tc);
    // the clamp's derivative: 0 where c was clipped
    const A dc = !kNoClip && s.clip && (c <= A(s.clip_min) || c >= A(s.clip_max)) ? A(0) : dc_in;
    rnn_store<T>(s.d_gates_i, row + j, dc * g * i * (A(1) - i));
    rnn_store<T>(s.d_gates_i, row + H + j, dc * rnn_load<T>(s.c_prev, at) * f * (A(1) - f));
    rnn_store<T>(s.d_gates_i, row + 2 * H + j, dc * i * (A(1) - g * g));
    rnn_store<T>(s.d_gates_i, row + 3 * H + j, dh * tc * o * (A(1) - o));
    rnn_store<T>(s.dc, at, dc * f);
  } else {
    const A r = gate(0), z = gate(1), nn = gate(2), hn = rnn_load<T>(s.hn, at);
    const A dn = dh * (A(1) - z) * (A(1) - nn * nn);
    const A dz = dh * (rnn_load<T>(s.h_prev, at) - nn) * z * (A(1) - z);
    const A dr = dn * hn * r * (A(1) - r);
    rnn_store<T>(s.d_gates_i, row + j, dr);
    rnn_store<T>(s.d_gates_i, row + H + j, dz);
    rnn_store<T>(s.d_gates_i, row + 2 * H + j, dn);
    rnn_store<T>(s.d_gates_h, row + j, dr);
    rnn_store<T>(s.d_gates_h, row + H + j, dz);
    rnn_store<T>(s.d_gates_h, row + 2 * H + j, dn * r);
    rnn_store<T>(s.dh_prev, at, dh * z);
  }
}

// f<M>() for the step's mode M.
template <class F>
NDG_HD void with_rnn_mode(RNNMode mode, F&& f) {
  switch (mode) {
    case RNNMode::rnn_relu: return f(std::integral_constant<RNNMode, RNNMode::rnn_relu>{});
    case RNNMode::rnn_tanh: return f(std::integral_constant<RNNMode, RNNMode::rnn_tanh>{});
    case RNNMode::lstm: return f(std::integral_constant<RNNMode, RNNMode::lstm>{});
    case RNNMode::gru: return f(std::integral_constant<RNNMode, RNNMode::gru>{});
  }
}

template <class T>
NDG_HD void rnn_step_forward_element(const RNNStep& s, std::int64_t n, std::int64_t j) {
  with_rnn_mode(s.mode, [&](auto m) { rnn_step_forward_as<T, decltype(m)::value>(s, n, j); });
}

template <class T>
NDG_HD void rnn_step_backward_element(const RNNStep& s, std::int64_t n, std::int64_t j) {
  with_rnn_mode(s.mode, [&](auto m) { rnn_step_backward_as<T, decltype(m)::value>(s, n, j); });
}

namespace gpu {
void rnn(const ExecContext& ec, const Invocation& inv);
void rnn_backward(const ExecContext& ec, const Invocation& inv);
// The bytes of cuDNN's reserve space for this call on gpu(device), or -1 where the build has no
// cuDNN or cuDNN has no RNN for it (the unfused path runs then).
std::int64_t rnn_cudnn_reserve_bytes(int device, const RNNParams& p, const RNNDims& dims, DType dtype);
}  // namespace gpu

}  // namespace mx::op
