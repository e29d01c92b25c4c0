// GPU launches of softmax / log_softmax, of their backward ops and of _backward_SoftmaxOutput
// (ndarray/ops/softmax.cpp has the ops and the CPU loops; SoftmaxOutput's forward is softmax's). Lines along the last axis (inner == 1) take one warp each, reading the
// line three times (backward: twice) from L1/L2; other axes take one thread per (outer, inner)
// line, whose reads are coalesced across neighbouring threads.
#include <cmath>

#include "cuda/launch.hpp"
#include "ndarray/ops/softmax_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;
using cuda::warp_max;
using cuda::warp_sum;

// One warp per line of `length` contiguous elements, its first line_length(...) taking part.
template <class T>
__global__ void softmax_rows(const T* x, T* y, std::int64_t rows, std::int64_t length, LineLengths lengths, bool log,
                             ComputeType<T> inv_t) {
  const int lane = threadIdx.x % 32;
  for (std::int64_t row = global_thread() / 32; row < rows; row += grid_stride() / 32) {
    using A = ComputeType<T>;  // float for float16 and bfloat16
    const T* in = x + row * length;
    T* out = y + row * length;
    const std::int64_t n = line_length(lengths, row, length);
    A max = -INFINITY;
    for (std::int64_t k = lane; k < n; k += 32) max = fmax(max, A(in[k]));
    max = warp_max(max);
    A sum = 0;
    for (std::int64_t k = lane; k < n; k += 32) sum += exp((A(in[k]) - max) * inv_t);
    sum = warp_sum(sum);
    const A log_sum = ::log(sum);
    for (std::int64_t k = lane; k < length; k += 32) {
      const A shifted = (A(in[k]) - max) * inv_t;
      out[k] = k < n ? static_cast<T>(log ? shifted - log_sum : exp(shifted) / sum) : T(0);
    }
  }
}

// One thread per (outer, inner) line, elements `inner` apart.
template <class T>
__global__ void softmax_lines(const T* x, T* y, ReduceShape s, LineLengths lengths, bool log, ComputeType<T> inv_t) {
  const std::int64_t lines = s.outer * s.inner;
  for (std::int64_t line = global_thread(); line < lines; line += grid_stride()) {
    softmax_line(x, y, s, line, line_length(lengths, line, s.length), log, inv_t);
  }
}

// Backward, one warp per line of `length` contiguous elements: the line's sum, then dx.
template <class T>
__global__ void softmax_backward_rows(const T* g, const T* y, T* dx, std::int64_t rows, std::int64_t length,
                                      LineLengths lengths, bool log, ComputeType<T> inv_t) {
  const int lane = threadIdx.x % 32;
  for (std::int64_t row = global_thread() / 32; row < rows; row += grid_stride() / 32) {
    const std::int64_t start = row * length, n = line_length(lengths, row, length);
    ComputeType<T> sum = 0;
    for (std::int64_t k = lane; k < n; k += 32) sum += softmax_backward_term(g[start + k], y[start + k], log);
    sum = warp_sum(sum);
    for (std::int64_t k = lane; k < length; k += 32) {
      dx[start + k] = k < n ? softmax_backward_element(g[start + k], y[start + k], sum, log, inv_t) : T(0);
    }
  }
}

// Backward, one thread per (outer, inner) line, elements `inner` apart.
template <class T>
__global__ void softmax_backward_lines(const T* g, const T* y, T* dx, ReduceShape s, LineLengths lengths, bool log,
                                       ComputeType<T> inv_t) {
  const std::int64_t lines = s.outer * s.inner;
  for (std::int64_t line = global_thread(); line < lines; line += grid_stride()) {
    softmax_backward_line(g, y, dx, s, line, line_length(lengths, line, s.length), log, inv_t);
  }
}

// The labels that are not ignore_label, counted by one block: SoftmaxOutput's "valid" normaliser.
template <class T>
__global__ void count_valid_labels(const T* label, std::int64_t rows, std::int64_t ignore, std::int64_t* count) {
  __shared__ std::int64_t partial[cuda::kThreads];
  std::int64_t c = 0;
  for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) c += label_class(label[r]) != ignore;
  partial[threadIdx.x] = c;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *count = partial[0];
}

// d data = (y - one_hot(label)) * scale, scale = grad_scale / max(*count, 1) when count is given.
template <class T>
__global__ void softmax_output_grad_elements(T* dx, const T* y, const T* label, std::int64_t rows, std::int64_t classes,
                                             bool use_ignore, std::int64_t ignore, double grad_scale,
                                             const std::int64_t* count) {
  const auto scale = static_cast<ComputeType<T>>(count ? grad_scale / static_cast<double>(*count > 0 ? *count : 1) : grad_scale);
  const std::int64_t n = rows * classes;
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const std::int64_t cls = label_class(label[i / classes]);
    dx[i] = softmax_output_grad_element(y[i], i % classes, cls, use_ignore && cls == ignore, scale);
  }
}

}  // namespace

// _backward_SoftmaxOutput: inputs (output, label), output d data. The "valid" count stays on the
// device (one block, into scratch memory), so that nothing waits for the host.
void softmax_output_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxOutputParams>();
  const nd::NDArray &y = inv.inputs[0], &label = inv.inputs[1], &dx = inv.outputs[0];
  const std::int64_t rows = label.size();
  if (dx.size() == 0) return;
  const std::int64_t classes = y.size() / rows, ignore = label_class(p.ignore_label);
  dispatch_floating(y.dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* labels = static_cast<const T*>(label.data());
    double grad_scale = p.grad_scale;
    if (p.normalization == SoftmaxNormalization::batch) grad_scale /= static_cast<double>(rows);
    if (p.normalization != SoftmaxNormalization::valid) {
      cuda::launch(ec, inv.op->name, dx.size(), &softmax_output_grad_elements<T>, static_cast<T*>(dx.data()),
                   static_cast<const T*>(y.data()), labels, rows, classes, p.use_ignore, ignore, grad_scale,
                   static_cast<const std::int64_t*>(nullptr));
      return;
    }
    const Workspace count(ec, sizeof(std::int64_t));
    cuda::launch(cuda::stream_of(ec), inv.op->name, dim3(1), &count_valid_labels<T>, labels, rows, ignore,
                 count.as<std::int64_t>());
    cuda::launch(ec, inv.op->name, dx.size(), &softmax_output_grad_elements<T>, static_cast<T*>(dx.data()),
                 static_cast<const T*>(y.data()), labels, rows, classes, p.use_ignore, ignore, grad_scale,
                 static_cast<const std::int64_t*>(count.as<std::int64_t>()));
  });
}

void softmax(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const ReduceShape s = softmax_shape(inv);
  if (s.length == 0) return;
  const LineLengths lengths = line_lengths(inv, 1);
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(inv.inputs[0].data());
    T* y = static_cast<T*>(inv.outputs[0].data());
    const auto inv_t = static_cast<ComputeType<T>>(1.0 / p.temperature);
    if (s.inner == 1) {
      cuda::launch(ec, inv.op->name, s.outer * 32, &softmax_rows<T>, x, y, s.outer, s.length, lengths, p.log, inv_t);
    } else {
      cuda::launch(ec, inv.op->name, s.outer * s.inner, &softmax_lines<T>, x, y, s, lengths, p.log, inv_t);
    }
  });
}

// _backward_softmax / _backward_log_softmax: inputs (g, y) and with use_length the lengths, output dx.
void softmax_backward(const ExecContext& ec, const Invocation& inv) {
  const auto& p = inv.params.as<SoftmaxParams>();
  const ReduceShape s = softmax_shape(inv);
  if (s.length == 0) return;
  const LineLengths lengths = line_lengths(inv, 2);
  dispatch_floating(inv.inputs[0].dtype(), inv.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* g = static_cast<const T*>(inv.inputs[0].data());
    const T* y = static_cast<const T*>(inv.inputs[1].data());
    T* dx = static_cast<T*>(inv.outputs[0].data());
    const auto inv_t = static_cast<ComputeType<T>>(1.0 / p.temperature);
    if (s.inner == 1) {
      cuda::launch(ec, inv.op->name, s.outer * 32, &softmax_backward_rows<T>, g, y, dx, s.outer, s.length, lengths,
                   p.log, inv_t);
    } else {
      cuda::launch(ec, inv.op->name, s.outer * s.inner, &softmax_backward_lines<T>, g, y, dx, s, lengths, p.log,
                   inv_t);
    }
  });
}

}  // namespace mx::op::gpu
