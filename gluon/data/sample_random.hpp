#pragma once
// The random draws of data augmentation, per sample.
//
// Note [per-sample random draws]: a random transform draws each sample's parameters (a crop box,
// a flip, a colour factor) from a generator keyed by the sample, not from a shared stream: the
// seed in force, the loader's epoch, the sample's index in its dataset, and the transform's place
// in its Compose. So an epoch's augmentations are the same whichever worker thread makes a sample
// and in whichever order, on cpu(0) one image at a time or on a GPU a batch at a time, and the
// same seed gives the same epochs. The DataLoader sets the keys of the samples it is transforming
// on the thread that transforms them (SampleKeyScope); a transform called outside a loader draws
// fresh keys, numbered from the last mx::random::seed, so that such calls are reproducible too.
#include <cstdint>
#include <span>
#include <vector>

namespace mx::gluon::data {

struct SampleKey {
  std::uint64_t seed = 0;    // mx::random::current_seed() when the epoch began
  std::uint64_t epoch = 0;   // the loader's epoch (calls outside a loader: their own count)
  std::int64_t index = 0;    // the sample's index in its dataset
  std::uint64_t stream = 0;  // which transform draws (Compose mixes in each step's place)
};

// The key a sub-transform draws with: `key` with `part` mixed into its stream.
SampleKey sub_key(const SampleKey& key, std::uint64_t part);

// A sample's generator: SplitMix64 from a hash of its key (a counter-based generator: cheap to make
// per sample, and its draws depend on the key alone).
class SampleRng {
 public:
  explicit SampleRng(const SampleKey& key);
  std::uint64_t next();
  double uniform();                                         // [0, 1)
  double uniform(double low, double high);                  // [low, high)
  std::int64_t integer(std::int64_t low, std::int64_t high);  // [low, high], uniform
  double normal(double mean, double stddev);
  bool bernoulli(double p);                                 // true with probability p

 private:
  std::uint64_t state_;
};

// The keys of the samples the calling thread is transforming, for the scope's lifetime (set by the
// DataLoader around its sample and batch transforms; scopes nest, the innermost wins).
class SampleKeyScope {
 public:
  explicit SampleKeyScope(std::span<const SampleKey> keys);
  ~SampleKeyScope();
  SampleKeyScope(const SampleKeyScope&) = delete;
  SampleKeyScope& operator=(const SampleKeyScope&) = delete;

 private:
  std::span<const SampleKey> previous_;
};

// The keys of n samples: the innermost scope's when it holds n keys, else n fresh keys of the next
// call outside a loader (call c since the last mx::random::seed gets epoch 2^63 + c, indices
// 0 .. n-1).
std::vector<SampleKey> sample_keys(std::int64_t n);

}  // namespace mx::gluon::data
