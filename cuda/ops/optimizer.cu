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

void adam_update(const ExecContext& ec, const Invocation& inv) {
  const std::int64_t n = inv.outputs[0].size();
  dispatch_floating(inv.outputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, inv.op->name, n, &adam_elements<T>, out<T>(inv, 0), in<T>(inv, 1), out<T>(inv, 1),
                 out<T>(inv, 2), n, inv.params.as<OptimizerStep>());
  });
}

}  // namespace mx::op::gpu
