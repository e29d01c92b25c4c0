// GPU launches of the backend ops: fill, arange, cast, affine, bias + activation, optimizer steps
// gather and scatter (the elementwise family is in cuda/ops/elementwise.cu).
#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "cuda/launch.hpp"
#include "ndarray/functors.hpp"
#include "ndarray/ops/elementwise_functors.hpp"
#include "ndarray/op_table.hpp"

namespace mx::cuda {
namespace {

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

template <class T>
__global__ void scatter_elements(T* out, const T* in, GatherIndex index, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    std::int64_t off[1];
    index.offsets(i, off);
    out[off[0]] = in[i];
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

template <UnaryOp op, class T>
struct BiasActivationLaunch {
  static void run(cudaStream_t stream, void* out, const void* bias, std::int64_t rows, std::int64_t cols) {
    bias_activation_elements<<<blocks_for(rows * cols), kThreads, 0, stream>>>(
        static_cast<T*>(out), static_cast<const T*>(bias), rows, cols, op::UnaryForward<op>{});
  }
};


}  // namespace

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

void scatter(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out) {
  const std::int64_t n = index_size(index);
  if (n == 0) return;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    scatter_elements<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(in), index, n);
  });
  check_launch("scatter");
}

}  // namespace mx::cuda
