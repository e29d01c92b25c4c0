// CPU loops of the backend ops: fill, arange, cast, affine, bias + activation, optimizer steps, gather, scatter.
#include "ndarray/cpu/kernels.hpp"
#include "ndarray/functors.hpp"
#include "ndarray/ops/elementwise_functors.hpp"
#include "ndarray/op_table.hpp"

namespace mx::cpu_kernels {
namespace {


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

template <UnaryOp op, class T>
struct BiasActivationLoop {
  static void run(void* out_raw, const void* bias_raw, std::int64_t rows, std::int64_t cols) {
    T* out = static_cast<T*>(out_raw);
    const T* bias = static_cast<const T*>(bias_raw);
    const op::UnaryForward<op> act;
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
    if (!bias) return;
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      T* o = static_cast<T*>(out);
      const T* b = static_cast<const T*>(bias);
#pragma omp parallel for if (rows * cols >= kParallelThreshold) schedule(static)
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c) o[r * cols + c] = static_cast<T>(o[r * cols + c] + b[c]);
      }
    });
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

void scatter(DType dt, const GatherIndex& index, const void* in_raw, void* out_raw) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(in_raw);
    T* out = static_cast<T*>(out_raw);
    const std::int64_t n = index_size(index);
#pragma omp parallel for if (n >= kParallelThreshold) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t off[1];
      index.offsets(i, off);
      out[off[0]] = in[i];
    }
  });
}

}  // namespace mx::cpu_kernels
