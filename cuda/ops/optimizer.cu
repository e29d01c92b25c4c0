// GPU launches of the optimizer family (ndarray/ops/optimizer.cpp has the ops and their CPU
// reference loops): one grid-stride kernel per update, over the step functors of
// ndarray/functors.hpp.
#include "cuda/launch.hpp"
#include "ndarray/ops/optimizer_kernels.hpp"

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;
using functors::OptimizerStep;

// mom may be null (sgd_update).
template <class T>
__global__ void sgd_elements(T* weight, const T* grad, T* mom, std::int64_t n, OptimizerStep step) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) step.sgd(weight[i], grad[i], mom ? mom + i : nullptr);
}

template <class T>
__global__ void adam_elements(T* weight, const T* grad, T* mean, T* var, std::int64_t n, OptimizerStep step) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) step.adam(weight[i], grad[i], mean[i], var[i]);
}

// Up to kMaxTensors weights of one launch, as one virtual concatenation: weight t holds elements
// [end[t - 1], end[t]). Passed by value as the kernel's parameter (under its 4 KiB limit).
constexpr int kMaxTensors = 32;
template <class T>
struct TensorList {
  T* weight[kMaxTensors];
  const T* grad[kMaxTensors];
  T* mom[kMaxTensors];  // null without momentum
  std::int64_t end[kMaxTensors];
  int count = 0;
};

template <class T>
__global__ void multi_sgd_elements(TensorList<T> list, OptimizerStep step) {
  const std::int64_t total = list.end[list.count - 1];
  for (std::int64_t i = global_thread(); i < total; i += grid_stride()) {
    int lo = 0, hi = list.count - 1;  // the first tensor whose end is past i
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (list.end[mid] > i) hi = mid;
      else lo = mid + 1;
    }
    const std::int64_t j = i - (lo ? list.end[lo - 1] : 0);
    step.sgd(list.weight[lo][j], list.grad[lo][j], list.mom[lo] ? list.mom[lo] + j : nullptr);
  }
}

template <class T> const T* in(const Invocation& inv, int i) { return static_cast<const T*>(inv.inputs[i].data()); }
template <class T> T* out(const Invocation& inv, int i) { return static_cast<T*>(inv.outputs[i].data()); }

}  // namespace

void sgd_update(const ExecContext& ec, const Invocation& inv) {
  const std::int64_t n = inv.outputs[0].size();
  dispatch_floating(inv.outputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    T* mom = inv.outputs.size() > 1 ? out<T>(inv, 1) : nullptr;
    cuda::launch(ec, inv.op->name, n, &sgd_elements<T>, out<T>(inv, 0), in<T>(inv, 1), mom, n,
                 inv.params.as<OptimizerStep>());
  });
}

void multi_sgd_update(const ExecContext& ec, const Invocation& inv) {
  const MultiStep& params = inv.params.as<MultiStep>();
  const std::size_t weights = static_cast<std::size_t>(params.num_weights);
  const std::size_t per_weight = inv.inputs.size() / weights;
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    TensorList<T> list;
    const auto flush = [&] {
      if (list.count > 0) cuda::launch(ec, inv.op->name, list.end[list.count - 1], &multi_sgd_elements<T>, list, params.step);
      list.count = 0;
    };
    for (std::size_t i = 0; i < weights; ++i) {
      const std::int64_t n = inv.inputs[i * per_weight].size();
      if (n == 0) continue;
      const int t = list.count++;
      list.weight[t] = out<T>(inv, static_cast<int>(i * (per_weight - 1)));
      list.grad[t] = in<T>(inv, static_cast<int>(i * per_weight + 1));
      list.mom[t] = per_weight == 3 ? out<T>(inv, static_cast<int>(i * 2 + 1)) : nullptr;
      list.end[t] = (t ? list.end[t - 1] : 0) + n;
      if (list.count == kMaxTensors) flush();
    }
    flush();
  });
}

void adam_update(const ExecContext& ec, const Invocation& inv) {
  const std::int64_t n = inv.outputs[0].size();
  dispatch_floating(inv.outputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, inv.op->name, n, &adam_elements<T>, out<T>(inv, 0), in<T>(inv, 1), out<T>(inv, 1),
                 out<T>(inv, 2), n, inv.params.as<OptimizerStep>());
  });
}

}  // namespace mx::op::gpu
