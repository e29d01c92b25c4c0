// cpu(0)'s generator in a CPU-only build: a 64-bit Mersenne Twister from the standard library.
// Its values differ from cuRAND's; a build with CUDA uses cuRAND's host generator instead.
#include <mutex>
#include <random>

#include "ndarray/host_random.hpp"
#include "ndarray/random.hpp"

namespace mx::detail {
namespace {

std::mutex mutex;
std::mt19937_64 engine;
std::uint64_t generation = ~std::uint64_t{0};

std::mt19937_64& seeded_engine() {
  if (generation != mx::random::seed_generation()) {
    engine.seed(mx::random::current_seed());
    generation = mx::random::seed_generation();
  }
  return engine;
}

template <class Dist>
void draw(DType dt, void* out, std::int64_t n, Dist dist) {
  std::lock_guard lock(mutex);
  auto& gen = seeded_engine();
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(out);
    for (std::int64_t i = 0; i < n; ++i) values[i] = static_cast<T>(dist(gen));
  });
}

}  // namespace

void host_random_uniform(DType dt, void* out, std::int64_t n) {
  // (0, 1], as cuRAND draws: 1 - [0, 1).
  draw(dt, out, n, [](std::mt19937_64& gen) { return 1.0 - std::uniform_real_distribution<double>(0, 1)(gen); });
}

void host_random_normal(DType dt, void* out, std::int64_t n, double loc, double scale) {
  std::normal_distribution<double> normal(loc, scale);
  draw(dt, out, n, [&](std::mt19937_64& gen) { return normal(gen); });
}

}  // namespace mx::detail
