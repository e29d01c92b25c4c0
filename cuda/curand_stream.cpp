#include "cuda/curand_stream.hpp"

#include "cuda/check.hpp"
#include "ndarray/random.hpp"

namespace mx::cuda {

void CurandStream::follow_seed() {
  if (!generator_) {
    // XORWOW with the default ordering on host and device alike: the host generator reproduces
    // the device one value for value.
    if (host_) NDG_CUDA_CHECK(curandCreateGeneratorHost(&generator_, CURAND_RNG_PSEUDO_DEFAULT));
    else NDG_CUDA_CHECK(curandCreateGenerator(&generator_, CURAND_RNG_PSEUDO_DEFAULT));
    if (stream_) NDG_CUDA_CHECK(curandSetStream(generator_, stream_));
  }
  if (generation_ != mx::random::seed_generation()) {
    NDG_CUDA_CHECK(curandSetPseudoRandomGeneratorSeed(generator_, mx::random::current_seed()));
    NDG_CUDA_CHECK(curandSetGeneratorOffset(generator_, 0));
    generation_ = mx::random::seed_generation();
    position_ = 0;
  }
}

curandGenerator_t CurandStream::prepare(std::int64_t offset, std::int64_t n) {
  follow_seed();
  if (offset >= 0) {
    // Set even when equal: a continued sequence and a skip-ahead need not agree, and aligned
    // draws must be the same on every context.
    NDG_CUDA_CHECK(curandSetGeneratorOffset(generator_, static_cast<unsigned long long>(offset)));
    position_ = static_cast<std::uint64_t>(offset);
  }
  position_ += static_cast<std::uint64_t>(n);
  return generator_;
}

std::uint64_t CurandStream::position() {
  follow_seed();
  return position_;
}

}  // namespace mx::cuda
