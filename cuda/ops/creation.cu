// GPU launches of the creation family (ndarray/ops/creation.cpp and ndarray/ops/random.cpp have the
// ops and the CPU loops): fill, arange, and cuRAND draws on the device's generator.
#include "cuda/curand_stream.hpp"
#include "cuda/device.hpp"
#include "cuda/launch.hpp"
#include "ndarray/functors.hpp"
#include "ndarray/ops/creation_kernels.hpp"

namespace mx::op::gpu {
namespace {

template <class T>
__global__ void fill_elements(T* out, std::int64_t n, T value) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) out[i] = value;
}

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
void random_uniform(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& out = inv.outputs[0];
  const auto& p = inv.params.as<RandomParams>();
  {
    auto [gen, lock] = cuda::device(ec.ctx.device_id()).curand(p.offset, out.size());
    cuda::generate_uniform(gen, out.dtype(), out.data(), out.size());
  }
  if (p.a == 0.0 && p.b == 1.0) return;  // the default range costs one pass
  dispatch_floating(out.dtype(), "_random_uniform", [&](auto tag) {
    using T = decltype(tag);
    T* data = static_cast<T*>(out.data());
    const bool packed = cuda::aligned16(data);
    const std::int64_t n = out.size();
    const functors::Affine<T> affine{static_cast<T>(p.b - p.a), static_cast<T>(p.a)};
    cuda::launch(ec, "_random_uniform", packed ? n / cuda::Pack<T>::size + 1 : n, &cuda::map_elements<T, functors::Affine<T>>,
                 data, data, n, packed, affine);
  });
}

void random_normal(const ExecContext& ec, const Invocation& inv) {
  const nd::NDArray& out = inv.outputs[0];
  const auto& p = inv.params.as<RandomParams>();
  auto [gen, lock] = cuda::device(ec.ctx.device_id()).curand(p.offset, out.size());
  cuda::generate_normal(gen, out.dtype(), out.data(), out.size(), p.a, p.b);
}

}  // namespace mx::op::gpu
