#pragma once
// Samplers, as mxnet.gluon.data's: the order in which a DataLoader visits a dataset's samples, and
// how it groups them into batches.
//
//   namespace gdata = mx::gluon::data;
//   auto order = std::make_shared<gdata::RandomSampler>(dataset.size());
//   auto batches = std::make_shared<gdata::BatchSampler>(order, 64, "rollover");
//   gdata::DataLoader loader(dataset, batches);
//
// A sampler of one's own derives from Sampler (or BatchSampler's base, BatchSamplerBase) and gives
// each epoch's indices. A loader checks every index against its dataset (mx::IndexError naming
// the index and the dataset's size).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mx::gluon::data {

// The sample indices of one epoch after another.
class Sampler {
 public:
  virtual ~Sampler() = default;
  // The next epoch's indices, in order: each call is one epoch.
  virtual std::vector<std::int64_t> next_epoch() = 0;
  // How many indices an epoch gives (Python's len(sampler)).
  virtual std::int64_t size() const = 0;
};

// start, start + 1, ..., start + length - 1. length >= 0, else mx::ValueError.
class SequentialSampler final : public Sampler {
 public:
  explicit SequentialSampler(std::int64_t length, std::int64_t start = 0);
  std::vector<std::int64_t> next_epoch() override;
  std::int64_t size() const override { return length_; }

 private:
  std::int64_t length_, start_;
};

// A permutation of 0 .. length - 1, a new one every epoch, drawn as the DataLoader's shuffle draws:
// from mx::random::seed's seed and the epochs drawn since, so that one seed gives the same epochs.
class RandomSampler final : public Sampler {
 public:
  explicit RandomSampler(std::int64_t length);
  std::vector<std::int64_t> next_epoch() override;
  std::int64_t size() const override { return length_; }

 private:
  std::int64_t length_;
  std::uint64_t seed_generation_;
  std::uint64_t epoch_ = 0;
};

// MXNet's IntervalSampler: 0, interval, 2 interval, ... below length; with rollover, then 1,
// 1 + interval, ..., and so on, so that every index comes once. 0 < interval, else mx::ValueError.
class IntervalSampler final : public Sampler {
 public:
  IntervalSampler(std::int64_t length, std::int64_t interval, bool rollover = true);
  std::vector<std::int64_t> next_epoch() override;
  std::int64_t size() const override;

 private:
  std::int64_t length_, interval_;
  bool rollover_;
};

// Batches of indices, one epoch after another.
class BatchSamplerBase {
 public:
  virtual ~BatchSamplerBase() = default;
  // The next epoch's batches, in order; a batch may not be empty.
  virtual std::vector<std::vector<std::int64_t>> next_epoch() = 0;
  // How many batches the next epoch gives.
  virtual std::int64_t size() const = 0;
};

// MXNet's BatchSampler: a sampler's indices in batches of batch_size; last_batch says what becomes
// of a last batch that is short: "keep" it, "discard" it, or "rollover" its indices to the start of
// the next epoch. batch_size > 0 and a known last_batch, else mx::ValueError.
class BatchSampler final : public BatchSamplerBase {
 public:
  BatchSampler(std::shared_ptr<Sampler> sampler, std::int64_t batch_size, const std::string& last_batch = "keep");
  std::vector<std::vector<std::int64_t>> next_epoch() override;
  std::int64_t size() const override;

 private:
  std::shared_ptr<Sampler> sampler_;
  std::int64_t batch_size_;
  std::string last_batch_;
  std::vector<std::int64_t> carried_;  // rollover: the last epoch's short batch
};

}  // namespace mx::gluon::data
