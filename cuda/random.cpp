#include "cuda/random.hpp"

#include "cuda/device.hpp"
#include "cuda/kernels.hpp"

namespace mx::cuda {

void random_uniform(int device_id, DType dt, void* out, std::int64_t n, double low, double high, std::int64_t offset) {
  Device& dev = device(device_id);
  auto [gen, lock] = dev.curand(offset, n);
  generate_uniform(gen, dt, out, n);
  // (0, 1] -> (low, high]; skipped for the default range, so that uniform(0, 1) costs one pass.
  if (low != 0.0 || high != 1.0) affine(dev.stream(), dt, out, n, high - low, low);
}

void random_normal(int device_id, DType dt, void* out, std::int64_t n, double loc, double scale, std::int64_t offset) {
  Device& dev = device(device_id);
  auto [gen, lock] = dev.curand(offset, n);
  generate_normal(gen, dt, out, n, loc, scale);
}

std::uint64_t random_position(int device_id) { return device(device_id).curand_position(); }

}  // namespace mx::cuda
