#include "cuda/random.hpp"

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/kernels.hpp"

namespace mx::cuda {

void random_uniform(int device_id, DType dt, void* out, std::int64_t n, double low, double high, std::int64_t offset) {
  Device& dev = device(device_id);
  auto [gen, lock] = dev.curand(offset, n);
  const auto count = static_cast<std::size_t>(n);
  if (dt == DType::float32) NDG_CUDA_CHECK(curandGenerateUniform(gen, static_cast<float*>(out), count));
  else NDG_CUDA_CHECK(curandGenerateUniformDouble(gen, static_cast<double*>(out), count));
  // (0, 1] -> (low, high]; skipped for the default range, so that uniform(0, 1) costs one pass.
  if (low != 0.0 || high != 1.0) affine(dev.stream(), dt, out, n, high - low, low);
  dev.set_last_op("random.uniform");
}

void random_normal(int device_id, DType dt, void* out, std::int64_t n, double loc, double scale, std::int64_t offset) {
  Device& dev = device(device_id);
  auto [gen, lock] = dev.curand(offset, n);
  const auto count = static_cast<std::size_t>(n);
  if (dt == DType::float32) {
    NDG_CUDA_CHECK(curandGenerateNormal(gen, static_cast<float*>(out), count, static_cast<float>(loc),
                                        static_cast<float>(scale)));
  } else {
    NDG_CUDA_CHECK(curandGenerateNormalDouble(gen, static_cast<double*>(out), count, loc, scale));
  }
  dev.set_last_op("random.normal");
}

std::uint64_t random_position(int device_id) { return device(device_id).curand_position(); }

}  // namespace mx::cuda
