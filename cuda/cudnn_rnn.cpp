// RNN through cuDNN's RNN API. Per (device, case) met by a thread: the RNN descriptor, the data
// and state descriptors, the sizes of the weight, work and reserve spaces, and where cuDNN keeps
// each weight matrix and bias in its weight space. Where that layout is MXNet's flat parameter
// vector itself (cuDNN's canonical layout, which MXNet's order was made to match), the parameters
// are cuDNN's weight space as they are; otherwise they are copied in (and the gradient out) by
// one batched copy.
#include "cuda/cudnn_rnn.hpp"

#include <cudnn.h>

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "context/error.hpp"
#include "cuda/check.hpp"
#include "cuda/cudnn_conv.hpp"
#include "cuda/device_guard.hpp"
#include "ndarray/backend/backend.hpp"
#include "ndarray/ops/linalg_kernels.hpp"

namespace mx::cuda {
namespace {

// The case: everything the descriptors depend on.
using Key = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, int, bool>;

Key key_of(int device, const op::RNNParams& p, const op::RNNDims& d, DType dtype) {
  return {device,     static_cast<std::int64_t>(p.mode), d.layers, d.directions, d.hidden, d.projection, d.input,
          d.seq,      d.batch,                           static_cast<int>(dtype), op::allow_tf32()};
}

cudnnDataType_t cudnn_type(DType dtype) {
  switch (dtype) {
    case DType::float64: return CUDNN_DATA_DOUBLE;
    case DType::float16: return CUDNN_DATA_HALF;
    case DType::bfloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

// One weight matrix or bias: its place in cuDNN's weight space and in MXNet's vector (bytes).
struct WeightPart {
  std::size_t cudnn, mxnet, bytes;
};

struct Plan {
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnDropoutDescriptor_t dropout = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t h = nullptr, c = nullptr;
  std::size_t weight_bytes = 0, work_training = 0, work_inference = 0, reserve_bytes = 0;
  bool canonical = true;
  std::vector<WeightPart> parts;
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (rnn) cudnnDestroyRNNDescriptor(rnn);
    if (dropout) cudnnDestroyDropoutDescriptor(dropout);
    if (x) cudnnDestroyRNNDataDescriptor(x);
    if (y) cudnnDestroyRNNDataDescriptor(y);
    if (h) cudnnDestroyTensorDescriptor(h);
    if (c) cudnnDestroyTensorDescriptor(c);
  }
};

// Builds the plan; null where cuDNN refuses the case (any call failing).
std::unique_ptr<Plan> build_plan(cudnnHandle_t handle, const op::RNNParams& p, const op::RNNDims& d, DType dtype) {
  auto plan = std::make_unique<Plan>();
  const cudnnDataType_t type = cudnn_type(dtype);
  const cudnnDataType_t math_precision = dtype == DType::float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  // float32 keeps float32 products unless TF32 is allowed (set_matmul_precision("high")).
  const cudnnMathType_t math = is_half(dtype)                                          ? CUDNN_TENSOR_OP_MATH
                               : dtype == DType::float32 && !op::allow_tf32()          ? CUDNN_FMA_MATH
                                                                                       : CUDNN_DEFAULT_MATH;
  const cudnnRNNMode_t mode = p.mode == op::RNNMode::lstm       ? CUDNN_LSTM
                              : p.mode == op::RNNMode::gru      ? CUDNN_GRU
                              : p.mode == op::RNNMode::rnn_tanh ? CUDNN_RNN_TANH
                                                                : CUDNN_RNN_RELU;
  const auto ok = [](cudnnStatus_t status) { return status == CUDNN_STATUS_SUCCESS; };
  const std::vector<int> lengths(static_cast<std::size_t>(d.batch), static_cast<int>(d.seq));
  const int h_dims[3] = {static_cast<int>(d.states()), static_cast<int>(d.batch), static_cast<int>(d.state)};
  const int h_strides[3] = {static_cast<int>(d.batch * d.state), static_cast<int>(d.state), 1};
  const int c_dims[3] = {static_cast<int>(d.states()), static_cast<int>(d.batch), static_cast<int>(d.hidden)};
  const int c_strides[3] = {static_cast<int>(d.batch * d.hidden), static_cast<int>(d.hidden), 1};
  bool built =
      ok(cudnnCreateDropoutDescriptor(&plan->dropout)) &&
      ok(cudnnSetDropoutDescriptor(plan->dropout, handle, 0.f, nullptr, 0, 0)) && ok(cudnnCreateRNNDescriptor(&plan->rnn)) &&
      ok(cudnnSetRNNDescriptor_v8(plan->rnn, CUDNN_RNN_ALGO_STANDARD, mode, CUDNN_RNN_DOUBLE_BIAS,
                                  d.directions == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT,
                                  type, math_precision, math, static_cast<int>(d.input), static_cast<int>(d.hidden),
                                  static_cast<int>(d.state), static_cast<int>(d.layers), plan->dropout,
                                  CUDNN_RNN_PADDED_IO_DISABLED)) &&
      ok(cudnnCreateRNNDataDescriptor(&plan->x)) && ok(cudnnCreateRNNDataDescriptor(&plan->y)) &&
      ok(cudnnSetRNNDataDescriptor(plan->x, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, static_cast<int>(d.seq),
                                   static_cast<int>(d.batch), static_cast<int>(d.input), lengths.data(), nullptr)) &&
      ok(cudnnSetRNNDataDescriptor(plan->y, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, static_cast<int>(d.seq),
                                   static_cast<int>(d.batch), static_cast<int>(d.directions * d.state), lengths.data(),
                                   nullptr)) &&
      ok(cudnnCreateTensorDescriptor(&plan->h)) && ok(cudnnSetTensorNdDescriptor(plan->h, type, 3, h_dims, h_strides)) &&
      ok(cudnnCreateTensorDescriptor(&plan->c)) && ok(cudnnSetTensorNdDescriptor(plan->c, type, 3, c_dims, c_strides)) &&
      ok(cudnnGetRNNWeightSpaceSize(handle, plan->rnn, &plan->weight_bytes)) &&
      ok(cudnnGetRNNTempSpaceSizes(handle, plan->rnn, CUDNN_FWD_MODE_TRAINING, plan->x, &plan->work_training,
                                   &plan->reserve_bytes)) &&
      ok(cudnnGetRNNTempSpaceSizes(handle, plan->rnn, CUDNN_FWD_MODE_INFERENCE, plan->x, &plan->work_inference, nullptr));
  if (!built) return nullptr;
  // Where cuDNN keeps each matrix and bias, asked of a weight space at a made-up address (cuDNN
  // computes the addresses only), against MXNet's offsets (rnn_kernels.hpp's RNNDims).
  const std::size_t size = dtype_size(dtype);
  char* const base = reinterpret_cast<char*>(std::uintptr_t{1} << 32);
  cudnnTensorDescriptor_t matrix = nullptr, bias = nullptr;
  built = ok(cudnnCreateTensorDescriptor(&matrix)) && ok(cudnnCreateTensorDescriptor(&bias));
  const std::int64_t G = d.gates, H = d.hidden;
  for (std::int64_t l = 0; built && l < d.layers; ++l) {
    for (std::int64_t dir = 0; built && dir < d.directions; ++dir) {
      const int pseudo_layer = static_cast<int>(l * d.directions + dir);
      const int ids = static_cast<int>(2 * G + (d.projection > 0 ? 1 : 0));  // LSTM's projection is id 8
      for (int id = 0; built && id < ids; ++id) {
        void *m = nullptr, *b = nullptr;
        built = ok(cudnnGetRNNWeightParams(handle, plan->rnn, pseudo_layer, plan->weight_bytes, base, id, matrix, &m,
                                           bias, &b));
        if (!built) break;
        const std::int64_t gate = id % G;
        std::int64_t m_offset = 0, m_elements = 0, b_offset = -1;
        if (id < G) {
          m_offset = d.i2h_weight(l, dir) + gate * H * d.layer_input(l);
          m_elements = H * d.layer_input(l);
          b_offset = d.i2h_bias(l, dir) + gate * H;
        } else if (id < 2 * G) {
          m_offset = d.h2h_weight(l, dir) + gate * H * d.state;
          m_elements = H * d.state;
          b_offset = d.h2h_bias(l, dir) + gate * H;
        } else {
          m_offset = d.h2r_weight(l, dir);
          m_elements = d.projection * H;
        }
        plan->parts.push_back({static_cast<std::size_t>(static_cast<char*>(m) - base),
                               static_cast<std::size_t>(m_offset) * size, static_cast<std::size_t>(m_elements) * size});
        if (b && b_offset >= 0) {
          plan->parts.push_back({static_cast<std::size_t>(static_cast<char*>(b) - base),
                                 static_cast<std::size_t>(b_offset) * size, static_cast<std::size_t>(H) * size});
        }
      }
    }
  }
  if (matrix) cudnnDestroyTensorDescriptor(matrix);
  if (bias) cudnnDestroyTensorDescriptor(bias);
  if (!built) return nullptr;
  plan->canonical = plan->weight_bytes == static_cast<std::size_t>(d.parameters()) * size;
  for (const WeightPart& part : plan->parts) plan->canonical = plan->canonical && part.cudnn == part.mxnet;
  return plan;
}

// The calling thread's plan for the case, built on first use; null where cuDNN refuses it. Dropout
// between layers is not asked of cuDNN (its own generator would draw the masks): such calls run
// here in prediction only. Nor is state clipping: cuDNN's (cudnnRNNSetClip_v9) gives other values
// than clipping c before h = o·tanh(c), which is what ndgluon defines (rnn_kernels.hpp), so
// clipped LSTMs run the unfused path on every context.
const Plan* find_plan(int device, void* stream, const op::RNNParams& p, const op::RNNDims& d, DType dtype) {
  if (p.clip || !is_floating(dtype) || !op::rnn_cudnn_enabled()) return nullptr;
  thread_local std::map<Key, std::unique_ptr<Plan>> plans;
  const Key key = key_of(device, p, d, dtype);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, build_plan(cudnn_handle(device, stream), p, d, dtype)).first;
  return it->second.get();
}

void check_call(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) check(status, (std::string("RNN (cuDNN): ") + call).c_str());
}

// The weights in cuDNN's layout: the parameters themselves, or copied into `space`.
const void* weights_in(const op::ExecContext& ec, const Plan& plan, const void* params, void* space) {
  if (plan.canonical) return params;
  std::vector<CopyItem> items;
  for (const WeightPart& part : plan.parts) {
    items.push_back({static_cast<char*>(space) + part.cudnn, static_cast<const char*>(params) + part.mxnet, part.bytes});
  }
  backend(ec.ctx).copy_batch(ec.ctx, items);
  return space;
}

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

std::int64_t cudnn_rnn_reserve_bytes(int device, const op::RNNParams& p, const op::RNNDims& dims, DType dtype) {
  const DeviceGuard guard(device);
  const Plan* plan = find_plan(device, nullptr, p, dims, dtype);
  return plan ? static_cast<std::int64_t>(plan->reserve_bytes) : -1;
}

bool cudnn_rnn_forward(const op::ExecContext& ec, const op::Invocation& inv) {
  const op::RNNParams& p = op::rnn_params(inv);
  const op::RNNDims d = op::rnn_dims(inv);
  const DType dtype = inv.inputs[0].dtype();
  if (op::rnn_drops_out(p)) return false;
  const Plan* plan = find_plan(ec.ctx.device_id(), ec.stream, p, d, dtype);
  if (!plan) return false;
  cudnnHandle_t handle = cudnn_handle(ec.ctx.device_id(), ec.stream);
  const std::size_t work = p.training ? plan->work_training : plan->work_inference;
  const std::size_t lengths = aligned(static_cast<std::size_t>(d.batch) * sizeof(std::int32_t));
  const op::Workspace ws(ec, lengths + aligned(work) + (plan->canonical ? 0 : plan->weight_bytes));
  char* scratch = ws.as<char>();
  fill_int32(ec, ws.as<std::int32_t>(), d.batch, static_cast<std::int32_t>(d.seq));
  const void* weights = weights_in(ec, *plan, inv.inputs[1].data(), scratch + lengths + aligned(work));
  const bool lstm = p.mode == op::RNNMode::lstm;
  void* hy = p.state_outputs ? inv.outputs[1].data() : nullptr;
  void* cy = p.state_outputs && lstm ? inv.outputs[2].data() : nullptr;
  check_call(cudnnRNNForward(handle, plan->rnn, p.training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                             ws.as<std::int32_t>(), plan->x, inv.inputs[0].data(), plan->y, inv.outputs[0].data(),
                             plan->h, inv.inputs[2].data(), hy, plan->c, lstm ? inv.inputs[3].data() : nullptr, cy,
                             plan->weight_bytes, weights, work, scratch + lengths,
                             p.training ? plan->reserve_bytes : 0, p.training ? inv.outputs.back().data() : nullptr),
             "cudnnRNNForward");
  return true;
}

bool cudnn_rnn_backward(const op::ExecContext& ec, const op::Invocation& inv) {
  const op::RNNParams& p = op::rnn_params(inv);
  const op::RNNDims d = op::rnn_dims(inv);
  const DType dtype = inv.inputs[3].dtype();
  if (op::rnn_drops_out(p)) return false;
  const Plan* plan = find_plan(ec.ctx.device_id(), ec.stream, p, d, dtype);
  if (!plan) return false;
  cudnnHandle_t handle = cudnn_handle(ec.ctx.device_id(), ec.stream);
  const std::size_t lengths = aligned(static_cast<std::size_t>(d.batch) * sizeof(std::int32_t));
  const std::size_t work = aligned(plan->work_training);
  const std::size_t spaces = plan->canonical ? 0 : 2 * aligned(plan->weight_bytes);
  const op::Workspace ws(ec, lengths + work + spaces);
  char* scratch = ws.as<char>();
  fill_int32(ec, ws.as<std::int32_t>(), d.batch, static_cast<std::int32_t>(d.seq));
  const void* weights = weights_in(ec, *plan, inv.inputs[4].data(), scratch + lengths + work);
  void* dweights = plan->canonical ? inv.outputs[1].data() : scratch + lengths + work + aligned(plan->weight_bytes);
  const bool lstm = p.mode == op::RNNMode::lstm;
  const auto data_or_null = [&](std::size_t i) { return inv.inputs[i].is_none() ? nullptr : inv.inputs[i].data(); };
  void* reserve = inv.inputs[8].data();
  check_call(cudnnRNNBackwardData_v8(handle, plan->rnn, ws.as<std::int32_t>(), plan->y, inv.inputs[7].data(),
                                     inv.inputs[0].data(), plan->x, inv.outputs[0].data(), plan->h, inv.inputs[5].data(),
                                     data_or_null(1), inv.outputs[2].data(), plan->c, lstm ? inv.inputs[6].data() : nullptr,
                                     lstm ? data_or_null(2) : nullptr, lstm ? inv.outputs[3].data() : nullptr,
                                     plan->weight_bytes, weights, plan->work_training, scratch + lengths,
                                     plan->reserve_bytes, reserve),
             "cudnnRNNBackwardData_v8");
  // cuDNN adds the weights' gradient to what the space holds.
  check(cudaMemsetAsync(dweights, 0, plan->weight_bytes, static_cast<cudaStream_t>(ec.stream)), "RNN: cudaMemsetAsync");
  check_call(cudnnRNNBackwardWeights_v8(handle, plan->rnn, CUDNN_WGRAD_MODE_ADD, ws.as<std::int32_t>(), plan->x,
                                        inv.inputs[3].data(), plan->h, inv.inputs[5].data(), plan->y,
                                        inv.inputs[7].data(), plan->weight_bytes, dweights, plan->work_training,
                                        scratch + lengths, plan->reserve_bytes, reserve),
             "cudnnRNNBackwardWeights_v8");
  if (!plan->canonical) {
    std::vector<CopyItem> items;
    for (const WeightPart& part : plan->parts) {
      items.push_back({static_cast<char*>(inv.outputs[1].data()) + part.mxnet,
                       static_cast<const char*>(dweights) + part.cudnn, part.bytes});
    }
    backend(ec.ctx).copy_batch(ec.ctx, items);
  }
  return true;
}

}  // namespace mx::cuda
