// GPU launches of the RNN family (ndarray/ops/rnn.cpp has the ops, the unfused path and the CPU
// loops; the step's element functions are shared with them in rnn_kernels.hpp). RNN runs through
// cuDNN (cuda/cudnn_rnn.cpp) where the build has it and cuDNN runs the case, and otherwise the
// unfused path with the kernels here: one thread per (row, hidden unit) for a step.
#include "cuda/curand_stream.hpp"
#include "cuda/device.hpp"
#include "cuda/launch.hpp"
#include "cuda/module_preload.hpp"
#include "ndarray/ops/rnn_kernels.hpp"
#ifdef NDG_HAVE_CUDNN
#include "cuda/cudnn_rnn.hpp"
#endif

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

template <class T>
__global__ void step_forward_elements(RNNStep s) {
  const std::int64_t n = s.batch * s.hidden;
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    rnn_step_forward_element<T>(s, i / s.hidden, i % s.hidden);
  }
}

template <class T>
__global__ void step_backward_elements(RNNStep s) {
  const std::int64_t n = s.batch * s.hidden;
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    rnn_step_backward_element<T>(s, i / s.hidden, i % s.hidden);
  }
}

template <class T>
__global__ void add_row_elements(T* out, const T* a, std::int64_t a_stride, const T* b, std::int64_t rows,
                                 std::int64_t cols) {
  using A = ComputeType<T>;
  for (std::int64_t i = cuda::global_thread(); i < rows * cols; i += cuda::grid_stride()) {
    const std::int64_t r = i / cols, c = i % cols;
    out[i] = static_cast<T>(static_cast<A>(a[r * a_stride + c]) + (b ? static_cast<A>(b[i]) : A(0)));
  }
}

template <class T>
__global__ void fill_elements(T* out, std::int64_t n, T value) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) out[i] = value;
}

template <class T>
__global__ void dropout_elements(T* x, T* mask, const ComputeType<T>* draws, std::int64_t n, ComputeType<T> p, T scale) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    mask[i] = draws[i] > p ? scale : T(0);
    x[i] = static_cast<T>(static_cast<ComputeType<T>>(x[i]) * static_cast<ComputeType<T>>(mask[i]));
  }
}

template <class T>
__global__ void multiply_elements(T* out, const T* a, const T* b, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    out[i] = static_cast<T>(static_cast<ComputeType<T>>(a[i]) * static_cast<ComputeType<T>>(b[i]));
  }
}

void step_forward(const ExecContext& ec, DType dt, const RNNStep& s) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "RNN", s.batch * s.hidden, &step_forward_elements<T>, s);
  });
}

void step_backward(const ExecContext& ec, DType dt, const RNNStep& s) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "RNN", s.batch * s.hidden, &step_backward_elements<T>, s);
  });
}

void add_rows(const ExecContext& ec, DType dt, void* out, const void* a, std::int64_t a_stride, const void* b,
              std::int64_t rows, std::int64_t cols) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "RNN", rows * cols, &add_row_elements<T>, static_cast<T*>(out), static_cast<const T*>(a), a_stride,
                 static_cast<const T*>(b), rows, cols);
  });
}

void fill(const ExecContext& ec, DType dt, void* out, std::int64_t n, double value) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "RNN", n, &fill_elements<T>, static_cast<T*>(out), n, static_cast<T>(value));
  });
}

// As Dropout's launch: cuRAND's uniform draws (a multiple of 4), then one pass.
void dropout(const ExecContext& ec, DType dt, void* x, void* mask, std::int64_t n, double p) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    using U = ComputeType<T>;
    const std::int64_t padded = (n + 3) / 4 * 4;
    const Workspace draws(ec, static_cast<std::size_t>(padded) * sizeof(U));
    {
      auto [gen, lock] = cuda::device(ec.ctx.device_id()).curand(-1, padded);
      cuda::generate_uniform(gen, dtype_of<U>, draws.data(), padded);
    }
    cuda::launch(ec, "RNN", n, &dropout_elements<T>, static_cast<T*>(x), static_cast<T*>(mask), draws.as<U>(), n,
                 static_cast<U>(p), static_cast<T>(1.0 / (1.0 - p)));
  });
}

void multiply(const ExecContext& ec, DType dt, void* out, const void* a, const void* b, std::int64_t n) {
  dispatch_floating(dt, "RNN", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "RNN", n, &multiply_elements<T>, static_cast<T*>(out), static_cast<const T*>(a),
                 static_cast<const T*>(b), n);
  });
}

const RNNDeviceKernels kernels{&step_forward, &step_backward, &add_rows, &fill, &dropout, &multiply};

}  // namespace

void rnn(const ExecContext& ec, const Invocation& inv) {
#ifdef NDG_HAVE_CUDNN
  if (cuda::cudnn_rnn_forward(ec, inv)) return;
#endif
  unfused_rnn_forward(ec, inv, kernels);
}

void rnn_backward(const ExecContext& ec, const Invocation& inv) {
#ifdef NDG_HAVE_CUDNN
  if (cuda::cudnn_rnn_backward(ec, inv)) return;
#endif
  unfused_rnn_backward(ec, inv, kernels);
}

std::int64_t rnn_cudnn_reserve_bytes(int device, const RNNParams& p, const RNNDims& dims, DType dtype) {
#ifdef NDG_HAVE_CUDNN
  return cuda::cudnn_rnn_reserve_bytes(device, p, dims, dtype);
#else
  (void)device, (void)p, (void)dims, (void)dtype;
  return -1;
#endif
}

}  // namespace mx::op::gpu

namespace mx::cuda {
namespace {
__global__ void fill_int32_elements(std::int32_t* out, std::int64_t n, std::int32_t value) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = value;
}
}  // namespace

void fill_int32(const op::ExecContext& ec, std::int32_t* out, std::int64_t n, std::int32_t value) {
  launch(ec, "RNN", n, &fill_int32_elements, out, n, value);
}

}  // namespace mx::cuda
