// GPU loops of the convolution: im2col and col2im for the im2col + cuBLAS path (a CUDA build
// without cuDNN, or a geometry cuDNN has no engine for), the bias, and the hand-off to cuDNN
// (ndarray/ops/conv.cpp has the op and picks the path).
#include <algorithm>

#include "cuda/launch.hpp"
#include "ndarray/ops/conv_kernels.hpp"
#include "ndarray/ops/nn_kernels.hpp"
#ifdef NDG_HAVE_CUDNN
#include "cuda/cudnn_conv.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()
#endif

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

template <class T>
__global__ void im2col_elements(ConvGeometry g, const T* x, T* col, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) col[i] = im2col_element(g, x, i);
}

template <class T>
__global__ void col2im_elements(ConvGeometry g, const T* col, T* dx, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) dx[i] = col2im_element(g, col, i);
}

// y (rows = batch * channels, cols) = act(y + bias[row % channels]) (bias may be null): rows along
// the grid's y, the row's columns along x, so that no thread divides.
template <class T, class Act>
__global__ void bias_activation_rows(T* y, const T* bias, std::int64_t rows, std::int64_t cols, std::int64_t channels,
                                     Act act) {
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const T b = bias ? bias[r % channels] : T(0);
    T* row = y + r * cols;
    for (std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
         c += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      row[c] = act(static_cast<T>(row[c] + b));  // the sum in float for 16-bit types, rounded once
    }
  }
}

// The same with 16-byte packs, where cols is a multiple of the pack and y is aligned: a block per
// row (grid-stride over rows), each thread a pack at a time.
template <class T, class Act>
__global__ void bias_activation_packed_rows(T* y, const T* bias, std::int64_t rows, std::int64_t cols,
                                            std::int64_t channels, Act act) {
  using P = cuda::Pack<T>;
  const std::int64_t packs = cols / P::size;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T b = bias ? bias[r % channels] : T(0);
    P* row = reinterpret_cast<P*>(y + r * cols);
    for (std::int64_t c = threadIdx.x; c < packs; c += blockDim.x) {
      P v = row[c];
#pragma unroll
      for (int j = 0; j < P::size; ++j) v.v[j] = act(static_cast<T>(v.v[j] + b));
      row[c] = v;
    }
  }
}

}  // namespace

void im2col(const ExecContext& ec, const ConvGeometry& g, const void* x, void* col) {
  const std::int64_t n = g.in_channels * g.kernel_size() * g.out_size();
  dispatch_floating(g.dtype, "Convolution", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "Convolution", n, &im2col_elements<T>, g, static_cast<const T*>(x), static_cast<T*>(col), n);
  });
}

void col2im(const ExecContext& ec, const ConvGeometry& g, const void* col, void* dx) {
  const std::int64_t n = g.in_channels * g.in_size();
  dispatch_floating(g.dtype, "Convolution", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "Convolution", n, &col2im_elements<T>, g, static_cast<const T*>(col), static_cast<T*>(dx), n);
  });
}

void bias_activation(const ExecContext& ec, const ConvGeometry& g, void* y, const void* bias,
                     std::optional<UnaryOp> act) {
  const std::int64_t rows = g.batch * g.out_channels, cols = g.out_size();
  if (rows * cols == 0) return;
  const std::int64_t pack = 16 / static_cast<std::int64_t>(dtype_size(g.dtype));
  if (cols % pack == 0 && cuda::aligned16(y) && cols >= 4 * pack) {
    const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>(rows, std::int64_t{1} << 20)));
    return dispatch_floating(g.dtype, "Convolution", [&](auto tag) {
      using T = decltype(tag);
      with_activation(act, [&](auto f) {
        cuda::launch(cuda::stream_of(ec), "Convolution", grid, &bias_activation_packed_rows<T, decltype(f)>,
                     static_cast<T*>(y), static_cast<const T*>(bias), rows, cols, g.out_channels, f);
      });
    });
  }
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>((cols + cuda::kThreads - 1) / cuda::kThreads, 64)),
                  static_cast<unsigned>(std::min<std::int64_t>(rows, 65535)));
  dispatch_floating(g.dtype, "Convolution", [&](auto tag) {
    using T = decltype(tag);
    with_activation(act, [&](auto f) {
      cuda::launch(cuda::stream_of(ec), "Convolution", grid, &bias_activation_rows<T, decltype(f)>, static_cast<T*>(y),
                   static_cast<const T*>(bias), rows, cols, g.out_channels, f);
    });
  });
}

bool cudnn_pass(const ExecContext& ec, ConvPass pass, const ConvGeometry& g, const void* a, const void* b, void* out) {
#ifdef NDG_HAVE_CUDNN
  return cuda::cudnn_convolution(ec, pass, g, a, b, out);
#else
  (void)ec, (void)pass, (void)g, (void)a, (void)b, (void)out;
  return false;
#endif
}

}  // namespace mx::op::gpu
