// The RNN family: RNN and _backward_RNN (MXNet's fused recurrent op). Here: the front end,
// inference, the gradient, the attributes, and the unfused path, which every context can run:
// per layer and direction, one GEMM for the inputs' products of all time steps, then per step a
// GEMM with the previous state and one fused kernel for the gates (rnn_kernels.hpp); backward
// walks the steps in reverse, then computes the weights' gradients in one GEMM each over all
// steps. The CPU's step kernels are here; GPUs run this path with the kernels of cuda/ops/rnn.cu,
// or cuDNN (cuda/cudnn_rnn.cpp) after nd::set_rnn_cudnn(true).
#include "ndarray/ops/rnn.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "ndarray/autograd/autograd.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/backend/host_random.hpp"
#include "ndarray/core/checks.hpp"
#include "ndarray/ops/attrs.hpp"
#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/linalg_kernels.hpp"
#include "ndarray/ops/parallel.hpp"
#include "ndarray/ops/rnn_kernels.hpp"
#include "ndarray/profiler/profiler.hpp"

namespace mx::op {

const char* rnn_mode_name(RNNMode mode) {
  switch (mode) {
    case RNNMode::rnn_relu: return "rnn_relu";
    case RNNMode::rnn_tanh: return "rnn_tanh";
    case RNNMode::lstm: return "lstm";
    case RNNMode::gru: return "gru";
  }
  return "?";
}

namespace {
std::atomic<bool> cudnn_enabled{false};  // nd::set_rnn_cudnn says why
}  // namespace

bool rnn_cudnn_enabled() { return cudnn_enabled.load(std::memory_order_relaxed); }

RNNReserve::RNNReserve(const RNNDims& dims) : dims_(dims) {
  const std::int64_t tn = dims.seq * dims.batch, h = dims.hidden;
  per_direction_ = tn * dims.gate_rows() + (dims.seq + 1) * dims.batch * dims.state;
  if (dims.gates == 4) per_direction_ += (dims.seq + 1) * dims.batch * h;
  if (dims.gates == 3) per_direction_ += tn * h;
  if (dims.projection > 0) per_direction_ += tn * h;
  per_layer_ = dims.directions * per_direction_ + 2 * tn * dims.directions * dims.state;
  total_ = dims.layers * per_layer_;
}

RNNReserve::Part RNNReserve::part(std::int64_t l, std::int64_t d) const {
  const std::int64_t tn = dims_.seq * dims_.batch, h = dims_.hidden;
  Part p;
  p.gates = l * per_layer_ + d * per_direction_;
  p.h = p.gates + tn * dims_.gate_rows();
  std::int64_t next = p.h + (dims_.seq + 1) * dims_.batch * dims_.state;
  if (dims_.gates == 4) p.c = std::exchange(next, next + (dims_.seq + 1) * dims_.batch * h);
  if (dims_.gates == 3) p.hn = std::exchange(next, next + tn * h);
  if (dims_.projection > 0) p.r = next;
  return p;
}

std::int64_t RNNReserve::layer_input(std::int64_t l) const { return l * per_layer_ + dims_.directions * per_direction_; }
std::int64_t RNNReserve::mask(std::int64_t l) const {
  return layer_input(l) + dims_.seq * dims_.batch * dims_.directions * dims_.state;
}

namespace {

using nd::NDArray;
using Grads = std::vector<NDArray>;

bool is_lstm(const RNNParams& p) { return p.mode == RNNMode::lstm; }

// RNN's inputs: data, parameters, state and, for an LSTM, state_cell (a none array otherwise).
const NDArray& state_cell_of(const Invocation& inv, std::size_t index) {
  static const NDArray none;
  return inv.inputs.size() > index ? inv.inputs[index] : none;
}

// The reserve: cuDNN's where it runs the call, else the unfused path's (RNNReserve). A call with
// dropout between layers keeps the unfused path's size in both modes (cuDNN runs it in prediction,
// which needs no reserve), so that a graph replayed in the other mode fits its buffer.
template <class Query>  // gpu::rnn_cudnn_reserve_bytes, or nullptr in a CPU-only build
std::int64_t cudnn_reserve(Query query, Context ctx, const RNNParams& p, const RNNDims& dims, DType dtype) {
  if constexpr (std::is_null_pointer_v<Query>) {
    return -1;
  } else {
    return ctx.is_gpu() ? query(ctx.device_id(), p, dims, dtype) : -1;
  }
}

std::int64_t reserve_bytes(Context ctx, const RNNParams& p, const RNNDims& dims, DType dtype) {
  if (rnn_cudnn_enabled() && !(p.p > 0 && p.num_layers > 1)) {
    const std::int64_t bytes = cudnn_reserve(NDG_GPU_KERNEL(gpu::rnn_cudnn_reserve_bytes), ctx, p, dims, dtype);
    if (bytes >= 0) return bytes;
  }
  return RNNReserve(dims).elements() * static_cast<std::int64_t>(dtype_size(dtype));
}

void check_operand(const char* what, const NDArray& a, const Shape& want, const NDArray& data) {
  if (a.shape() != want) {
    throw ShapeError(std::string("RNN: ") + what + " " + nd::describe(a) + " does not fit data " + nd::describe(data) +
                     "; expected " + want.tuple_str());
  }
  if (a.dtype() != data.dtype()) {
    throw DTypeError(std::string("RNN: ") + what + " " + nd::describe(a) + " must have the data's dtype " +
                     dtype_name(data.dtype()));
  }
}

void rnn_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const RNNParams& p = rnn_params(inv);
  const NDArray& data = inv.inputs[0];
  nd::check_floating("RNN", data);
  if (data.ndim() != 3 || data.shape()[0] < 1 || data.shape()[1] < 1) {
    throw ShapeError("RNN: data must be (sequence length, batch, input size) with at least one step and one "
                     "sequence (layout TNC), got " + nd::describe(data));
  }
  const RNNDims dims = rnn_dims(inv);
  check_operand("parameters", inv.inputs[1], Shape{dims.parameters()}, data);
  check_operand("state", inv.inputs[2], Shape{dims.states(), dims.batch, dims.state}, data);
  const NDArray& cell = state_cell_of(inv, 3);
  if (is_lstm(p)) {
    if (cell.is_none()) throw ValueError("RNN: mode lstm needs state_cell, got none");
    check_operand("state_cell", cell, Shape{dims.states(), dims.batch, dims.hidden}, data);
  } else if (!cell.is_none()) {
    throw ValueError(std::string("RNN: mode ") + rnn_mode_name(p.mode) + " takes no state_cell, got " +
                     nd::describe(cell));
  }
  out.assign(1, {Shape{dims.seq, dims.batch, dims.directions * dims.state}, data.dtype()});
  if (p.state_outputs) out.push_back({inv.inputs[2].shape(), data.dtype()});
  if (p.state_outputs && is_lstm(p)) out.push_back({cell.shape(), data.dtype()});
  out.push_back({Shape{reserve_bytes(data.context(), p, dims, data.dtype())}, DType::uint8});
}

// _backward_RNN's inputs: dy, dhy, dcy (none: zero), data, parameters, state, state_cell, y,
// reserve; outputs: the gradients of data, parameters, state and (LSTM) state_cell.
void backward_infer(const Invocation& inv, std::vector<OutputSpec>& out) {
  const RNNParams& p = rnn_params(inv);
  out = {{inv.inputs[3].shape(), inv.inputs[3].dtype()},
         {inv.inputs[4].shape(), inv.inputs[4].dtype()},
         {inv.inputs[5].shape(), inv.inputs[5].dtype()}};
  if (is_lstm(p)) out.push_back({inv.inputs[6].shape(), inv.inputs[6].dtype()});
}

// --- the CPU's step kernels ------------------------------------------------------------------------

// The batch's rows cut into tiles of kStepTile units, each tile one vectorised loop of the step
// of the call's mode.
constexpr std::int64_t kStepTile = 64;

template <class T, bool kForward>
void cpu_step(const RNNStep& s) {
  const std::int64_t tiles_per_row = (s.hidden + kStepTile - 1) / kStepTile;
  with_rnn_mode(s.mode, [&](auto mode) {
    constexpr RNNMode M = decltype(mode)::value;
    parallel_for(s.batch * tiles_per_row, [&](std::int64_t tile) {
      const std::int64_t n = tile / tiles_per_row, j0 = tile % tiles_per_row * kStepTile;
      const std::int64_t j1 = std::min(j0 + kStepTile, s.hidden);
      const RNNStep step = s;
#pragma omp simd
      for (std::int64_t j = j0; j < j1; ++j) {
        if constexpr (kForward) rnn_step_forward_as<T, M>(step, n, j);
        else rnn_step_backward_as<T, M>(step, n, j);
      }
    }, s.batch * s.hidden * 16);
  });
}

void cpu_step_forward(const ExecContext&, DType dt, const RNNStep& s) {
  dispatch_floating(dt, "RNN", [&](auto tag) { cpu_step<decltype(tag), true>(s); });
}

void cpu_step_backward(const ExecContext&, DType dt, const RNNStep& s) {
  dispatch_floating(dt, "RNN", [&](auto tag) { cpu_step<decltype(tag), false>(s); });
}

void cpu_add_rows(const ExecContext&, DType dt, void* out, const void* a, std::int64_t a_stride, const void* b,
                  std::int64_t rows, std::int64_t cols) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    const T *x = static_cast<const T*>(a), *y = static_cast<const T*>(b);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        o[r * cols + c] = static_cast<T>(static_cast<ComputeType<T>>(x[r * a_stride + c]) +
                                         (y ? static_cast<ComputeType<T>>(y[r * cols + c]) : ComputeType<T>(0)));
      }
    }
  });
}

void cpu_fill(const ExecContext&, DType dt, void* out, std::int64_t n, double value) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(static_cast<T*>(out), n, static_cast<T>(value));
  });
}

// As Dropout's CPU loop: uniform draws in (0, 1], a multiple of 4 of them.
void cpu_dropout(const ExecContext& ec, DType dt, void* x, void* mask, std::int64_t n, double p) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    using U = ComputeType<T>;
    const std::int64_t padded = (n + 3) / 4 * 4;
    const Workspace draws(ec, static_cast<std::size_t>(padded) * sizeof(U));
    detail::host_random_uniform(dtype_of<U>, draws.data(), padded, -1);
    T *v = static_cast<T*>(x), *m = static_cast<T*>(mask);
    const U* u = draws.as<U>();
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    parallel_for_simd(n, [&](std::int64_t i) {
      m[i] = u[i] > static_cast<U>(p) ? scale : T(0);
      v[i] = static_cast<T>(v[i] * m[i]);
    });
  });
}

void cpu_multiply(const ExecContext&, DType dt, void* out, const void* a, const void* b, std::int64_t n) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T*>(a), *y = static_cast<const T*>(b);
    T* o = static_cast<T*>(out);
    parallel_for_simd(n, [&](std::int64_t i) { o[i] = static_cast<T>(x[i] * y[i]); });
  });
}

// Note [the CPU's recurrence]
// Per step, the loop of rnn.cpp's unfused path makes a GEMM over the team (OpenBLAS packs W_h2h
// again each time) and a step loop over the team: two regions and their joins, and W_h2h read
// from memory, for a product of N x G·H x H that is small at a training batch. Here one region
// runs the whole time loop: each thread owns a slice of the hidden units and, per step, computes
// its units' h2h products (one single-threaded GEMM on its rows of W_h2h, packed together once
// per call and kept in its cache) and their step, then waits once for the others before the next
// step, which reads every unit of h. Backward likewise: each thread's units' gradients, one barrier, then its columns of
// dh_prev = dG_h · W_h2h, which its own units' next step reads.
constexpr std::int64_t kUnitAlign = 8;  // units per slice: a multiple of this (a vector of floats)

// The step for units [j0, j1) of every row, vectorised along the units. s by value: a copy whose
// address never escapes, so that its pointers stay in registers through the loop.
template <class T, RNNMode M, bool kForward, bool kNoClip>
void step_units_as(const RNNStep s, std::int64_t j0, std::int64_t j1) {
  for (std::int64_t n = 0; n < s.batch; ++n) {
#pragma omp simd
    for (std::int64_t j = j0; j < j1; ++j) {
      if constexpr (kForward) rnn_step_forward_as<T, M, kNoClip>(s, n, j);
      else rnn_step_backward_as<T, M, kNoClip>(s, n, j);
    }
  }
}
template <class T, RNNMode M, bool kForward>
void step_units(const RNNStep& s, std::int64_t j0, std::int64_t j1) {
  if (s.clip) step_units_as<T, M, kForward, false>(s, j0, j1);
  else step_units_as<T, M, kForward, true>(s, j0, j1);
}

template <class T, RNNMode M>
void cpu_recurrence_as(const ExecContext& ec, const RNNRecurrence& r, int threads, std::int64_t units_per) {
  const std::int64_t N = r.batch, H = r.hidden, G = rnn_gates(M), GH = G * H, GU = G * units_per;
  const auto* w = static_cast<const T*>(r.w_h2h);
  const double beta = M == RNNMode::gru ? 1.0 : 0.0;  // GRU: dh_prev holds z·dh already
  // Forward, per thread: its rows of W_h2h packed together (G·U, H), so that a step's product is one
  // GEMM, and that product's (N, G·U) before it goes to its columns of hh.
  const std::int64_t per_thread = r.forward ? GU * H + N * GU : 0;
  const Workspace scratch(ec, static_cast<std::size_t>(threads * per_thread) * sizeof(T));
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t j0 = std::min(H, omp_get_thread_num() * units_per), j1 = std::min(H, j0 + units_per);
    const std::int64_t U = j1 - j0;
    // Forward only (backward has no scratch: no pointer arithmetic on null).
    T* const pack = r.forward ? static_cast<T*>(scratch.data()) + omp_get_thread_num() * per_thread : nullptr;
    T* const product = r.forward ? pack + GU * H : nullptr;
    if (r.forward) {
      for (std::int64_t g = 0; g < G; ++g) {
        std::copy(w + (g * H + j0) * H, w + (g * H + j1) * H, pack + g * U * H);
      }
    }
    for (std::int64_t i = 0; i < r.steps; ++i) {
      const RNNStep s = r.step(i);
      if (U > 0 && r.forward) {
        // hh[:, gH + j0 .. gH + j1) = h_prev · W[gH + j0 .. gH + j1)ᵀ for every gate g
        cpu_gemm_on_thread(dtype_of<T>, {.trans_b = true, .m = N, .n = G * U, .k = H}, s.h_prev, H, pack, H, product,
                           G * U);
        auto* hh = static_cast<T*>(const_cast<void*>(s.hh));
        for (std::int64_t n = 0; n < N; ++n) {
          for (std::int64_t g = 0; g < G; ++g) {
            std::copy(product + (n * G + g) * U, product + (n * G + g + 1) * U, hh + n * GH + g * H + j0);
          }
        }
        step_units<T, M, true>(s, j0, j1);
      } else if (U > 0) {
        const auto* dy = static_cast<const T*>(r.dy(i));
        auto* dh = static_cast<T*>(const_cast<void*>(s.dh));
        const auto* dh_next = static_cast<const T*>(r.dh_next);
        for (std::int64_t n = 0; n < N; ++n) {
#pragma omp simd
          for (std::int64_t j = j0; j < j1; ++j) dh[n * H + j] = dy[n * r.dy_stride + j] + dh_next[n * H + j];
        }
        step_units<T, M, false>(s, j0, j1);
      }
#pragma omp barrier
      if (!r.forward && U > 0) {  // dh_next[:, j0 .. j1) = d_gates_h · W_h2h[:, j0 .. j1)
        cpu_gemm_on_thread(dtype_of<T>, {.m = N, .n = U, .k = GH, .beta = beta}, s.d_gates_h, GH, w + j0, H,
                           static_cast<T*>(r.dh_next) + j0, H);
      }
    }
  }
}

bool cpu_recurrence(const ExecContext& ec, DType dt, RNNMode mode, const RNNRecurrence& r) {
  if ((dt != DType::float32 && dt != DType::float64) || !cpu_gemm_runs_on_caller()) return false;
  const std::int64_t H = r.hidden;
  // A team where a step's product is worth splitting, slices of whole vectors of units. The whole
  // team enters even where some threads get no units (they only wait): a smaller region would
  // park threads that the next full one wakes again (ndarray/ops/linalg.cpp, cpu_gemm_one).
  const std::int64_t work = r.batch * rnn_gates(mode) * H * H;
  const int team = work >= (std::int64_t{1} << 18) ? threads_for(work) : 1;
  const std::int64_t units_per =
      std::min(H, ((H + team - 1) / team + kUnitAlign - 1) / kUnitAlign * kUnitAlign);
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      with_rnn_mode(mode, [&](auto m) { cpu_recurrence_as<T, decltype(m)::value>(ec, r, team, units_per); });
    }
  });
  return true;
}

const RNNDeviceKernels cpu_kernels{&cpu_step_forward, &cpu_step_backward, &cpu_add_rows, &cpu_fill,
                                   &cpu_dropout,      &cpu_multiply,      &cpu_recurrence};

void rnn_cpu(const ExecContext& ec, const Invocation& inv) { unfused_rnn_forward(ec, inv, cpu_kernels); }
void rnn_backward_cpu(const ExecContext& ec, const Invocation& inv) { unfused_rnn_backward(ec, inv, cpu_kernels); }

// Element offsets into an array of the data's dtype.
struct Elements {
  std::size_t size;
  char* operator()(const void* base, std::int64_t elements) const {
    return static_cast<char*>(const_cast<void*>(base)) + static_cast<std::size_t>(elements) * size;
  }
};

}  // namespace

const RNNParams& rnn_params(const Invocation& inv) { return inv.params.as<RNNParams>(); }

RNNDims rnn_dims(const Invocation& inv) {
  const bool backward = inv.inputs.size() == 9;  // _backward_RNN's data is input 3
  const Shape& s = inv.inputs[backward ? 3 : 0].shape();
  return RNNDims(rnn_params(inv), s[0], s[1], s[2]);
}

// Note [the unfused RNN]
// Per layer l and direction d, with X the layer's input (T·N rows):
//   gates = X · W_i2hᵀ                           one GEMM for all steps
//   per step t: hh = h_prev · W_h2hᵀ, then the step kernel (activations, c, h) in place
//   with a projection: h = (o·tanh c) · W_h2rᵀ
// and the layer's output interleaves the directions' states (T, N, D·S). Backward walks the steps
// in reverse: dh = dy_t + dh_next (the step kernel gives the gates' gradients dG), dh_next =
// dG_h · W_h2h; then over all steps at once: dW_h2h = dG_hᵀ · H_prev (the states' slots make every
// step's previous state one block), dW_i2h = dG_iᵀ · X, the biases' gradients as dGᵀ · 1, and
// dX = dG_i · W_i2h, summed over the directions.
void unfused_rnn_forward(const ExecContext& ec, const Invocation& inv, const RNNDeviceKernels& k) {
  const RNNParams& p = rnn_params(inv);
  const RNNDims dims = rnn_dims(inv);
  const RNNReserve rs(dims);
  const DType dt = inv.inputs[0].dtype();
  const Elements at{dtype_size(dt)};
  const std::int64_t T = dims.seq, N = dims.batch, H = dims.hidden, S = dims.state, D = dims.directions;
  const std::int64_t GH = dims.gate_rows(), TN = T * N;
  const void* w = inv.inputs[1].data();
  const void *hx = inv.inputs[2].data(), *cx = is_lstm(p) ? inv.inputs[3].data() : nullptr;
  char* reserve = static_cast<char*>(inv.outputs.back().data());
  if (inv.outputs.back().size() < rs.elements() * static_cast<std::int64_t>(at.size)) {
    throw Error("RNN: the reserve " + nd::describe(inv.outputs.back()) + " is smaller than the unfused path's " +
                std::to_string(rs.elements() * static_cast<std::int64_t>(at.size)) + " bytes");
  }
  void* hy = p.state_outputs ? inv.outputs[1].data() : nullptr;
  void* cy = p.state_outputs && is_lstm(p) ? inv.outputs[2].data() : nullptr;
  Backend& backend = mx::backend(ec.ctx);
  const Workspace hh(ec, static_cast<std::size_t>(N * GH) * at.size);
  for (std::int64_t l = 0; l < dims.layers; ++l) {
    const void* x = l == 0 ? inv.inputs[0].data() : at(reserve, rs.layer_input(l));
    void* layer_out = l + 1 == dims.layers ? inv.outputs[0].data() : at(reserve, rs.layer_input(l + 1));
    for (std::int64_t d = 0; d < D; ++d) {
      const RNNReserve::Part part = rs.part(l, d);
      const std::int64_t state = l * D + d;
      char *gates = at(reserve, part.gates), *hs = at(reserve, part.h), *cs = at(reserve, part.c);
      gemm(ec, dt, {.trans_b = true, .m = TN, .n = GH, .k = dims.layer_input(l)}, x, at(w, dims.i2h_weight(l, d)), gates);
      const std::int64_t first = RNNReserve::initial_slot(d, T);
      backend.copy(ec.ctx, at(hs, first * N * S), at(hx, state * N * S), static_cast<std::size_t>(N * S) * at.size);
      if (cx) backend.copy(ec.ctx, at(cs, first * N * H), at(cx, state * N * H), static_cast<std::size_t>(N * H) * at.size);
      // Step i's kernel arguments (t = i forward in time, T - 1 - i backward).
      const auto step_at = [&](std::int64_t step) {
        const std::int64_t t = d == 0 ? step : T - 1 - step;
        const std::int64_t slot = RNNReserve::slot(d, t), prev = d == 0 ? t : t + 1;
        RNNStep s;
        s.mode = p.mode;
        s.batch = N;
        s.hidden = H;
        s.clip = p.clip;
        s.clip_nan = p.clip_nan;
        s.clip_min = static_cast<float>(p.clip_min);
        s.clip_max = static_cast<float>(p.clip_max);
        s.gates = at(gates, t * N * GH);
        s.hh = hh.data();
        s.bias_i = at(w, dims.i2h_bias(l, d));
        s.bias_h = at(w, dims.h2h_bias(l, d));
        s.h_prev = at(hs, prev * N * S);
        if (cx) {
          s.c_prev = at(cs, prev * N * H);
          s.c = at(cs, slot * N * H);
        }
        if (p.mode == RNNMode::gru) s.hn = at(reserve, part.hn + t * N * H);
        s.h = dims.projection > 0 ? at(reserve, part.r + t * N * H) : at(hs, slot * N * S);
        return s;
      };
      const RNNRecurrence whole{.forward = true, .steps = T, .batch = N, .hidden = H,
                                .w_h2h = at(w, dims.h2h_weight(l, d)), .step = step_at, .dy = nullptr, .dy_stride = 0,
                                .dh_next = nullptr};
      const profiler::Range range("RNN: the time steps");
      if (dims.projection > 0 || !k.recurrence || !k.recurrence(ec, dt, p.mode, whole)) {
        for (std::int64_t step = 0; step < T; ++step) {
          const RNNStep s = step_at(step);
          gemm(ec, dt, {.trans_b = true, .m = N, .n = GH, .k = S}, s.h_prev, at(w, dims.h2h_weight(l, d)), hh.data());
          k.step_forward(ec, dt, s);
          if (dims.projection > 0) {
            const std::int64_t slot = RNNReserve::slot(d, d == 0 ? step : T - 1 - step);
            gemm(ec, dt, {.trans_b = true, .m = N, .n = S, .k = H}, s.h, at(w, dims.h2r_weight(l, d)),
                 at(hs, slot * N * S));
          }
        }
      }
      // The states of steps 0..T-1 are one block from slot(d, 0); the layer's output takes them as
      // its columns d·S..(d+1)·S.
      backend.copy_2d(ec.ctx, at(layer_out, d * S), static_cast<std::size_t>(D * S) * at.size,
                      at(hs, RNNReserve::slot(d, 0) * N * S), static_cast<std::size_t>(S) * at.size,
                      static_cast<std::size_t>(S) * at.size, static_cast<std::size_t>(TN));
      const std::int64_t last = RNNReserve::slot(d, d == 0 ? T - 1 : 0);
      if (hy) backend.copy(ec.ctx, at(hy, state * N * S), at(hs, last * N * S), static_cast<std::size_t>(N * S) * at.size);
      if (cy) backend.copy(ec.ctx, at(cy, state * N * H), at(cs, last * N * H), static_cast<std::size_t>(N * H) * at.size);
    }
    if (l + 1 < dims.layers && p.p > 0 && p.training) {
      k.dropout(ec, dt, layer_out, at(reserve, rs.mask(l + 1)), TN * D * S, p.p);
    }
  }
}

void unfused_rnn_backward(const ExecContext& ec, const Invocation& inv, const RNNDeviceKernels& k) {
  const RNNParams& p = rnn_params(inv);
  const RNNDims dims = rnn_dims(inv);
  const RNNReserve rs(dims);
  const DType dt = inv.inputs[3].dtype();
  const Elements at{dtype_size(dt)};
  const std::int64_t T = dims.seq, N = dims.batch, H = dims.hidden, S = dims.state, D = dims.directions;
  const std::int64_t GH = dims.gate_rows(), TN = T * N, P = dims.projection;
  const bool gru = p.mode == RNNMode::gru, lstm = is_lstm(p);
  const void *dy = inv.inputs[0].data(), *dhy = inv.inputs[1].is_none() ? nullptr : inv.inputs[1].data();
  const void* dcy = inv.inputs[2].is_none() ? nullptr : inv.inputs[2].data();
  const void *w = inv.inputs[4].data(), *reserve = inv.inputs[8].data();
  void *dw = inv.outputs[1].data(), *dhx = inv.outputs[2].data(), *dcx = lstm ? inv.outputs[3].data() : nullptr;
  Backend& backend = mx::backend(ec.ctx);
  const auto bytes = [&](std::int64_t elements) { return static_cast<std::size_t>(elements) * at.size; };
  const Workspace d_gates_i(ec, bytes(TN * GH)), d_gates_h(ec, bytes(gru ? TN * GH : 0)), dh_all(ec, bytes(TN * S)),
      dh_next(ec, bytes(N * S)), dc(ec, bytes(lstm ? N * H : 0)), dr(ec, bytes(P > 0 ? N * H : 0)), ones(ec, bytes(TN)),
      layer_grad_a(ec, bytes(dims.layers > 1 ? TN * D * S : 0)), layer_grad_b(ec, bytes(dims.layers > 2 ? TN * D * S : 0));
  k.fill(ec, dt, ones.data(), TN, 1.0);
  void* dgh = gru ? d_gates_h.data() : d_gates_i.data();
  const void* layer_dy = dy;  // the gradient of layer l's output (T, N, D·S)
  for (std::int64_t l = dims.layers - 1; l >= 0; --l) {
    const void* x = l == 0 ? inv.inputs[3].data() : at(reserve, rs.layer_input(l));
    void* dx = l == 0 ? inv.outputs[0].data() : ((dims.layers - 1 - l) % 2 == 0 ? layer_grad_a.data() : layer_grad_b.data());
    const std::int64_t in = dims.layer_input(l);
    for (std::int64_t d = 0; d < D; ++d) {
      const RNNReserve::Part part = rs.part(l, d);
      const std::int64_t state = l * D + d;
      char *gates = at(reserve, part.gates), *hs = at(reserve, part.h), *cs = at(reserve, part.c);
      if (dhy) backend.copy(ec.ctx, dh_next.data(), at(dhy, state * N * S), bytes(N * S));
      else k.fill(ec, dt, dh_next.data(), N * S, 0.0);
      if (lstm && dcy) backend.copy(ec.ctx, dc.data(), at(dcy, state * N * H), bytes(N * H));
      else if (lstm) k.fill(ec, dt, dc.data(), N * H, 0.0);
      // Step i's kernel arguments (t = T - 1 - i forward in time, i backward).
      const auto time_of = [&](std::int64_t step) { return d == 0 ? T - 1 - step : step; };
      const auto step_at = [&](std::int64_t step) {
        const std::int64_t t = time_of(step);
        const std::int64_t slot = RNNReserve::slot(d, t), prev = d == 0 ? t : t + 1;
        RNNStep s;
        s.mode = p.mode;
        s.batch = N;
        s.hidden = H;
        s.clip = p.clip;
        s.clip_min = static_cast<float>(p.clip_min);
        s.clip_max = static_cast<float>(p.clip_max);
        s.gates = at(gates, t * N * GH);
        s.h_prev = at(hs, prev * N * S);
        if (lstm) {
          s.c_prev = at(cs, prev * N * H);
          s.c = at(cs, slot * N * H);
          s.dc = dc.data();
        }
        if (gru) s.hn = at(reserve, part.hn + t * N * H);
        s.dh = at(dh_all.data(), t * N * S);
        s.d_gates_i = at(d_gates_i.data(), t * N * GH);
        s.d_gates_h = at(dgh, t * N * GH);
        s.dh_prev = dh_next.data();
        return s;
      };
      const auto dy_at = [&](std::int64_t step) -> const void* { return at(layer_dy, time_of(step) * N * D * S + d * S); };
      const RNNRecurrence whole{.forward = false, .steps = T, .batch = N, .hidden = H,
                                .w_h2h = at(w, dims.h2h_weight(l, d)), .step = step_at, .dy = dy_at,
                                .dy_stride = D * S, .dh_next = dh_next.data()};
      std::optional<profiler::Range> range(std::in_place, "_backward_RNN: the time steps");
      if (P > 0 || !k.recurrence || !k.recurrence(ec, dt, p.mode, whole)) {
        for (std::int64_t step = 0; step < T; ++step) {
          RNNStep s = step_at(step);
          k.add_rows(ec, dt, at(dh_all.data(), time_of(step) * N * S), dy_at(step), D * S, dh_next.data(), N, S);
          if (P > 0) {  // the gradient of o·tanh(c): dh · W_h2r
            gemm(ec, dt, {.m = N, .n = H, .k = P}, s.dh, at(w, dims.h2r_weight(l, d)), dr.data());
            s.dh = dr.data();
          }
          k.step_backward(ec, dt, s);
          gemm(ec, dt, {.m = N, .n = S, .k = GH, .beta = gru ? 1.0 : 0.0}, s.d_gates_h, at(w, dims.h2h_weight(l, d)),
               dh_next.data());
        }
      }
      range.emplace("_backward_RNN: the weights' gradients");
      backend.copy(ec.ctx, at(dhx, state * N * S), dh_next.data(), bytes(N * S));
      if (lstm) backend.copy(ec.ctx, at(dcx, state * N * H), dc.data(), bytes(N * H));
      const char* h_prev = at(hs, (d == 0 ? 0 : 1) * N * S);  // every step's previous state, in step order
      gemm(ec, dt, {.trans_a = true, .m = GH, .n = S, .k = TN}, dgh, h_prev, at(dw, dims.h2h_weight(l, d)));
      gemm(ec, dt, {.trans_a = true, .m = GH, .n = in, .k = TN}, d_gates_i.data(), x, at(dw, dims.i2h_weight(l, d)));
      gemm(ec, dt, {.trans_a = true, .m = GH, .n = 1, .k = TN}, d_gates_i.data(), ones.data(), at(dw, dims.i2h_bias(l, d)));
      gemm(ec, dt, {.trans_a = true, .m = GH, .n = 1, .k = TN}, dgh, ones.data(), at(dw, dims.h2h_bias(l, d)));
      if (P > 0) {
        gemm(ec, dt, {.trans_a = true, .m = P, .n = H, .k = TN}, dh_all.data(), at(reserve, part.r),
             at(dw, dims.h2r_weight(l, d)));
      }
      gemm(ec, dt, {.m = TN, .n = in, .k = GH, .beta = d == 0 ? 0.0 : 1.0}, d_gates_i.data(),
           at(w, dims.i2h_weight(l, d)), dx);
    }
    if (l > 0 && p.p > 0 && p.training) k.multiply(ec, dt, dx, dx, at(reserve, rs.mask(l)), TN * D * S);
    layer_dy = dx;
  }
}

namespace {

const OpDef& backward_op();

Grads rnn_gradient(const Invocation& inv, const Grads& out_grads) {
  const RNNParams& p = rnn_params(inv);
  if (!p.training) {
    throw ValueError("RNN: its gradient needs the forward pass in training mode (autograd::record(), not "
                     "record(false) or predict_mode)");
  }
  const NDArray& y = inv.outputs[0];
  const NDArray dy = out_grads[0].is_none() ? nd::zeros(y.shape(), y.context(), y.dtype()) : out_grads[0];
  const NDArray dhy = p.state_outputs ? out_grads[1] : NDArray();
  const NDArray dcy = p.state_outputs && is_lstm(p) ? out_grads[2] : NDArray();
  const NDArray& cell = state_cell_of(inv, 3);
  // one gradient per input: data, parameters, state and (LSTM) state_cell
  return invoke(backward_op(), {dy, dhy, dcy, inv.inputs[0], inv.inputs[1], inv.inputs[2], cell, y, inv.outputs.back()},
                inv.params);
}

AttrPairs rnn_attrs(const Params& params) {
  const auto& p = params.as<RNNParams>();
  AttrPairs a{{"state_size", std::to_string(p.state_size)},
              {"num_layers", std::to_string(p.num_layers)},
              {"bidirectional", format_bool(p.bidirectional)},
              {"mode", rnn_mode_name(p.mode)},
              {"p", format_real(p.p)},
              {"state_outputs", format_bool(p.state_outputs)}};
  if (p.projection_size > 0) a.emplace_back("projection_size", std::to_string(p.projection_size));
  if (p.clip) {
    a.emplace_back("lstm_state_clip_min", format_real(p.clip_min));
    a.emplace_back("lstm_state_clip_max", format_real(p.clip_max));
    a.emplace_back("lstm_state_clip_nan", format_bool(p.clip_nan));
  }
  return a;
}

RNNParams make_params(const nd::RNNOptions& o, bool training) {
  RNNParams p;
  if (o.mode == "rnn_relu") p.mode = RNNMode::rnn_relu;
  else if (o.mode == "rnn_tanh") p.mode = RNNMode::rnn_tanh;
  else if (o.mode == "lstm") p.mode = RNNMode::lstm;
  else if (o.mode == "gru") p.mode = RNNMode::gru;
  else throw ValueError("RNN: unknown mode \"" + o.mode + "\"; valid: rnn_relu, rnn_tanh, lstm, gru");
  if (o.state_size < 1) throw ValueError("RNN: state_size must be >= 1, got " + std::to_string(o.state_size));
  if (o.num_layers < 1) throw ValueError("RNN: num_layers must be >= 1, got " + std::to_string(o.num_layers));
  if (!(o.p >= 0 && o.p < 1)) throw ValueError("RNN: p (dropout) must be in [0, 1), got " + format_real(o.p));
  if (o.projection_size < 0 || (o.projection_size > 0 && p.mode != RNNMode::lstm)) {
    throw ValueError("RNN: projection_size " + std::to_string(o.projection_size) +
                     " is for mode lstm only and must be >= 0 (0: none)");
  }
  if (o.lstm_state_clip_min.has_value() != o.lstm_state_clip_max.has_value()) {
    throw ValueError("RNN: lstm_state_clip_min and lstm_state_clip_max come together");
  }
  if (o.lstm_state_clip_min && (p.mode != RNNMode::lstm || !(*o.lstm_state_clip_min <= *o.lstm_state_clip_max))) {
    throw ValueError("RNN: state clipping is for mode lstm only, with lstm_state_clip_min <= lstm_state_clip_max; got [" +
                     format_real(*o.lstm_state_clip_min) + ", " + format_real(*o.lstm_state_clip_max) + "]");
  }
  p.state_size = o.state_size;
  p.num_layers = o.num_layers;
  p.projection_size = o.projection_size;
  p.bidirectional = o.bidirectional;
  p.state_outputs = o.state_outputs;
  p.p = o.p;
  p.training = training;
  p.clip = o.lstm_state_clip_min.has_value();
  p.clip_min = o.lstm_state_clip_min.value_or(0);
  p.clip_max = o.lstm_state_clip_max.value_or(0);
  p.clip_nan = o.lstm_state_clip_nan;
  return p;
}

// MXNet's attributes. use_sequence_length (variable lengths per sequence) is refused.
Params rnn_parse(const AttrList& attrs) {
  AttrReader a("RNN", attrs);
  nd::RNNOptions o;
  o.state_size = a.integer("state_size");
  o.num_layers = a.integer("num_layers");
  o.bidirectional = a.boolean("bidirectional", false);
  o.mode = a.choice("mode", "lstm", {"rnn_relu", "rnn_tanh", "lstm", "gru"});
  o.p = a.real("p", 0.0);
  o.state_outputs = a.boolean("state_outputs", false);
  o.projection_size = a.integer("projection_size", 0);
  const double no_clip = -1.0e300;
  const double clip_min = a.real("lstm_state_clip_min", no_clip), clip_max = a.real("lstm_state_clip_max", no_clip);
  if (clip_min != no_clip) o.lstm_state_clip_min = clip_min;
  if (clip_max != no_clip) o.lstm_state_clip_max = clip_max;
  o.lstm_state_clip_nan = a.boolean("lstm_state_clip_nan", false);
  if (a.boolean("use_sequence_length", false)) a.fail("use_sequence_length", "is not supported: every sequence has T steps");
  a.finish();
  return make_params(o, true);
}

bool rnn_mode(Params& params, bool training) {
  RNNParams p = params.as<RNNParams>();
  p.training = training;
  params = p;
  return true;
}

bool rnn_draws(const Params& params) { return rnn_drops_out(params.as<RNNParams>()); }

const OpDef& backward_op() {
  static const OpDef def{"_backward_RNN", &backward_infer, &rnn_backward_cpu, NDG_GPU_KERNEL(gpu::rnn_backward), nullptr,
                         &rnn_attrs, &rnn_parse};
  static const OpDef& reg = register_op(def);
  return reg;
}

const OpDef& rnn_op() {
  static const OpDef def = [] {
    OpDef d{"RNN", &rnn_infer, &rnn_cpu, NDG_GPU_KERNEL(gpu::rnn), &rnn_gradient, &rnn_attrs, &rnn_parse, false, &rnn_mode};
    d.random_with = &rnn_draws;
    return d;
  }();
  static const OpDef& reg = register_op(def);
  return reg;
}

[[maybe_unused]] const bool rnn_family_registered = (rnn_op(), backward_op(), true);

}  // namespace
}  // namespace mx::op

namespace mx::nd {

std::vector<NDArray> RNN(const NDArray& data, const NDArray& parameters, const NDArray& state, const NDArray& state_cell,
                         const RNNOptions& options) {
  for (const NDArray* a : {&data, &parameters, &state}) detail::check_not_none("RNN", *a);
  const op::RNNParams p = op::make_params(options, autograd::is_training());
  std::vector<NDArray> inputs{data, parameters, state};
  if (p.mode == op::RNNMode::lstm) {
    detail::check_not_none("RNN", state_cell);
    inputs.push_back(state_cell);
  } else if (!state_cell.is_none()) {
    throw ValueError("RNN: mode " + options.mode + " takes no state_cell, got " + describe(state_cell));
  }
  std::vector<NDArray> out = op::invoke(op::rnn_op(), std::move(inputs), p);
  out.pop_back();  // the reserve
  return out;
}

bool set_rnn_cudnn(bool enabled) { return op::cudnn_enabled.exchange(enabled); }

std::int64_t rnn_param_size(const RNNOptions& options, std::int64_t input_size) {
  if (input_size < 1) throw ValueError("rnn_param_size: input_size must be >= 1, got " + std::to_string(input_size));
  const op::RNNParams p = op::make_params(options, false);
  return op::RNNDims(p, 1, 1, input_size).parameters();
}

}  // namespace mx::nd
