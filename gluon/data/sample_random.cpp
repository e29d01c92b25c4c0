#include "gluon/data/sample_random.hpp"

#include <cmath>
#include <mutex>
#include <numbers>

#include "ndarray/ops/random.hpp"

namespace mx::gluon::data {
namespace {

// SplitMix64's output function (Steele, Lea and Flood 2014): a bijective 64-bit mix.
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // SplitMix64's increment

thread_local std::span<const SampleKey> t_scope;

}  // namespace

SampleKey sub_key(const SampleKey& key, std::uint64_t part) {
  SampleKey k = key;
  k.stream = mix(key.stream + kGolden * (part + 1));
  return k;
}

SampleRng::SampleRng(const SampleKey& key)
    : state_(mix(mix(mix(mix(key.seed) ^ key.epoch) ^ static_cast<std::uint64_t>(key.index)) ^ key.stream)) {}

std::uint64_t SampleRng::next() { return mix(state_ += kGolden); }

double SampleRng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double SampleRng::uniform(double low, double high) { return low + (high - low) * uniform(); }

std::int64_t SampleRng::integer(std::int64_t low, std::int64_t high) {
  if (high <= low) return low;
  const auto span = static_cast<std::uint64_t>(high - low) + 1;
  // Lemire's multiply-shift; the bias for spans of image sizes is below 2^-40.
  return low + static_cast<std::int64_t>(static_cast<unsigned __int128>(next()) * span >> 64);
}

double SampleRng::normal(double mean, double stddev) {
  // Box-Muller: u1 in (0, 1] keeps the log finite.
  const double u1 = 1.0 - uniform(), u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

bool SampleRng::bernoulli(double p) { return uniform() < p; }

SampleKeyScope::SampleKeyScope(std::span<const SampleKey> keys) : previous_(t_scope) { t_scope = keys; }

SampleKeyScope::~SampleKeyScope() { t_scope = previous_; }

std::vector<SampleKey> sample_keys(std::int64_t n) {
  if (static_cast<std::int64_t>(t_scope.size()) == n) return {t_scope.begin(), t_scope.end()};
  static std::mutex mutex;
  static std::uint64_t generation = 0, calls = 0;
  std::uint64_t call;
  {
    const std::lock_guard lock(mutex);
    if (generation != mx::random::seed_generation()) {
      generation = mx::random::seed_generation();
      calls = 0;
    }
    call = calls++;
  }
  std::vector<SampleKey> keys(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    keys[static_cast<std::size_t>(i)] = {mx::random::current_seed(), (std::uint64_t{1} << 63) | call, i, 0};
  }
  return keys;
}

}  // namespace mx::gluon::data
