// GPU launches of the creation family (ndarray/ops/creation.cpp and ndarray/ops/random.cpp have the
// ops and the CPU loops): fill, arange, and cuRAND draws on the device's generator.
#include "cuda/curand_stream.hpp"
#include "cuda/device.hpp"
#include "cuda/launch.hpp"
#include "ndarray/ops/creation_kernels.hpp"
#include "ndarray/ops/functors.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

template <class T>
__global__ void fill_elements(T* out, std::int64_t n, T value) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) out[i] = value;
}

// out[i] = T(f(in[i])): float draws mapped and rounded once to float16 or bfloat16.
template <class T, class F>
__global__ void narrow_elements(T* out, const float* in, std::int64_t n, F f) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) out[i] = static_cast<T>(f(in[i]));
}

struct Identity {
  __device__ float operator()(float x) const { return x; }
};

template <class T>
__global__ void arange_elements(T* out, std::int64_t n, double start, double step) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    out[i] = static_cast<T>(start + static_cast<double>(i) * step);
  }
}

}  // namespace

void fill(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& out = inv.outputs[0];
  const double value = inv.params.as<FillParams>().value;
  if (out.size() == 0) return;
  if (value == 0.0) {  // all-zero bytes in every dtype
    NDG_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, static_cast<std::size_t>(out.size()) * dtype_size(out.dtype()),
                                   cuda::stream_of(ec)));
    return;
  }
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "_full", out.size(), &fill_elements<T>, static_cast<T*>(out.data()), out.size(), static_cast<T>(value));
  });
}

void arange(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& out = inv.outputs[0];
  const auto& p = inv.params.as<ArangeParams>();
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "_arange", out.size(), &arange_elements<T>, static_cast<T*>(out.data()), out.size(), p.start, p.step);
  });
}

// cuRAND draws (0, 1], mapped to (low, high] in place, with the same fused multiply-add as the CPU.
// float16 and bfloat16 draw in float32 into scratch memory, are mapped there and rounded once.
void random_uniform(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& out = inv.outputs[0];
  const auto& p = inv.params.as<RandomParams>();
  const std::int64_t n = out.size();
  const bool half = is_half(out.dtype());
  const Workspace staged(ec, half ? static_cast<std::size_t>(n) * sizeof(float) : 0);
  {
    auto [gen, lock] = cuda::device(ec.ctx.device_id()).curand(p.offset, n);
    cuda::generate_uniform(gen, half ? DType::float32 : out.dtype(), half ? staged.data() : out.data(), n);
  }
  if (!half && p.a == 0.0 && p.b == 1.0) return;  // the default range costs one pass
  dispatch_floating(out.dtype(), "_random_uniform", [&](auto tag) {
    using T = decltype(tag);
    using U = ComputeType<T>;
    const functors::Affine<U> affine{static_cast<U>(p.b - p.a), static_cast<U>(p.a)};
    T* data = static_cast<T*>(out.data());
    if constexpr (is_half_v<T>) {
      cuda::launch(ec, "_random_uniform", n, &narrow_elements<T, functors::Affine<U>>, data, staged.as<float>(), n, affine);
    } else {
      const bool packed = cuda::aligned16(data);
      cuda::launch(ec, "_random_uniform", packed ? n / cuda::Pack<T>::size + 1 : n,
                   &cuda::map_elements<T, functors::Affine<T>>, data, data, n, packed, affine);
    }
  });
}

void random_normal(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& out = inv.outputs[0];
  const auto& p = inv.params.as<RandomParams>();
  const std::int64_t n = out.size();
  const bool half = is_half(out.dtype());
  const Workspace staged(ec, half ? static_cast<std::size_t>(n) * sizeof(float) : 0);
  {
    auto [gen, lock] = cuda::device(ec.ctx.device_id()).curand(p.offset, n);
    cuda::generate_normal(gen, half ? DType::float32 : out.dtype(), half ? staged.data() : out.data(), n, p.a, p.b);
  }
  if (!half) return;
  dispatch_floating(out.dtype(), "_random_normal", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_half_v<T>) {
      cuda::launch(ec, "_random_normal", n, &narrow_elements<T, Identity>, static_cast<T*>(out.data()),
                   staged.as<float>(), n, Identity{});
    }
  });
}

}  // namespace mx::op::gpu
