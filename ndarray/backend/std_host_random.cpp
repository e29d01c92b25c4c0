// cpu(0)'s generator in a CPU-only build: a 64-bit Mersenne Twister from the standard library.
// Its values differ from cuRAND's; a build with CUDA uses cuRAND's host generator instead.
#include <mutex>
#include <cmath>
#include <random>
#include <vector>

#include "ndarray/backend/host_random.hpp"
#include "ndarray/ops/random.hpp"

namespace mx::detail {
namespace {

std::mutex mutex;
std::mt19937_64 engine;
std::uint64_t generation = ~std::uint64_t{0};
std::uint64_t position = 0;  // values drawn since the seed

// The engine, reseeded after mx::random::seed and moved to `offset` when offset >= 0 (one engine
// step per value drawn, so a position is a number of engine steps).
std::mt19937_64& prepare(std::int64_t offset, std::int64_t n) {
  if (generation != mx::random::seed_generation()) {
    engine.seed(mx::random::current_seed());
    generation = mx::random::seed_generation();
    position = 0;
  }
  if (offset >= 0 && static_cast<std::uint64_t>(offset) != position) {
    engine.seed(mx::random::current_seed());
    engine.discard(static_cast<unsigned long long>(offset));
    position = static_cast<std::uint64_t>(offset);
  }
  position += static_cast<std::uint64_t>(n);
  return engine;
}

template <class Fn>
void draw(DType dt, void* out, std::int64_t n, std::int64_t offset, Fn value) {
  std::lock_guard lock(mutex);
  auto& gen = prepare(offset, n);
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(out);
    for (std::int64_t i = 0; i < n; ++i) values[i] = static_cast<T>(value(gen));
  });
}

constexpr double kTwoPi = 6.283185307179586476925286766559;

}  // namespace

void host_random_uniform(DType dt, void* out, std::int64_t n, std::int64_t offset) {
  // (0, 1], as cuRAND draws: 53 random bits scaled, plus one ulp.
  draw(dt, out, n, offset, [](std::mt19937_64& gen) { return (static_cast<double>(gen() >> 11) + 1.0) * 0x1.0p-53; });
}

void host_random_normal(DType dt, void* out, std::int64_t n, double loc, double scale, std::int64_t offset) {
  // Box-Muller over consecutive pairs of steps (n is even), one value per step.
  std::vector<double> u(static_cast<std::size_t>(n));
  host_random_uniform(DType::float64, u.data(), n, offset);
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(out);
    for (std::int64_t i = 0; i + 1 < n; i += 2) {
      const double r = std::sqrt(-2.0 * std::log(u[static_cast<std::size_t>(i)]));
      const double theta = kTwoPi * u[static_cast<std::size_t>(i + 1)];
      values[i] = static_cast<T>(loc + scale * r * std::cos(theta));
      values[i + 1] = static_cast<T>(loc + scale * r * std::sin(theta));
    }
  });
}

std::uint64_t host_random_position() {
  std::lock_guard lock(mutex);
  prepare(-1, 0);
  return position;
}

void host_random_set_position(std::uint64_t to) {
  std::lock_guard lock(mutex);
  prepare(static_cast<std::int64_t>(to), 0);
}

}  // namespace mx::detail
