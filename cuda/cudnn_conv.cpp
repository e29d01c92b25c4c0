// Convolution through cuDNN 9's graph API (the backend descriptors of cudnn_graph.h; the legacy
// cudnnConvolutionForward family is deprecated in 9). For each (pass, geometry, dtype, alignment)
// met by a thread on a device: the operation graph of the one convolution, the heuristics'
// candidates (modes A and FALLBACK) finalized into up to kMaxPlans execution plans, each timed on
// the call's own buffers, the fastest cached (like torch.backends.cudnn.benchmark). Handles and
// plans are per (thread, device): a cuDNN handle must not be used by two threads at once, and a
// plan belongs to the handle it was built with.
#include "cuda/cudnn_conv.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "context/error.hpp"
#include "cuda/check.hpp"
#include "cuda/cudnn_descriptor.hpp"
#include "cuda/device_exchange.hpp"
#include "ndarray/ops/linalg_kernels.hpp"

namespace mx::cuda {
namespace {

// The uids of a, b and out in every pass's variant pack.
constexpr std::int64_t kUidA = 1, kUidB = 2, kUidOut = 3;
constexpr std::size_t kMaxPlans = 12;  // candidates timed per key
constexpr int kTimedRuns = 3;          // after one warm-up; the best is kept

// Engines whose results would differ from the CPU reference by more than float rounding: TF32
// tensor cores, inputs converted down, reduced-precision sums. Tensor cores are what float16 and
// bfloat16 data is meant for (they multiply 16-bit values exactly and sum in float32): allowed
// for those, and for float32 under set_matmul_precision("high"), which asks for TF32 (as
// PyTorch's cudnn.allow_tf32).
constexpr std::pair<cudnnBackendNumericalNote_t, const char*> kExcludedNotes[] = {
    {CUDNN_NUMERICAL_NOTE_TENSOR_CORE, "tensor cores"},
    {CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, "down-converted inputs"},
    {CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION, "reduced-precision reduction"}};

bool tensor_cores_allowed(DType dtype) { return is_half(dtype) || (dtype == DType::float32 && op::allow_tf32()); }

// Engines that sum with atomics give results that may differ from run to run in the last bits.
// They are allowed, as MXNet's and PyTorch's autotuners allow them, unless MXNET_ENFORCE_DETERMINISM
// is set (MXNet's variable) to something other than 0: the weight gradient of a convolution with
// few channels is several times faster with them.
bool enforce_determinism() {
  static const bool on = [] {
    const char* value = std::getenv("MXNET_ENFORCE_DETERMINISM");
    return value && *value && std::string(value) != "0";
  }();
  return on;
}

bool verbose() {
  static const bool on = std::getenv("NDG_CUDNN_VERBOSE") != nullptr;
  return on;
}

using Descriptor = cuda::CudnnDescriptor;

// Reads up to `capacity` elements of an attribute: how many there are, or -1 when it cannot be read.
std::int64_t get(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                 void* values, std::int64_t capacity = 1) {
  std::int64_t count = 0;
  return cudnnBackendGetAttribute(desc, name, type, capacity, &count, values) == CUDNN_STATUS_SUCCESS ? count : -1;
}

// `count` new descriptors of one type, for cuDNN to fill in through get() (the heuristics' results,
// an engine config's knob choices), with their raw handles side by side.
struct DescriptorArray {
  std::vector<Descriptor> owned;
  std::vector<cudnnBackendDescriptor_t> raw;

  DescriptorArray(cudnnBackendDescriptorType_t type, std::int64_t count) {
    for (std::int64_t i = 0; i < count; ++i) raw.push_back(owned.emplace_back(type).get());
  }
};

// What differs between the passes: the operation, its attributes, and the uids of x, w and y
// (which of them are a, b and out).
struct PassInfo {
  const char* name;
  cudnnBackendDescriptorType_t operation;
  cudnnBackendAttributeName_t x, w, y, convolution, alpha, beta;
  std::int64_t uid_x, uid_w, uid_y;
};
constexpr PassInfo kPasses[] = {
    {"forward", CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, kUidA, kUidB, kUidOut},
    {"backward_data", CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, kUidOut, kUidB,
     kUidA},
    {"backward_filter", CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, kUidA,
     kUidOut, kUidB},
};
const PassInfo& info(op::ConvPass pass) { return kPasses[static_cast<int>(pass)]; }

// The operands' dimensions and the window as cuDNN takes them: 4-D tensors for 1- and 2-D
// convolutions (a 1-D one is a 2-D one with H = 1), 5-D for 3-D.
struct Layout {
  std::vector<std::int64_t> x, w, y, stride, pad, dilation;

  explicit Layout(const op::ConvGeometry& g) {
    const int spatial = g.window.spatial == 3 ? 3 : 2;
    const auto last = [spatial](const op::Dims3& d) { return std::vector<std::int64_t>(d.end() - spatial, d.end()); };
    const auto tensor = [&](std::int64_t lead, std::int64_t channels, const op::Dims3& extent) {
      std::vector<std::int64_t> dims{lead, channels};
      for (std::int64_t e : last(extent)) dims.push_back(e);
      return dims;
    };
    x = tensor(g.batch, g.in_channels, g.in);
    w = tensor(g.out_channels, g.in_channels / g.groups, g.window.kernel);
    y = tensor(g.batch, g.out_channels, g.out);
    stride = last(g.window.stride);
    pad = last(g.window.pad);
    dilation = last(g.window.dilation);
  }
};

std::string dims_string(const std::vector<std::int64_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims[i]);
  }
  return s + ")";
}

// "forward float32 x(8,3,32,32) w(16,3,3,3) y(8,16,32,32) stride(1,1) pad(1,1) dilation(1,1)"
std::string describe(op::ConvPass pass, const op::ConvGeometry& g) {
  const Layout l(g);
  return std::string(info(pass).name) + " " + dtype_name(g.dtype) + " x" + dims_string(l.x) + " w" +
         dims_string(l.w) + " y" + dims_string(l.y) + " stride" + dims_string(l.stride) + " pad" +
         dims_string(l.pad) + " dilation" + dims_string(l.dilation);
}

// Strides of dims (N, C, spatial...) stored row-major in that order, or channels last: (N,
// spatial..., C) in memory, as NHWC data and OHWI weights are.
std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims, bool channels_last) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  if (!channels_last) {
    for (std::size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
    return strides;
  }
  std::int64_t step = dims[1];  // C is innermost
  for (std::size_t i = dims.size() - 1; i >= 2; --i) {
    strides[i] = step;
    step *= dims[i];
  }
  strides[0] = step;
  return strides;
}

// The operation graph of one pass, with the descriptors it is built from (kept as long as it is).
struct Graph {
  Descriptor x{CUDNN_BACKEND_TENSOR_DESCRIPTOR}, w{CUDNN_BACKEND_TENSOR_DESCRIPTOR}, y{CUDNN_BACKEND_TENSOR_DESCRIPTOR};
  Descriptor convolution{CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR};
  Descriptor operation;
  Descriptor graph{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};
  DType dtype;

  Graph(cudnnHandle_t handle, op::ConvPass pass, const op::ConvGeometry& g, std::int64_t alignment)
      : operation(info(pass).operation), dtype(g.dtype) {
    const PassInfo& p = info(pass);
    const Layout l(g);
    // The tensors in the dtype; the arithmetic in float (double for float64): 16-bit data runs on
    // tensor cores with float32 accumulation.
    const cudnnDataType_t type = g.dtype == DType::float64    ? CUDNN_DATA_DOUBLE
                                 : g.dtype == DType::float16  ? CUDNN_DATA_HALF
                                 : g.dtype == DType::bfloat16 ? CUDNN_DATA_BFLOAT16
                                                              : CUDNN_DATA_FLOAT;
    const cudnnDataType_t compute = g.dtype == DType::float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    const auto set_tensor = [&](Descriptor& tensor, std::int64_t uid, const std::vector<std::int64_t>& dims) {
      tensor.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
          .set(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
          .set(CUDNN_ATTR_TENSOR_STRIDES, packed_strides(dims, g.channels_last))
          .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
          .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment)
          .finalize();
    };
    set_tensor(x, p.uid_x, l.x);
    set_tensor(w, p.uid_w, l.w);
    set_tensor(y, p.uid_y, l.y);
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    convolution.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute)
        .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode)
        .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, static_cast<std::int64_t>(l.stride.size()))
        .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, l.stride)
        .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, l.pad)
        .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, l.pad)
        .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, l.dilation)
        .finalize();
    // out = 1 * conv + 0 * out, the scalars in the compute type.
    const double alpha = 1, beta = 0;
    const float alpha_float = 1, beta_float = 0;
    if (compute == CUDNN_DATA_DOUBLE) {
      operation.set(p.alpha, CUDNN_TYPE_DOUBLE, &alpha).set(p.beta, CUDNN_TYPE_DOUBLE, &beta);
    } else {
      operation.set(p.alpha, CUDNN_TYPE_FLOAT, &alpha_float).set(p.beta, CUDNN_TYPE_FLOAT, &beta_float);
    }
    operation.set(p.x, x).set(p.w, w).set(p.y, y).set(p.convolution, convolution).finalize();
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle)
        .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, operation)
        .finalize();
  }

  // The first failure in building it; success when it is ready for the heuristics.
  cudnnStatus_t status() const {
    for (const Descriptor* d : {&x, &w, &y, &convolution, &operation, &graph}) {
      if (d->status() != CUDNN_STATUS_SUCCESS) return d->status();
    }
    return CUDNN_STATUS_SUCCESS;
  }
};

// An execution plan, what it was built from, its workspace and its engine's name.
struct Plan {
  std::shared_ptr<const Graph> graph;
  Descriptor config, plan;
  std::int64_t workspace = 0;
  std::string engine;
  // The variant pack of the last execution and its pointers (a, b, out, workspace): a training
  // loop sees the same buffers again and again from the pool, and building a pack costs host time.
  mutable std::array<const void*, 4> last_pointers{};
  mutable Descriptor last_pack{};
};

// The engine of an engine config: its name ("eng<global index>", then "_k<knob>=<choice>" per knob,
// as cudnn-frontend tags plans) and the kExcludedNotes it carries.
struct EngineInfo {
  std::string name;
  std::string excluded;  // "" when none
};
EngineInfo engine_info(const Descriptor& config, bool tensor_cores) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  std::int64_t index = -1;
  get(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw);
  get(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, &index);
  EngineInfo result{"eng" + std::to_string(index), ""};

  DescriptorArray knobs(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS);
  const std::int64_t knob_count = get(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                      knobs.raw.data(), CUDNN_KNOB_TYPE_COUNTS);
  for (std::int64_t i = 0; i < knob_count; ++i) {
    const cudnnBackendDescriptor_t knob = knobs.raw[static_cast<std::size_t>(i)];
    cudnnBackendKnobType_t type{};
    std::int64_t choice = 0;
    get(knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, &type);
    get(knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, &choice);
    result.name += "_k" + std::to_string(static_cast<int>(type)) + "=" + std::to_string(choice);
  }

  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  const std::int64_t note_count = get(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, notes.data(),
                                      CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  for (std::int64_t i = 0; i < note_count; ++i) {
    const auto exclude = [&](const char* why) { result.excluded += (result.excluded.empty() ? "" : ", ") + std::string(why); };
    for (const auto& [note, name] : kExcludedNotes) {
      if (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && tensor_cores) continue;
      if (notes[static_cast<std::size_t>(i)] == note) exclude(name);
    }
    if (notes[static_cast<std::size_t>(i)] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC && enforce_determinism()) {
      exclude("nondeterministic, MXNET_ENFORCE_DETERMINISM is set");
    }
  }
  return result;
}

// The heuristics' candidates for a graph, mode A's then FALLBACK's, that finalize into plans: up
// to kMaxPlans, each engine config once.
std::vector<Plan> candidate_plans(cudnnHandle_t handle, const std::shared_ptr<const Graph>& graph, bool tensor_cores) {
  std::vector<Plan> plans;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph->graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
    if (heuristics.finalize() != CUDNN_STATUS_SUCCESS) continue;
    const std::int64_t available =
        get(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nullptr, 0);
    if (available <= 0) continue;
    DescriptorArray configs(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, available);
    const std::int64_t count = get(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   configs.raw.data(), available);

    for (std::int64_t i = 0; i < count && plans.size() < kMaxPlans; ++i) {
      Descriptor& config = configs.owned[static_cast<std::size_t>(i)];
      EngineInfo engine = engine_info(config, tensor_cores);
      bool seen = false;
      for (const Plan& p : plans) seen |= p.engine == engine.name;
      if (seen) continue;
      if (!engine.excluded.empty()) {
        if (verbose()) {
          std::fprintf(stderr, "ndgluon cudnn:   %s: skipped (%s)\n", engine.name.c_str(), engine.excluded.c_str());
        }
        continue;
      }
      Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle)
          .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
      std::int64_t workspace = 0;
      if (plan.finalize() != CUDNN_STATUS_SUCCESS ||
          get(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, &workspace) < 0) {
        if (verbose()) {
          std::fprintf(stderr, "ndgluon cudnn:   %s: skipped (plan: %s)\n", engine.name.c_str(),
                       cudnnGetErrorString(plan.status()));
        }
        continue;
      }
      plans.push_back(Plan{graph, std::move(config), std::move(plan), workspace, std::move(engine.name)});
    }
  }
  return plans;
}

// The variant pack of one execution: a, b and out under their uids, and the workspace. Finalized;
// its status() says whether that worked.
Descriptor variant_pack(const std::array<const void*, 3>& operands, void* workspace) {
  const std::int64_t uids[] = {kUidA, kUidB, kUidOut};
  void* pointers[] = {const_cast<void*>(operands[0]), const_cast<void*>(operands[1]), const_cast<void*>(operands[2])};
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids, 3)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers, 3)
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
      .finalize();
  return pack;
}

// A CUDA event for the timings, destroyed with its owner.
class Event {
 public:
  Event() { NDG_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// The best of kTimedRuns executions after a warm-up, in ms, on the call's buffers and ec's stream;
// empty when its workspace cannot be allocated or it fails to run.
std::optional<float> time_plan(const op::ExecContext& ec, cudnnHandle_t handle, const Plan& plan,
                               const std::array<const void*, 3>& operands) {
  std::optional<op::Workspace> workspace;
  try {
    workspace.emplace(ec, static_cast<std::size_t>(plan.workspace));
  } catch (const OutOfMemory&) {
    return std::nullopt;
  }
  const Descriptor pack = variant_pack(operands, workspace->data());
  if (pack.status() != CUDNN_STATUS_SUCCESS ||
      cudnnBackendExecute(handle, plan.plan.get(), pack.get()) != CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  const cudaStream_t stream = static_cast<cudaStream_t>(ec.stream);
  const Event start, stop;
  float best = std::numeric_limits<float>::infinity();
  for (int run = 0; run < kTimedRuns; ++run) {
    NDG_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    if (cudnnBackendExecute(handle, plan.plan.get(), pack.get()) != CUDNN_STATUS_SUCCESS) return std::nullopt;
    NDG_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    NDG_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    NDG_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    best = std::min(best, ms);
  }
  return best;
}

// The fastest usable plan for (pass, g) on these buffers; null when there is none.
std::unique_ptr<Plan> choose_plan(const op::ExecContext& ec, cudnnHandle_t handle, op::ConvPass pass,
                                  const op::ConvGeometry& g, std::int64_t alignment,
                                  const std::array<const void*, 3>& operands) {
  if (verbose()) {
    std::fprintf(stderr, "ndgluon cudnn: %s %s, alignment %lld\n", ec.ctx.str().c_str(), describe(pass, g).c_str(),
                 static_cast<long long>(alignment));
  }
  const auto graph = std::make_shared<const Graph>(handle, pass, g, alignment);
  std::vector<Plan> plans;
  if (graph->status() == CUDNN_STATUS_SUCCESS) {
    plans = candidate_plans(handle, graph, tensor_cores_allowed(g.dtype));
  } else if (verbose()) {
    std::fprintf(stderr, "ndgluon cudnn:   no operation graph: %s\n", cudnnGetErrorString(graph->status()));
  }

  // Timing synchronises the stream, which a stream being captured into a CUDA graph must not do,
  // nor one that may be waiting for another GPU (Note [in-stream exchange between GPUs]: the host
  // would wait for a GPU that waits for work the host has not queued yet): there the heuristics'
  // first candidate is taken untimed.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  NDG_CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(ec.stream), &capture));
  const bool capturing = capture != cudaStreamCaptureStatusNone || exchanges_in_use();
  std::size_t best = capturing ? 0 : plans.size();  // plans.size(): none
  float best_ms = std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; !capturing && i < plans.size(); ++i) {
    const std::optional<float> ms = time_plan(ec, handle, plans[i], operands);
    if (verbose()) {
      if (ms) {
        std::fprintf(stderr, "ndgluon cudnn:   %s: %.4f ms, workspace %lld B\n", plans[i].engine.c_str(), *ms,
                     static_cast<long long>(plans[i].workspace));
      } else {
        std::fprintf(stderr, "ndgluon cudnn:   %s: skipped (workspace of %lld B or execution failed)\n",
                     plans[i].engine.c_str(), static_cast<long long>(plans[i].workspace));
      }
    }
    if (ms && *ms < best_ms) {
      best = i;
      best_ms = *ms;
    }
  }

  if (best == plans.size()) {
    if (verbose()) std::fprintf(stderr, "ndgluon cudnn:   no usable engine: im2col + cuBLAS\n");
    return nullptr;
  }
  if (verbose()) std::fprintf(stderr, "ndgluon cudnn:   chose %s\n", plans[best].engine.c_str());
  return std::make_unique<Plan>(std::move(plans[best]));
}

// The largest power of two, up to 16, that divides every operand's address (cuDNN's byte alignment).
std::int64_t alignment_of(const std::array<const void*, 3>& operands) {
  std::uintptr_t bits = 16;
  for (const void* p : operands) bits |= reinterpret_cast<std::uintptr_t>(p);
  return static_cast<std::int64_t>(bits & (~bits + 1));
}

// What a plan is chosen for: pass, dtype, whether tensor cores may serve it, alignment, layout and
// every extent of the geometry.
using Key = std::array<std::int64_t, 28>;
Key key_of(op::ConvPass pass, const op::ConvGeometry& g, std::int64_t alignment) {
  const op::Window& w = g.window;
  Key key{static_cast<std::int64_t>(pass), static_cast<std::int64_t>(g.dtype), tensor_cores_allowed(g.dtype),
          alignment, w.spatial, g.batch, g.in_channels, g.out_channels, g.groups, g.channels_last};
  std::size_t i = 10;
  for (const op::Dims3* dims : {&g.in, &g.out, &w.kernel, &w.stride, &w.pad, &w.dilation}) {
    for (std::int32_t d : *dims) key[i++] = d;
  }
  return key;
}

// A thread's cuDNN handle on one device, and the plans chosen with it (null: no usable engine).
// Destroyed when the thread ends (the main thread's at exit, before the runtime's teardown), plans
// before the handle; errors are ignored then.
struct HandleState {
  cudnnHandle_t handle = nullptr;
  void* stream = nullptr;  // the stream the handle is bound to
  std::map<Key, std::unique_ptr<Plan>> plans;
  explicit HandleState(cudnnHandle_t h) : handle(h) {}
  HandleState(const HandleState&) = delete;
  HandleState& operator=(const HandleState&) = delete;
  ~HandleState() {
    plans.clear();
    cudnnDestroy(handle);
  }
};

// The calling thread's state for gpu(device) (made current by the caller), created on first use,
// with its handle bound to stream.
HandleState& handle_state(int device, void* stream) {
  thread_local std::vector<std::unique_ptr<HandleState>> states;
  const auto id = static_cast<std::size_t>(device);
  if (states.size() <= id) states.resize(id + 1);
  if (!states[id]) {
    cudnnHandle_t handle = nullptr;
    NDG_CUDA_CHECK(cudnnCreate(&handle));
    states[id] = std::make_unique<HandleState>(handle);
  }
  HandleState& state = *states[id];
  if (state.stream != stream) {
    NDG_CUDA_CHECK(cudnnSetStream(state.handle, static_cast<cudaStream_t>(stream)));
    state.stream = stream;
  }
  return state;
}

HandleState& handle_state(const op::ExecContext& ec) { return handle_state(ec.ctx.device_id(), ec.stream); }

// The cached plan for (pass, g) and these operands' alignment, chosen first if it never was; null
// when cuDNN has no usable engine for it or the dtype is not floating.
const Plan* find_plan(const op::ExecContext& ec, HandleState& state, op::ConvPass pass, const op::ConvGeometry& g,
                      const std::array<const void*, 3>& operands) {
  if (!is_floating(g.dtype)) return nullptr;
  const std::int64_t alignment = alignment_of(operands);
  const Key key = key_of(pass, g, alignment);
  auto it = state.plans.find(key);
  if (it == state.plans.end()) {
    it = state.plans.emplace(key, choose_plan(ec, state.handle, pass, g, alignment, operands)).first;
  }
  return it->second.get();
}

}  // namespace

cudnnHandle_t cudnn_handle(int device, void* stream) { return handle_state(device, stream).handle; }

bool cudnn_convolution(const op::ExecContext& ec, op::ConvPass pass, const op::ConvGeometry& g, const void* a,
                       const void* b, void* out) {
  HandleState& state = handle_state(ec);
  const Plan* plan = find_plan(ec, state, pass, g, {a, b, out});
  if (!plan) return false;
  const auto check_call = [&](cudnnStatus_t status, const char* call) {
    if (status != CUDNN_STATUS_SUCCESS) {
      check(status, ("Convolution " + describe(pass, g) + " (cuDNN " + plan->engine + "): " + call).c_str());
    }
  };
  const op::Workspace workspace(ec, static_cast<std::size_t>(plan->workspace));
  const std::array<const void*, 4> pointers{a, b, out, workspace.data()};
  if (!plan->last_pack.get() || plan->last_pointers != pointers) {
    plan->last_pack = variant_pack({a, b, out}, workspace.data());
    plan->last_pointers = pointers;
    if (plan->last_pack.status() != CUDNN_STATUS_SUCCESS) {
      const cudnnStatus_t status = plan->last_pack.status();
      plan->last_pack = Descriptor();
      check_call(status, "the variant pack");
    }
  }
  check_call(cudnnBackendExecute(state.handle, plan->plan.get(), plan->last_pack.get()), "cudnnBackendExecute");
  return true;
}

std::optional<CudnnConvPlan> cudnn_convolution_plan(const op::ExecContext& ec, op::ConvPass pass,
                                                    const op::ConvGeometry& g, const void* a, const void* b,
                                                    void* out) {
  HandleState& state = handle_state(ec);
  const Plan* plan = find_plan(ec, state, pass, g, {a, b, out});
  if (!plan) return std::nullopt;
  return CudnnConvPlan{state.handle, plan->plan.get(), plan->workspace, kUidA, kUidB, kUidOut, plan->engine};
}

}  // namespace mx::cuda
