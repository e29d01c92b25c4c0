// GPU launches of the nn family (ndarray/ops/nn.cpp has the ops and their CPU reference loops).
#include "cuda/launch.hpp"
#include "ndarray/ops/nn_kernels.hpp"

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

// out[r, c] = act(out[r, c] + bias[c]); bias may be null.
template <class T, class Act>
__global__ void bias_activation_elements(T* out, const T* bias, std::int64_t rows, std::int64_t cols, Act act) {
  const std::int64_t n = rows * cols;
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const T x = bias ? static_cast<T>(out[i] + bias[i % cols]) : out[i];
    out[i] = act(x);
  }
}

}  // namespace

// The product (cuBLAS), then the bias and activation in one pass over it, in place.
void fully_connected(const ExecContext& ec, const Invocation& inv) {
  fully_connected_product(ec, inv);
  const auto& p = inv.params.as<FullyConnectedParams>();
  if (p.no_bias && !p.act) return;
  const nd::NDArray& y = inv.outputs[0];
  const std::int64_t cols = p.num_hidden, rows = y.size() / cols;
  dispatch_floating(y.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* bias = p.no_bias ? nullptr : static_cast<const T*>(inv.inputs[2].data());
    with_activation(p.act, [&](auto act) {
      cuda::launch(ec, inv.op->name, rows * cols, &bias_activation_elements<T, decltype(act)>,
                   static_cast<T*>(y.data()), bias, rows, cols, act);
    });
  });
}

}  // namespace mx::op::gpu
