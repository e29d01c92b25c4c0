#include "cuda/curand_stream.hpp"

#include "cuda/check.hpp"
#include "ndarray/ops/random.hpp"

namespace mx::cuda {

void CurandStream::follow_seed() {
  if (!generator_) {
    // Philox4x32-10 with the default ordering on host and device alike: the host generator
    // reproduces the device one value for value. Counter-based, so moving to an offset costs
    // nothing (XORWOW re-runs its state set-up) and it generates at memory speed.
    if (host_) NDG_CUDA_CHECK(curandCreateGeneratorHost(&generator_, kGenerator));
    else NDG_CUDA_CHECK(curandCreateGenerator(&generator_, kGenerator));
    if (stream_) NDG_CUDA_CHECK(curandSetStream(generator_, stream_));
    if (generation_ == mx::random::seed_generation()) {
      // Made again after release(): it goes on from where the released one was.
      NDG_CUDA_CHECK(curandSetPseudoRandomGeneratorSeed(generator_, mx::random::current_seed()));
      NDG_CUDA_CHECK(curandSetGeneratorOffset(generator_, position_));
    }
  }
  if (generation_ != mx::random::seed_generation()) {
    NDG_CUDA_CHECK(curandSetPseudoRandomGeneratorSeed(generator_, mx::random::current_seed()));
    NDG_CUDA_CHECK(curandSetGeneratorOffset(generator_, 0));
    generation_ = mx::random::seed_generation();
    position_ = 0;
  }
}

void CurandStream::release() noexcept {
  if (generator_) curandDestroyGenerator(generator_);
  generator_ = nullptr;
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

void generate_uniform(curandGenerator_t gen, DType dt, void* out, std::int64_t n) {
  const auto count = static_cast<std::size_t>(n);
  if (dt == DType::float32) NDG_CUDA_CHECK(curandGenerateUniform(gen, static_cast<float*>(out), count));
  else NDG_CUDA_CHECK(curandGenerateUniformDouble(gen, static_cast<double*>(out), count));
}

void generate_normal(curandGenerator_t gen, DType dt, void* out, std::int64_t n, double loc, double scale) {
  const auto count = static_cast<std::size_t>(n);
  if (dt == DType::float32) {
    NDG_CUDA_CHECK(curandGenerateNormal(gen, static_cast<float*>(out), count, static_cast<float>(loc),
                                        static_cast<float>(scale)));
  } else {
    NDG_CUDA_CHECK(curandGenerateNormalDouble(gen, static_cast<double*>(out), count, loc, scale));
  }
}

std::uint64_t CurandStream::position() {
  follow_seed();
  return position_;
}

}  // namespace mx::cuda
