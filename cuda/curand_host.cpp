// cpu(0)'s generator in a CUDA build: cuRAND's host generator of the same type (Philox, default
// ordering) as the devices', so that one seed and call order draw bit-identical uniform values on
// cpu(0) and on every GPU.
#include <mutex>

#include "cuda/check.hpp"
#include "cuda/curand_stream.hpp"
#include "ndarray/backend/host_random.hpp"

namespace mx::detail {
namespace {

std::mutex mutex;

cuda::CurandStream& host_stream() {
  static auto* stream = new cuda::CurandStream(true);  // never destroyed, as the device ones
  return *stream;
}

}  // namespace

void host_random_uniform(DType dt, void* out, std::int64_t n, std::int64_t offset) {
  std::lock_guard lock(mutex);
  cuda::generate_uniform(host_stream().prepare(offset, n), dt, out, n);
}

void host_random_normal(DType dt, void* out, std::int64_t n, double loc, double scale, std::int64_t offset) {
  std::lock_guard lock(mutex);
  cuda::generate_normal(host_stream().prepare(offset, n), dt, out, n, loc, scale);
}

std::uint64_t host_random_position() {
  std::lock_guard lock(mutex);
  return host_stream().position();
}

void host_random_set_position(std::uint64_t position) {
  std::lock_guard lock(mutex);
  host_stream().prepare(static_cast<std::int64_t>(position), 0);
}

}  // namespace mx::detail
