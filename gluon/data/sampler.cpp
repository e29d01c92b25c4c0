#include "gluon/data/sampler.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>

#include "gluon/data/shuffle.hpp"
#include "context/error.hpp"
#include "ndarray/ops/random.hpp"

namespace mx::gluon::data {

namespace detail {
namespace {

// Uniform in [0, n) by rejection: std::uniform_int_distribution's algorithm differs between
// standard libraries, and the order of an epoch should not. n < 2^32.
std::uint32_t draw_below(std::mt19937& generator, std::uint32_t n) {
  const std::uint64_t range = std::uint64_t{1} << 32;
  const std::uint64_t accept_below = range - range % n;  // a multiple of n
  std::uint64_t x;
  do {
    x = generator();
  } while (x >= accept_below);
  return static_cast<std::uint32_t>(x % n);
}

}  // namespace

void shuffle(std::vector<std::int64_t>& order, std::uint64_t seed, std::uint64_t epoch) {
  std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                         static_cast<std::uint32_t>(epoch), static_cast<std::uint32_t>(epoch >> 32)};
  std::mt19937 generator(sequence);
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[draw_below(generator, static_cast<std::uint32_t>(i))]);
  }
}

}  // namespace detail

namespace {

void check_length(const char* sampler, std::int64_t length) {
  if (length < 0) throw ValueError(std::string(sampler) + ": length must be >= 0, got " + std::to_string(length));
}

}  // namespace

SequentialSampler::SequentialSampler(std::int64_t length, std::int64_t start) : length_(length), start_(start) {
  check_length("SequentialSampler", length);
}

std::vector<std::int64_t> SequentialSampler::next_epoch() {
  std::vector<std::int64_t> order(static_cast<std::size_t>(length_));
  std::iota(order.begin(), order.end(), start_);
  return order;
}

RandomSampler::RandomSampler(std::int64_t length)
    : length_(length), seed_generation_(mx::random::seed_generation()) {
  check_length("RandomSampler", length);
}

std::vector<std::int64_t> RandomSampler::next_epoch() {
  if (mx::random::seed_generation() != seed_generation_) {  // seeded anew: count epochs from 0 again
    seed_generation_ = mx::random::seed_generation();
    epoch_ = 0;
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(length_));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  detail::shuffle(order, mx::random::current_seed(), epoch_++);
  return order;
}

IntervalSampler::IntervalSampler(std::int64_t length, std::int64_t interval, bool rollover)
    : length_(length), interval_(interval), rollover_(rollover) {
  check_length("IntervalSampler", length);
  if (interval <= 0) {
    throw ValueError("IntervalSampler: interval must be positive, got " + std::to_string(interval));
  }
}

std::vector<std::int64_t> IntervalSampler::next_epoch() {
  std::vector<std::int64_t> order;
  for (std::int64_t first = 0; first < (rollover_ ? std::min(interval_, length_) : std::min<std::int64_t>(1, length_));
       ++first) {
    for (std::int64_t i = first; i < length_; i += interval_) order.push_back(i);
  }
  return order;
}

std::int64_t IntervalSampler::size() const {
  return rollover_ ? length_ : (length_ + interval_ - 1) / interval_;
}

BatchSampler::BatchSampler(std::shared_ptr<Sampler> sampler, std::int64_t batch_size, const std::string& last_batch)
    : sampler_(std::move(sampler)), batch_size_(batch_size), last_batch_(last_batch) {
  if (!sampler_) throw ValueError("BatchSampler: the sampler is null");
  if (batch_size <= 0) {
    throw ValueError("BatchSampler: batch_size must be positive, but it is " + std::to_string(batch_size));
  }
  if (last_batch != "keep" && last_batch != "discard" && last_batch != "rollover") {
    throw ValueError("BatchSampler: last_batch \"" + last_batch +
                     "\" is not one of the valid values \"keep\", \"discard\", \"rollover\"");
  }
}

std::vector<std::vector<std::int64_t>> BatchSampler::next_epoch() {
  // The indices rolled over from the last epoch come first, as MXNet's BatchSampler puts them.
  std::vector<std::int64_t> order = std::exchange(carried_, {});
  const std::vector<std::int64_t> epoch = sampler_->next_epoch();
  order.insert(order.end(), epoch.begin(), epoch.end());
  std::vector<std::vector<std::int64_t>> batches;
  std::size_t i = 0;
  const auto size = static_cast<std::size_t>(batch_size_);
  for (; i + size <= order.size(); i += size) batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i),
                                                                   order.begin() + static_cast<std::ptrdiff_t>(i + size));
  if (i < order.size()) {
    if (last_batch_ == "keep") batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i), order.end());
    else if (last_batch_ == "rollover") carried_.assign(order.begin() + static_cast<std::ptrdiff_t>(i), order.end());
  }
  return batches;
}

std::int64_t BatchSampler::size() const {
  const std::int64_t samples = static_cast<std::int64_t>(carried_.size()) + sampler_->size();
  return last_batch_ == "keep" ? (samples + batch_size_ - 1) / batch_size_ : samples / batch_size_;
}

}  // namespace mx::gluon::data
