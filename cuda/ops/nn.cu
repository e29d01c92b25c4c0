// GPU launches of the nn family (ndarray/ops/nn.cpp has the ops and their CPU reference loops).
#include "cuda/curand_stream.hpp"
#include "cuda/device.hpp"
#include "cuda/launch.hpp"
#include "ndarray/ops/linalg_kernels.hpp"
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

// mask[i] = draw[i] > p ? scale : 0; out[i] = in[i] * mask[i]. Draws are float for float16 and
// bfloat16.
template <class T>
__global__ void dropout_elements(T* out, T* mask, const T* in, const ComputeType<T>* draws, std::int64_t n,
                                 ComputeType<T> threshold, T scale) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    mask[i] = draws[i] > threshold ? scale : T(0);
    out[i] = static_cast<T>(in[i] * mask[i]);
  }
}

// out[i] = f(g[i], x[i], y[i])
template <class T, class F>
__global__ void map3_elements(T* out, const T* g, const T* x, const T* y, std::int64_t n, F f) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = f(g[i], x[i], y[i]);
}

}  // namespace

// LeakyReLU: one elementwise pass with the shared element function (nn_kernels.hpp).
void leaky_relu(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<LeakyReLUParams>();
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  dispatch_floating(x.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data());
    T* out = static_cast<T*>(y.data());
    const bool packed = cuda::aligned16(in) && cuda::aligned16(out);
    cuda::launch(ec, inv.op->name, x.size(), &cuda::map_elements<T, LeakyReLUForward<T>>, out, in, x.size(), packed,
                 LeakyReLUForward<T>{p.act, static_cast<ComputeType<T>>(p.slope)});
  });
}

// _backward_LeakyReLU: inputs (g, x, y), output dx.
void leaky_relu_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<LeakyReLUParams>();
  const nd::NDArray& dx = inv.outputs[0];
  dispatch_floating(dx.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, inv.op->name, dx.size(), &map3_elements<T, LeakyReLUBackward<T>>, static_cast<T*>(dx.data()),
                 static_cast<const T*>(inv.inputs[0].data()), static_cast<const T*>(inv.inputs[1].data()),
                 static_cast<const T*>(inv.inputs[2].data()), dx.size(), LeakyReLUBackward<T>{p.act, static_cast<ComputeType<T>>(p.slope)});
  });
}

// cuRAND's uniform draws (a multiple of 4, into scratch memory), then one pass for mask and result.
void dropout(const ExecContext& ec, const Invocation& inv) {
  const double p = inv.params.as<DropoutParams>().p;
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0], &mask = inv.outputs[1];
  const std::int64_t n = x.size(), padded = (n + 3) / 4 * 4;
  if (n == 0) return;
  dispatch_floating(x.dtype(), "Dropout", [&](auto tag) {
    using T = decltype(tag);
    using U = ComputeType<T>;
    const Workspace draws(ec, static_cast<std::size_t>(padded) * sizeof(U));
    {
      auto [gen, lock] = cuda::device(ec.ctx.device_id()).curand(-1, padded);
      cuda::generate_uniform(gen, dtype_of<U>, draws.data(), padded);
    }
    cuda::launch(ec, "Dropout", n, &dropout_elements<T>, static_cast<T*>(y.data()), static_cast<T*>(mask.data()),
                 static_cast<const T*>(x.data()), draws.as<U>(), n, static_cast<U>(p), static_cast<T>(1.0 / (1.0 - p)));
  });
}

// The product with the bias and relu in cuBLASLt's epilogue (one kernel) where it has one; else
// the product, then the bias and activation in one pass over it, in place.
void fully_connected(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<FullyConnectedParams>();
  const nd::NDArray& y = inv.outputs[0];
  const bool relu = p.act == UnaryOp::relu;
  if ((!p.no_bias || relu) && (!p.act || relu) && y.size() > 0 && inv.inputs[1].shape()[1] > 0) {
    const void* bias = p.no_bias ? nullptr : inv.inputs[2].data();
    if (gemm_bias_relu(ec, y.dtype(), fully_connected_gemm(inv), inv.inputs[0].data(), inv.inputs[1].data(), y.data(),
                       bias, relu)) {
      return;
    }
  }
  fully_connected_product(ec, inv);
  if (p.no_bias && !p.act) return;
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

// Both gradients from one cuBLASLt call (its BGRADB epilogue sums g over the rows while the
// product reads it) where cuBLASLt has that algorithm; else the product, then the column sums.
void fully_connected_weight_grad(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &g = inv.inputs[0], &dw = inv.outputs[0], &db = inv.outputs[1];
  if (dw.size() > 0 && g.shape()[0] > 0 &&
      gemm_bias_grad(ec, g.dtype(), fully_connected_weight_grad_gemm(inv), g.data(), inv.inputs[1].data(), dw.data(),
                     db.data())) {
    return;
  }
  fully_connected_weight_grad_unfused(ec, inv);
}

}  // namespace mx::op::gpu
