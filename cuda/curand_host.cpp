// cpu(0)'s generator in a CUDA build: cuRAND's host generator of the same type (XORWOW, default
// ordering) as the devices', so that one seed and call order draw bit-identical uniform values on
// cpu(0) and on every GPU.
#include <curand.h>

#include <mutex>

#include "cuda/check.hpp"
#include "ndarray/host_random.hpp"
#include "ndarray/random.hpp"

namespace mx::detail {
namespace {

std::mutex mutex;
curandGenerator_t generator = nullptr;  // never destroyed: lives as long as the process
std::uint64_t generation = ~std::uint64_t{0};

curandGenerator_t seeded_generator() {
  if (!generator) NDG_CUDA_CHECK(curandCreateGeneratorHost(&generator, CURAND_RNG_PSEUDO_DEFAULT));
  if (generation != mx::random::seed_generation()) {
    NDG_CUDA_CHECK(curandSetPseudoRandomGeneratorSeed(generator, mx::random::current_seed()));
    NDG_CUDA_CHECK(curandSetGeneratorOffset(generator, 0));
    generation = mx::random::seed_generation();
  }
  return generator;
}

}  // namespace

void host_random_uniform(DType dt, void* out, std::int64_t n) {
  std::lock_guard lock(mutex);
  curandGenerator_t gen = seeded_generator();
  if (dt == DType::float32) NDG_CUDA_CHECK(curandGenerateUniform(gen, static_cast<float*>(out), static_cast<std::size_t>(n)));
  else NDG_CUDA_CHECK(curandGenerateUniformDouble(gen, static_cast<double*>(out), static_cast<std::size_t>(n)));
}

void host_random_normal(DType dt, void* out, std::int64_t n, double loc, double scale) {
  std::lock_guard lock(mutex);
  curandGenerator_t gen = seeded_generator();
  const auto count = static_cast<std::size_t>(n);
  if (dt == DType::float32) {
    NDG_CUDA_CHECK(curandGenerateNormal(gen, static_cast<float*>(out), count, static_cast<float>(loc),
                                        static_cast<float>(scale)));
  } else {
    NDG_CUDA_CHECK(curandGenerateNormalDouble(gen, static_cast<double*>(out), count, loc, scale));
  }
}

}  // namespace mx::detail
