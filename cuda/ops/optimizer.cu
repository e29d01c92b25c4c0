// GPU launches of the optimizer family (ndarray/ops/optimizer.cpp has the ops and their CPU
// reference loops): one grid-stride kernel per update, over the step functors of
// ndarray/functors.hpp.
#include "cuda/launch.hpp"
#include "ndarray/ops/optimizer_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;
using functors::OptimizerStep;

// S is the states' type (float under multi_precision); mom and master may be null.
template <class T, class S>
__global__ void sgd_elements(T* weight, const T* grad, S* mom, S* master, std::int64_t n, OptimizerStep step) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    step.sgd(weight[i], grad[i], mom ? mom + i : nullptr, master ? master + i : nullptr);
  }
}

template <class T, class S>
__global__ void adam_elements(T* weight, const T* grad, S* mean, S* var, S* master, std::int64_t n, OptimizerStep step) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    step.adam(weight[i], grad[i], mean[i], var[i], master ? master + i : nullptr);
  }
}

// Up to kMaxTensors weights of one launch, as one virtual concatenation: weight t holds elements
// [end[t - 1], end[t]). Passed by value as the kernel's parameter (under its 4 KiB limit).
constexpr int kMaxTensors = 32;
template <class T, class S>
struct TensorList {
  T* weight[kMaxTensors];
  const T* grad[kMaxTensors];
  S* mom[kMaxTensors];     // null without momentum
  S* master[kMaxTensors];  // null without multi_precision
  std::int64_t end[kMaxTensors];
  int count = 0;
};

template <class T, class S>
__global__ void multi_sgd_elements(TensorList<T, S> list, OptimizerStep step) {
  const std::int64_t total = list.end[list.count - 1];
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    int lo = 0, hi = list.count - 1;  // the first tensor whose end is past i
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (list.end[mid] > i) hi = mid;
      else lo = mid + 1;
    }
    const std::int64_t j = i - (lo ? list.end[lo - 1] : 0);
    step.sgd(list.weight[lo][j], list.grad[lo][j], list.mom[lo] ? list.mom[lo] + j : nullptr,
             list.master[lo] ? list.master[lo] + j : nullptr);
  }
}

// *finite = 0 where some element is not finite (every writer writes the same value).
template <class T>
__global__ void clear_if_not_finite(const T* x, std::int64_t n, float* finite) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    if (!isfinite(static_cast<ComputeType<T>>(x[i]))) *finite = 0.0f;
  }
}

__global__ void set_one(float* out) { *out = 1.0f; }

template <class T> const T* in(const Invocation& inv, int i) { return static_cast<const T*>(inv.inputs[i].data()); }
template <class T> T* out(const Invocation& inv, int i) { return static_cast<T*>(inv.outputs[i].data()); }

}  // namespace

void sgd_update(const ExecContext& ec, const Invocation& inv) {
  const std::int64_t n = inv.outputs[0].size();
  const UpdateLayout layout = update_layout(inv.op);
  dispatch_update(inv, inv.outputs[0].dtype(), [&](auto weight_tag, auto state_tag) {
    using T = decltype(weight_tag);
    using S = decltype(state_tag);
    S* mom = layout.momentum ? out<S>(inv, 1) : nullptr;
    S* master = layout.master ? static_cast<S*>(inv.outputs.back().data()) : nullptr;
    cuda::launch(ec, inv.op->name, n, &sgd_elements<T, S>, out<T>(inv, 0), in<T>(inv, 1), mom, master, n,
                 inv.params.as<OptimizerStep>());
  });
}

void multi_sgd_update(const ExecContext& ec, const Invocation& inv) {
  const MultiStep& params = inv.params.as<MultiStep>();
  const UpdateLayout layout = update_layout(inv.op);
  const std::size_t weights = static_cast<std::size_t>(params.num_weights);
  const std::size_t per_weight = layout.per_weight(), outs = per_weight - 1;
  dispatch_update(inv, inv.inputs[0].dtype(), [&](auto weight_tag, auto state_tag) {
    using T = decltype(weight_tag);
    using S = decltype(state_tag);
    TensorList<T, S> list;
    const auto flush = [&] {
      if (list.count > 0) {
        cuda::launch(ec, inv.op->name, list.end[list.count - 1], &multi_sgd_elements<T, S>, list, params.step);
      }
      list.count = 0;
    };
    for (std::size_t i = 0; i < weights; ++i) {
      const std::int64_t n = inv.inputs[i * per_weight].size();
      if (n == 0) continue;
      const int t = list.count++;
      list.weight[t] = out<T>(inv, static_cast<int>(i * outs));
      list.grad[t] = in<T>(inv, static_cast<int>(i * per_weight + 1));
      list.mom[t] = layout.momentum ? out<S>(inv, static_cast<int>(i * outs + 1)) : nullptr;
      list.master[t] = layout.master ? out<S>(inv, static_cast<int>(i * outs + outs - 1)) : nullptr;
      list.end[t] = (t ? list.end[t - 1] : 0) + n;
      if (list.count == kMaxTensors) flush();
    }
    flush();
  });
}

void adam_update(const ExecContext& ec, const Invocation& inv) {
  const std::int64_t n = inv.outputs[0].size();
  dispatch_update(inv, inv.outputs[0].dtype(), [&](auto weight_tag, auto state_tag) {
    using T = decltype(weight_tag);
    using S = decltype(state_tag);
    S* master = update_layout(inv.op).master ? out<S>(inv, 3) : nullptr;
    cuda::launch(ec, inv.op->name, n, &adam_elements<T, S>, out<T>(inv, 0), in<T>(inv, 1), out<S>(inv, 1),
                 out<S>(inv, 2), master, n, inv.params.as<OptimizerStep>());
  });
}

void all_finite(const ExecContext& ec, const Invocation& inv) {
  float* finite = static_cast<float*>(inv.outputs[0].data());
  cuda::launch(cuda::stream_of(ec), inv.op->name, dim3(1), &set_one, finite);
  for (const nd::NDArray& x : inv.inputs) {
    dispatch_floating(x.dtype(), inv.op->name, [&](auto tag) {
      using T = decltype(tag);
      cuda::launch(ec, inv.op->name, x.size(), &clear_if_not_finite<T>, static_cast<const T*>(x.data()), x.size(), finite);
    });
  }
}

}  // namespace mx::op::gpu
