// GPU launches of the image family (ndarray/ops/image.cpp and image_augment.cpp have the ops and
// the CPU loops): BilinearResize2D a thread per output element; its backward a thread per output
// element adding its four shares into dx with atomics (in float for the 16-bit types, rounded once
// after); the augmentation ops a thread per output element, _image_adjust_colors after a block per
// image has summed its gray values for the contrast step.
#include "cuda/check.hpp"
#include "cuda/launch.hpp"
#include "ndarray/ops/image_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

using cuda::global_thread;
using cuda::grid_stride;

template <class T>
__global__ void resize_elements(ResizeGeometry g, const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = resize_element(g, x, i);
}

// A = ComputeType<T>: dx is T for float and double, a float buffer for the 16-bit types.
template <class T, class A>
__global__ void resize_scatter_elements(ResizeGeometry g, const T* dy, A* dx, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    resize_scatter<A>(g, i, static_cast<A>(dy[i]), [&](std::int64_t j, A v) { atomicAdd(dx + j, v); });
  }
}

template <class T, class A>
__global__ void round_elements(const A* in, T* out, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) out[i] = static_cast<T>(in[i]);
}

template <class T>
__global__ void to_tensor_elements(const T* x, float* y, std::int64_t pixels, std::int64_t c, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = to_tensor_element(x, pixels, c, i);
}

template <class T>
__global__ void normalize_elements(NormalizeParams p, const T* x, T* y, std::int64_t pixels, std::int64_t c,
                                   std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = normalize_element(p, x, pixels, c, i);
}

// A thread per output pixel (n of them), every channel.
template <class T>
__global__ void crop_resize_pixels(CropGeometry g, const T* x, const std::int32_t* boxes, const std::int32_t* flips,
                                   T* y, std::int64_t n) {
  for (std::int64_t p = global_thread(); p < n; p += grid_stride()) crop_resize_pixel(g, x, boxes, flips, p, y + p * g.c);
}

// Block s: image s's gray mean as its contrast step finds it (0 where it has none).
template <class T>
__global__ void __launch_bounds__(cuda::kThreads) color_means(const T* x, const float* factors, float* means,
                                                              std::int64_t pixels, std::int64_t c) {
  const std::int64_t s = blockIdx.x;
  const float* f = factors + s * kColorColumns;
  const int at = contrast_position(f);
  if (at == kColorMaxSteps) {
    if (threadIdx.x == 0) means[s] = 0.0f;
    return;
  }
  const T* image = x + s * pixels * c;
  double sum = 0;
  float v[3];
  for (std::int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
    load_pixel(image, p, c, v);
    color_steps<T>(f, at, 0.0f, c, v);
    sum += color_gray(v, c);
  }
  sum = cuda::block_sum(sum);
  if (threadIdx.x == 0) means[s] = static_cast<float>(sum / static_cast<double>(pixels));
}

// A thread per pixel: every step of its image's row.
template <class T>
__global__ void color_pixels(const T* x, const float* factors, const float* means, T* y, std::int64_t pixels,
                             std::int64_t c, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const std::int64_t s = i / pixels;
    float v[3];
    load_pixel(x, i, c, v);
    color_steps<T>(factors + s * kColorColumns, kColorMaxSteps, means[s], c, v);
    for (std::int64_t j = 0; j < c; ++j) y[i * c + j] = static_cast<T>(v[j]);
  }
}

// The pixels per channel and the channels of an image layout (..., h, w, c).
std::pair<std::int64_t, std::int64_t> pixels_and_channels(const Shape& s) {
  const int d = s.ndim();
  return {s[d - 3] * s[d - 2], s[d - 1]};
}

}  // namespace

void bilinear_resize(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const ResizeGeometry g = resize_geometry(inv.params.as<BilinearResizeParams>(), x.shape());
  dispatch_floating(x.dtype(), "_contrib_BilinearResize2D", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "_contrib_BilinearResize2D", y.size(), &resize_elements<T>, g, static_cast<const T*>(x.data()),
                 static_cast<T*>(y.data()), y.size());
  });
}

void bilinear_resize_backward(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &dy = inv.inputs[0], &x = inv.inputs[1], &dx = inv.outputs[0];
  const ResizeGeometry g = resize_geometry(inv.params.as<BilinearResizeParams>(), x.shape());
  const char* op = "_backward_contrib_BilinearResize2D";
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using A = ComputeType<T>;
    const std::size_t bytes = static_cast<std::size_t>(dx.size()) * sizeof(A);
    if constexpr (std::is_same_v<T, A>) {
      NDG_CUDA_CHECK(cudaMemsetAsync(dx.data(), 0, bytes, cuda::stream_of(ec)));
      cuda::launch(ec, op, dy.size(), &resize_scatter_elements<T, A>, g, static_cast<const T*>(dy.data()),
                   static_cast<A*>(dx.data()), dy.size());
    } else {
      Workspace sums(ec, bytes);
      NDG_CUDA_CHECK(cudaMemsetAsync(sums.data(), 0, bytes, cuda::stream_of(ec)));
      cuda::launch(ec, op, dy.size(), &resize_scatter_elements<T, A>, g, static_cast<const T*>(dy.data()),
                   static_cast<A*>(sums.data()), dy.size());
      cuda::launch(ec, op, dx.size(), &round_elements<T, A>, static_cast<const A*>(sums.data()),
                   static_cast<T*>(dx.data()), dx.size());
    }
  });
}


void to_tensor(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const std::int64_t pixels = pixels_and_channels(x.shape()).first, c = pixels_and_channels(x.shape()).second;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "_image_to_tensor", y.size(), &to_tensor_elements<T>, static_cast<const T*>(x.data()),
                 static_cast<float*>(y.data()), pixels, c, y.size());
  });
}

void normalize(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const Shape& s = x.shape();
  const int d = s.ndim();
  const std::int64_t c = s[d - 3], pixels = s[d - 2] * s[d - 1];
  dispatch_floating(x.dtype(), "_image_normalize", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "_image_normalize", y.size(), &normalize_elements<T>, inv.params.as<NormalizeParams>(),
                 static_cast<const T*>(x.data()), static_cast<T*>(y.data()), pixels, c, y.size());
  });
}

void crop_resize(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const CropGeometry g = crop_geometry(inv.params.as<CropResizeParams>(), x.shape());
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const std::int64_t pixels = g.c > 0 ? y.size() / g.c : 0;
    cuda::launch(ec, "_image_crop_resize", pixels, &crop_resize_pixels<T>, g, static_cast<const T*>(x.data()),
                 static_cast<const std::int32_t*>(inv.inputs[1].data()),
                 static_cast<const std::int32_t*>(inv.inputs[2].data()), static_cast<T*>(y.data()), pixels);
  });
}

void adjust_colors(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray &x = inv.inputs[0], &y = inv.outputs[0];
  const std::int64_t n = x.shape()[0];
  const std::int64_t pixels = pixels_and_channels(x.shape()).first, c = pixels_and_channels(x.shape()).second;
  const auto* factors = static_cast<const float*>(inv.inputs[1].data());
  const char* op = "_image_adjust_colors";
  if (n == 0 || pixels == 0) return;
  Workspace means(ec, static_cast<std::size_t>(n) * sizeof(float));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x.data());
    cuda::launch(cuda::stream_of(ec), op, dim3(static_cast<unsigned>(n)), &color_means<T>, in, factors,
                 static_cast<float*>(means.data()), pixels, c);
    cuda::launch(ec, op, n * pixels, &color_pixels<T>, in, factors, static_cast<const float*>(means.data()),
                 static_cast<T*>(y.data()), pixels, c, n * pixels);
  });
}

}  // namespace mx::op::gpu
