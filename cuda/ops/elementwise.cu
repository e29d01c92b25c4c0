// GPU launches of the elementwise family (ndarray/ops/elementwise.cpp has the ops and their CPU
// reference loops). Each op is a functor of ndarray/ops/elementwise_functors.hpp run by one of a
// few generic kernels.
#include "cuda/launch.hpp"
#include "ndarray/ops/elementwise_functors.hpp"
#include "ndarray/ops/elementwise_kernels.hpp"
#include "ndarray/ops/op_table.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;
using cuda::map_elements;
using cuda::Pack;

// out[i] = f(a[i], b[i]), packed like map_elements.
template <class T, class F>
__global__ void zip_elements(T* out, const T* a, const T* b, std::int64_t n, bool packed, F f) {
  using P = Pack<T>;
  const std::int64_t packs = packed ? n / P::size : 0;
  for (std::int64_t p = global_thread(); p < packs; p += grid_stride()) {
    P x = reinterpret_cast<const P*>(a)[p];
    const P y = reinterpret_cast<const P*>(b)[p];
#pragma unroll
    for (int j = 0; j < P::size; ++j) x.v[j] = f(x.v[j], y.v[j]);
    reinterpret_cast<P*>(out)[p] = x;
  }
  for (std::int64_t i = packs * P::size + global_thread(); i < n; i += grid_stride()) out[i] = f(a[i], b[i]);
}

// out[i] = f(a[offset_a(i)], b[offset_b(i)]) for broadcasting operands.
template <class T, class F>
__global__ void zip_broadcast(T* out, const T* a, const T* b, BroadcastIndex index, std::int64_t n, F f) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[2];
    index.offsets(i, off);
    out[i] = f(a[off[0]], b[off[1]]);
  }
}

// out[i] = f(g[i], x[i], y[i]): the gradients of unary and scalar ops.
template <class T, class F>
__global__ void map3_elements(T* out, const T* g, const T* x, const T* y, std::int64_t n, F f) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = f(g[i], x[i], y[i]);
}

// ga[i], gb[i] = g[i] * dy/da, g[i] * dy/db at the broadcast operands.
template <BinaryOp op, class T>
__global__ void binary_backward_elements(T* ga, T* gb, const T* g, const T* a, const T* b, const T* y,
                                         BroadcastIndex index, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[2];
    index.offsets(i, off);
    ga[i] = static_cast<T>(g[i] * Binary<op>::da(a[off[0]], b[off[1]], y[i]));
    gb[i] = static_cast<T>(g[i] * Binary<op>::db(a[off[0]], b[off[1]], y[i]));
  }
}

template <class T> const T* in(const Invocation& inv, int i) { return static_cast<const T*>(inv.inputs[i].data()); }
template <class T> T* out(const Invocation& inv, int i) { return static_cast<T*>(inv.outputs[i].data()); }

template <class T, class F>
void launch_map(const ExecContext& ec, const Invocation& inv, F f) {
  const std::int64_t n = inv.outputs[0].size();
  const bool packed = cuda::aligned16(out<T>(inv, 0)) && cuda::aligned16(in<T>(inv, 0));
  cuda::launch(ec, inv.op->name, n == 0 ? 0 : packed ? n / Pack<T>::size + 1 : n, &map_elements<T, F>, out<T>(inv, 0), in<T>(inv, 0),
               n, packed, f);
}

template <class T, class F>
void launch_map3(const ExecContext& ec, const Invocation& inv, F f) {
  const std::int64_t n = inv.outputs[0].size();
  cuda::launch(ec, inv.op->name, n, &map3_elements<T, F>, out<T>(inv, 0), in<T>(inv, 0), in<T>(inv, 1), in<T>(inv, 2), n, f);
}

template <UnaryOp op, class T>
struct UnaryLaunch {
  static void run(const ExecContext& ec, const Invocation& inv) {
    if constexpr (!Unary<op>::floating_only || mx::is_float_v<T>) launch_map<T>(ec, inv, UnaryForward<op>{});
  }
};

template <UnaryOp op, class T>
struct UnaryBackwardLaunch {
  static void run(const ExecContext& ec, const Invocation& inv) {
    if constexpr (mx::is_float_v<T>) launch_map3<T>(ec, inv, UnaryBackward<op>{});
  }
};

template <BinaryOp op, class T>
struct BinaryLaunch {
  static void run(const ExecContext& ec, const Invocation& inv) {
    const T *a = in<T>(inv, 0), *b = in<T>(inv, 1);
    T* y = out<T>(inv, 0);
    const std::int64_t n = inv.outputs[0].size();
    // Equal shapes (the common case) need no index: one contiguous run.
    if (inv.inputs[0].shape() == inv.inputs[1].shape() || binary_index(inv).contiguous()) {
      const bool packed = cuda::aligned16(y) && cuda::aligned16(a) && cuda::aligned16(b);
      cuda::launch(ec, inv.op->name, n == 0 ? 0 : packed ? n / Pack<T>::size + 1 : n, &zip_elements<T, BinaryForward<op>>, y, a, b,
                   n, packed, BinaryForward<op>{});
    } else {
      cuda::launch(ec, inv.op->name, n, &zip_broadcast<T, BinaryForward<op>>, y, a, b, binary_index(inv), n,
                   BinaryForward<op>{});
    }
  }
};

template <BinaryOp op, class T>
struct BinaryBackwardLaunch {
  static void run(const ExecContext& ec, const Invocation& inv) {
    if constexpr (mx::is_float_v<T>) {
      const std::int64_t n = inv.outputs[0].size();
      cuda::launch(ec, inv.op->name, n, &binary_backward_elements<op, T>, out<T>(inv, 0), out<T>(inv, 1), in<T>(inv, 0),
                   in<T>(inv, 1), in<T>(inv, 2), in<T>(inv, 3), binary_backward_index(inv), n);
    }
  }
};

template <BinaryOp op, class T>
struct ScalarLaunch {
  static void run(const ExecContext& ec, const Invocation& inv) {
    const auto& p = inv.params.as<ScalarParams>();
    launch_map<T>(ec, inv, ScalarForward<op, T>{static_cast<T>(p.scalar), p.reverse});
  }
};

template <BinaryOp op, class T>
struct ScalarBackwardLaunch {
  static void run(const ExecContext& ec, const Invocation& inv) {
    if constexpr (mx::is_float_v<T>) {
      const auto& p = inv.params.as<ScalarParams>();
      launch_map3<T>(ec, inv, ScalarBackward<op, T>{static_cast<T>(p.scalar), p.reverse});
    }
  }
};

using LaunchFn = void (*)(const ExecContext&, const Invocation&);

}  // namespace

template <UnaryOp op> void unary(const ExecContext& ec, const Invocation& inv) {
  OpTable<UnaryOp, UnaryLaunch, LaunchFn>::get(op, inv.outputs[0].dtype())(ec, inv);
}
template <UnaryOp op> void unary_backward(const ExecContext& ec, const Invocation& inv) {
  OpTable<UnaryOp, UnaryBackwardLaunch, LaunchFn>::get(op, inv.outputs[0].dtype())(ec, inv);
}
template <BinaryOp op> void binary(const ExecContext& ec, const Invocation& inv) {
  OpTable<BinaryOp, BinaryLaunch, LaunchFn>::get(op, inv.outputs[0].dtype())(ec, inv);
}
template <BinaryOp op> void binary_backward(const ExecContext& ec, const Invocation& inv) {
  OpTable<BinaryOp, BinaryBackwardLaunch, LaunchFn>::get(op, inv.outputs[0].dtype())(ec, inv);
}
template <BinaryOp op> void scalar(const ExecContext& ec, const Invocation& inv) {
  OpTable<BinaryOp, ScalarLaunch, LaunchFn>::get(op, inv.outputs[0].dtype())(ec, inv);
}
template <BinaryOp op> void scalar_backward(const ExecContext& ec, const Invocation& inv) {
  OpTable<BinaryOp, ScalarBackwardLaunch, LaunchFn>::get(op, inv.outputs[0].dtype())(ec, inv);
}

#define NDG_INSTANTIATE_UNARY(NAME, ...)                                            \
  template void unary<UnaryOp::NAME>(const ExecContext&, const Invocation&);        \
  template void unary_backward<UnaryOp::NAME>(const ExecContext&, const Invocation&);
NDG_UNARY_OPS(NDG_INSTANTIATE_UNARY)
#define NDG_INSTANTIATE_BINARY(NAME, ...)                                           \
  template void binary<BinaryOp::NAME>(const ExecContext&, const Invocation&);      \
  template void binary_backward<BinaryOp::NAME>(const ExecContext&, const Invocation&); \
  template void scalar<BinaryOp::NAME>(const ExecContext&, const Invocation&);      \
  template void scalar_backward<BinaryOp::NAME>(const ExecContext&, const Invocation&);
NDG_BINARY_OPS(NDG_INSTANTIATE_BINARY)

}  // namespace mx::op::gpu
