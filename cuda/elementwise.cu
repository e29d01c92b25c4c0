// GPU elementwise ops: binary (contiguous and broadcasting), binary with a scalar, unary, fill,
// cast, affine and gather. Each op is a functor from ndarray/functors.hpp run by one of a few
// generic kernels; the op x dtype dispatch goes through OpTable.
#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "cuda/launch.hpp"
#include "ndarray/functors.hpp"
#include "ndarray/op_table.hpp"

namespace mx::cuda {
namespace {

// out[i] = fn(in[i]); 16-byte packs when `packed` (both pointers aligned), then the tail.
template <class T, class Fn>
__global__ void map_elements(T* out, const T* in, std::int64_t n, bool packed, Fn fn) {
  using P = Pack<T>;
  const std::int64_t packs = packed ? n / P::size : 0;
  for (std::int64_t p = global_thread(); p < packs; p += grid_stride()) {
    P x = reinterpret_cast<const P*>(in)[p];
#pragma unroll
    for (int j = 0; j < P::size; ++j) x.v[j] = fn(x.v[j]);
    reinterpret_cast<P*>(out)[p] = x;
  }
  for (std::int64_t i = packs * P::size + global_thread(); i < n; i += grid_stride()) out[i] = fn(in[i]);
}

// out[i] = fn(a[i], b[i]), packed like map_elements.
template <class T, class Fn>
__global__ void zip_elements(T* out, const T* a, const T* b, std::int64_t n, bool packed, Fn fn) {
  using P = Pack<T>;
  const std::int64_t packs = packed ? n / P::size : 0;
  for (std::int64_t p = global_thread(); p < packs; p += grid_stride()) {
    P x = reinterpret_cast<const P*>(a)[p];
    const P y = reinterpret_cast<const P*>(b)[p];
#pragma unroll
    for (int j = 0; j < P::size; ++j) x.v[j] = fn(x.v[j], y.v[j]);
    reinterpret_cast<P*>(out)[p] = x;
  }
  for (std::int64_t i = packs * P::size + global_thread(); i < n; i += grid_stride()) out[i] = fn(a[i], b[i]);
}

// out[i] = fn(a[offset_a(i)], b[offset_b(i)]) for broadcasting operands.
template <class T, class Fn>
__global__ void zip_broadcast(T* out, const T* a, const T* b, BroadcastIndex index, std::int64_t n, Fn fn) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[2];
    index.offsets(i, off);
    out[i] = fn(a[off[0]], b[off[1]]);
  }
}

template <class T>
__global__ void fill_elements(T* out, std::int64_t n, T value) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = value;
}

template <class T>
__global__ void arange_elements(T* out, std::int64_t n, double start, double step) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    out[i] = static_cast<T>(start + static_cast<double>(i) * step);
  }
}

template <class From, class To>
__global__ void cast_elements(To* out, const From* in, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = static_cast<To>(in[i]);
}

template <class T>
__global__ void gather_elements(T* out, const T* in, GatherIndex index, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[1];
    index.offsets(i, off);
    out[i] = in[off[0]];
  }
}

// out[r, c] = act(out[r, c] + bias[c]); bias may be null.
template <class T, class Act>
__global__ void bias_activation_elements(T* out, const T* bias, std::int64_t rows, std::int64_t cols, Act act) {
  const std::int64_t n = rows * cols;
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const T x = bias ? static_cast<T>(out[i] + bias[i % cols]) : out[i];
    out[i] = act(x);
  }
}

struct Identity {
  template <class T> NDG_HD T operator()(T x) const { return x; }
};

template <class T>
__global__ void sgd_elements(T* weight, const T* grad, T* mom, std::int64_t n, functors::OptimizerStep step) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) step.sgd(weight[i], grad[i], mom ? mom + i : nullptr);
}

template <class T>
__global__ void adam_elements(T* weight, const T* grad, T* mean, T* var, std::int64_t n, functors::OptimizerStep step) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) step.adam(weight[i], grad[i], mean[i], var[i]);
}

template <int N>
std::int64_t index_size(const StridedIndex<N>& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}

template <class T, class Fn>
void launch_map(cudaStream_t stream, T* out, const T* in, std::int64_t n, Fn fn, const char* op) {
  if (n == 0) return;
  const bool packed = aligned16(out) && aligned16(in);
  map_elements<<<blocks_for(packed ? n / Pack<T>::size + 1 : n), kThreads, 0, stream>>>(out, in, n, packed, fn);
  check_launch(op);
}

// Functors binding a scalar operand.
template <BinaryOp op, class T>
struct ScalarRight {
  T scalar;
  NDG_HD T operator()(T x) const { return functors::Binary<op>{}(x, scalar); }
};
template <BinaryOp op, class T>
struct ScalarLeft {
  T scalar;
  NDG_HD T operator()(T x) const { return functors::Binary<op>{}(scalar, x); }
};

template <BinaryOp op, class T>
struct BinaryLaunch {
  static void run(cudaStream_t stream, const BroadcastIndex& index, const void* a_raw, const void* b_raw,
                  void* out_raw) {
    const T* a = static_cast<const T*>(a_raw);
    const T* b = static_cast<const T*>(b_raw);
    T* out = static_cast<T*>(out_raw);
    const std::int64_t n = index_size(index);
    if (n == 0) return;
    if (index.contiguous()) {
      const bool packed = aligned16(out) && aligned16(a) && aligned16(b);
      zip_elements<<<blocks_for(packed ? n / Pack<T>::size + 1 : n), kThreads, 0, stream>>>(
          out, a, b, n, packed, functors::Binary<op>{});
    } else {
      zip_broadcast<<<blocks_for(n), kThreads, 0, stream>>>(out, a, b, index, n, functors::Binary<op>{});
    }
    check_launch(op_name(op));
  }
};

template <BinaryOp op, class T>
struct ScalarLaunch {
  static void run(cudaStream_t stream, const void* a, double scalar, bool scalar_first, void* out,
                  std::int64_t n) {
    const T s = static_cast<T>(scalar);
    if (scalar_first) {
      launch_map(stream, static_cast<T*>(out), static_cast<const T*>(a), n, ScalarLeft<op, T>{s}, op_name(op));
    } else {
      launch_map(stream, static_cast<T*>(out), static_cast<const T*>(a), n, ScalarRight<op, T>{s}, op_name(op));
    }
  }
};

template <UnaryOp op, class T>
struct UnaryLaunch {
  static void run(cudaStream_t stream, const void* in, void* out, std::int64_t n) {
    launch_map(stream, static_cast<T*>(out), static_cast<const T*>(in), n, functors::Unary<op>{}, op_name(op));
  }
};

template <UnaryOp op, class T>
struct BiasActivationLaunch {
  static void run(cudaStream_t stream, void* out, const void* bias, std::int64_t rows, std::int64_t cols) {
    bias_activation_elements<<<blocks_for(rows * cols), kThreads, 0, stream>>>(
        static_cast<T*>(out), static_cast<const T*>(bias), rows, cols, functors::Unary<op>{});
  }
};

using BinaryFn = void (*)(cudaStream_t, const BroadcastIndex&, const void*, const void*, void*);
using ScalarFn = void (*)(cudaStream_t, const void*, double, bool, void*, std::int64_t);
using UnaryFn = void (*)(cudaStream_t, const void*, void*, std::int64_t);

}  // namespace

void binary(cudaStream_t stream, BinaryOp op, DType dt, const BroadcastIndex& index, const void* a,
            const void* b, void* out) {
  OpTable<BinaryOp, BinaryLaunch, BinaryFn>::get(op, dt)(stream, index, a, b, out);
}

void binary_scalar(cudaStream_t stream, BinaryOp op, DType dt, const void* a, double scalar, bool scalar_first,
                   void* out, std::int64_t n) {
  OpTable<BinaryOp, ScalarLaunch, ScalarFn>::get(op, dt)(stream, a, scalar, scalar_first, out, n);
}

void unary(cudaStream_t stream, UnaryOp op, DType dt, const void* in, void* out, std::int64_t n) {
  OpTable<UnaryOp, UnaryLaunch, UnaryFn>::get(op, dt)(stream, in, out, n);
}

void bias_activation(cudaStream_t stream, DType dt, void* out, const void* bias, std::int64_t rows,
                     std::int64_t cols, std::optional<UnaryOp> act) {
  if (rows * cols == 0) return;
  if (act) {
    using Fn = void (*)(cudaStream_t, void*, const void*, std::int64_t, std::int64_t);
    OpTable<UnaryOp, BiasActivationLaunch, Fn>::get(*act, dt)(stream, out, bias, rows, cols);
  } else {
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      bias_activation_elements<<<blocks_for(rows * cols), kThreads, 0, stream>>>(
          static_cast<T*>(out), static_cast<const T*>(bias), rows, cols, Identity{});
    });
  }
  check_launch("bias_activation");
}

void sgd_update(cudaStream_t stream, DType dt, void* weight, const void* grad, void* mom, std::int64_t n,
                const functors::OptimizerStep& step) {
  if (n == 0) return;
  dispatch_floating(dt, "sgd_update", [&](auto tag) {
    using T = decltype(tag);
    sgd_elements<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(weight), static_cast<const T*>(grad),
                                                         static_cast<T*>(mom), n, step);
  });
  check_launch("sgd_update");
}

void adam_update(cudaStream_t stream, DType dt, void* weight, const void* grad, void* mean, void* var,
                 std::int64_t n, const functors::OptimizerStep& step) {
  if (n == 0) return;
  dispatch_floating(dt, "adam_update", [&](auto tag) {
    using T = decltype(tag);
    adam_elements<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(weight), static_cast<const T*>(grad),
                                                          static_cast<T*>(mean), static_cast<T*>(var), n, step);
  });
  check_launch("adam_update");
}

void fill(cudaStream_t stream, DType dt, void* out, std::int64_t n, double value) {
  if (n == 0) return;
  if (value == 0.0) {  // all-zero bytes in every dtype
    NDG_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(n) * dtype_size(dt), stream));
    return;
  }
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    fill_elements<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, static_cast<T>(value));
  });
  check_launch("fill");
}

void arange(cudaStream_t stream, DType dt, void* out, std::int64_t n, double start, double step) {
  if (n == 0) return;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    arange_elements<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, start, step);
  });
  check_launch("arange");
}

void cast(cudaStream_t stream, DType from, const void* in, DType to, void* out, std::int64_t n) {
  if (n == 0) return;
  dispatch_dtype(from, [&](auto from_tag) {
    dispatch_dtype(to, [&](auto to_tag) {
      using S = decltype(from_tag);
      using D = decltype(to_tag);
      cast_elements<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<D*>(out), static_cast<const S*>(in), n);
    });
  });
  check_launch("astype");
}

void affine(cudaStream_t stream, DType dt, void* data, std::int64_t n, double scale, double shift) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_map(stream, static_cast<T*>(data), static_cast<const T*>(data), n,
               functors::Affine<T>{static_cast<T>(scale), static_cast<T>(shift)}, "affine");
  });
}

void gather(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  const std::int64_t n = index_size(index);
  if (n == 0) return;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    gather_elements<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(in), index, n);
  });
  check_launch("gather");
}

}  // namespace mx::cuda
