// CPU elementwise loops: fill, cast, binary (broadcasting), binary with a scalar, unary, gather.
#include "ndarray/cpu/kernels.hpp"
#include "ndarray/functors.hpp"
#include "ndarray/op_table.hpp"

namespace mx::cpu_kernels {
namespace {

using BinaryFn = void (*)(const BroadcastIndex&, const void*, const void*, void*);
using ScalarFn = void (*)(const void*, double, bool, void*, std::int64_t);
using UnaryFn = void (*)(const void*, void*, std::int64_t);

std::int64_t index_size(const StridedIndex<1>& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}
std::int64_t index_size(const BroadcastIndex& index) {
  std::int64_t n = 1;
  for (int d = 0; d < index.ndim; ++d) n *= index.shape[d];
  return n;
}

template <BinaryOp op, class T>
struct BinaryLoop {
  static void run(const BroadcastIndex& index, const void* a_raw, const void* b_raw, void* out_raw) {
    const T* a = static_cast<const T*>(a_raw);
    const T* b = static_cast<const T*>(b_raw);
    T* out = static_cast<T*>(out_raw);
    const functors::Binary<op> f;
    const std::int64_t n = index_size(index);
    if (index.contiguous()) {
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
      return;
    }
#pragma omp parallel for if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t off[2];
      index.offsets(i, off);
      out[i] = f(a[off[0]], b[off[1]]);
    }
  }
};

template <BinaryOp op, class T>
struct ScalarLoop {
  static void run(const void* a_raw, double scalar, bool scalar_first, void* out_raw, std::int64_t n) {
    const T* a = static_cast<const T*>(a_raw);
    T* out = static_cast<T*>(out_raw);
    const T s = static_cast<T>(scalar);
    const functors::Binary<op> f;
    if (scalar_first) {
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) out[i] = f(s, a[i]);
    } else {
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) out[i] = f(a[i], s);
    }
  }
};

template <UnaryOp op, class T>
struct UnaryLoop {
  static void run(const void* in_raw, void* out_raw, std::int64_t n) {
    const T* in = static_cast<const T*>(in_raw);
    T* out = static_cast<T*>(out_raw);
    const functors::Unary<op> f;
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
  }
};

template <UnaryOp op, class T>
struct BiasActivationLoop {
  static void run(void* out_raw, const void* bias_raw, std::int64_t rows, std::int64_t cols) {
    T* out = static_cast<T*>(out_raw);
    const T* bias = static_cast<const T*>(bias_raw);
    const functors::Unary<op> act;
#pragma omp parallel for if (rows * cols >= kParallelThreshold) schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      T* row = out + r * cols;
      for (std::int64_t c = 0; c < cols; ++c) row[c] = act(bias ? static_cast<T>(row[c] + bias[c]) : row[c]);
    }
  }
};

}  // namespace

void bias_activation(DType dt, void* out, const void* bias, std::int64_t rows, std::int64_t cols,
                     std::optional<UnaryOp> act) {
  if (!act) {
    if (bias) binary(BinaryOp::add, dt, make_broadcast_index("bias_add", Shape{rows, cols}, Shape{rows, cols}, Shape{cols}), out, bias, out);
    return;
  }
  using Fn = void (*)(void*, const void*, std::int64_t, std::int64_t);
  OpTable<UnaryOp, BiasActivationLoop, Fn>::get(*act, dt)(out, bias, rows, cols);
}

void fill(DType dt, void* out_raw, std::int64_t n, double value) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(out_raw);
    const T v = static_cast<T>(value);
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = v;
  });
}

void arange(DType dt, void* out_raw, std::int64_t n, double start, double step) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(out_raw);
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
}

void cast(DType from, const void* in_raw, DType to, void* out_raw, std::int64_t n) {
  dispatch_dtype(from, [&](auto from_tag) {
    dispatch_dtype(to, [&](auto to_tag) {
      using S = decltype(from_tag);
      using D = decltype(to_tag);
      const S* in = static_cast<const S*>(in_raw);
      D* out = static_cast<D*>(out_raw);
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<D>(in[i]);
    });
  });
}

void binary(BinaryOp op, DType dt, const BroadcastIndex& index, const void* a, const void* b, void* out) {
  OpTable<BinaryOp, BinaryLoop, BinaryFn>::get(op, dt)(index, a, b, out);
}

void binary_scalar(BinaryOp op, DType dt, const void* a, double scalar, bool scalar_first, void* out,
                   std::int64_t n) {
  OpTable<BinaryOp, ScalarLoop, ScalarFn>::get(op, dt)(a, scalar, scalar_first, out, n);
}

void unary(UnaryOp op, DType dt, const void* in, void* out, std::int64_t n) {
  OpTable<UnaryOp, UnaryLoop, UnaryFn>::get(op, dt)(in, out, n);
}

void affine(DType dt, void* data, std::int64_t n, double scale, double shift) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(data);
    const functors::Affine<T> f{static_cast<T>(scale), static_cast<T>(shift)};
#pragma omp parallel for simd if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) values[i] = f(values[i]);
  });
}

void sgd_update(DType dt, void* weight, const void* grad, void* mom, std::int64_t n,
                const functors::OptimizerStep& step) {
  dispatch_floating(dt, "sgd_update", [&](auto tag) {
    using T = decltype(tag);
    T* w = static_cast<T*>(weight);
    const T* g = static_cast<const T*>(grad);
    T* m = static_cast<T*>(mom);
#pragma omp parallel for if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) step.sgd(w[i], g[i], m ? m + i : nullptr);
  });
}

void adam_update(DType dt, void* weight, const void* grad, void* mean, void* var, std::int64_t n,
                 const functors::OptimizerStep& step) {
  dispatch_floating(dt, "adam_update", [&](auto tag) {
    using T = decltype(tag);
    T* w = static_cast<T*>(weight);
    const T* g = static_cast<const T*>(grad);
    T* m = static_cast<T*>(mean);
    T* v = static_cast<T*>(var);
#pragma omp parallel for if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) step.adam(w[i], g[i], m[i], v[i]);
  });
}

void gather(DType dt, const GatherIndex& index, const void* in_raw, void* out_raw) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(in_raw);
    T* out = static_cast<T*>(out_raw);
    const std::int64_t n = index_size(index);
#pragma omp parallel for if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t off[1];
      index.offsets(i, off);
      out[i] = in[off[0]];
    }
  });
}

}  // namespace mx::cpu_kernels
