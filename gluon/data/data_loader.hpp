#pragma once
// mx::gluon::data::DataLoader: the batches of an ArrayDataset or a Dataset, epoch after epoch, as
// mxnet.gluon.data.DataLoader(dataset, batch_size, shuffle, last_batch=..., num_workers=...) gives
// them:
//
//   namespace gdata = mx::gluon::data;
//   gdata::DataLoader loader(gdata::FashionMNIST(true), 256, true, "keep", gdata::to_tensor);
//   for (auto& [X, y] : loader) {   // X (256, 1, 28, 28) float32, y (256,) int32, both on cpu(0)
//     auto out = net(X.as_in_context(ctx));
//     ...
//   }
//
// Each range-for (each begin()) is one epoch. A background thread prepares its batches, at most
// two (prefetch()) ahead of the loop, in CPU arrays: those of 256 KiB or more sit in pinned memory
// when a GPU is present, so that copying them to the GPU runs at full speed. Leaving the loop early (break, an
// exception) stops and joins that thread; an exception thrown while preparing a batch (by the
// transform, or a corrupt image) is rethrown in the loop, at the batch that failed, with its type.
// A Dataset's samples are made by num_workers threads (decoding and transforming images side by
// side, each worker's ops on its own thread: nd::SingleThreadedOps), then stacked:
//
//   namespace T = gdata::vision::transforms;
//   auto images = std::make_shared<gdata::vision::ImageFolderDataset>("train/");
//   gdata::DataLoader loader(images, 64, true, "keep", T::Compose(T::RandomResizedCrop(224), T::ToTensor()), 8);
//
// Random transforms draw per sample (gluon/data/sample_random.hpp): the same seed gives the same
// epoch whatever num_workers, and the same crops and flips when the batch is transformed on a GPU
// (transform_on). The profiler shows the stages: DataLoader::sample (a worker's get and
// transform), ::stack, ::transform, ::transform_on, and ::wait (the loop waiting for a batch).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gluon/data/dataset.hpp"
#include "gluon/data/sample_random.hpp"
#include "gluon/data/sampler.hpp"

namespace mx::gluon::data {

// One batch: rows of the dataset's arrays, in the order of the epoch.
struct Batch {
  nd::NDArray data;   // (B, ...), after the loader's transform
  nd::NDArray label;  // (B, ...)
};

// Applied to each data batch (B, ...) -> (B, ...) on the loader's thread, e.g. to_tensor, under the
// keys of the batch's samples. It gets and should return cpu(0) arrays; it must keep the batch
// axis (else mx::ShapeError).
using BatchTransform = std::function<nd::NDArray(const nd::NDArray&)>;
// Applied to each sample's data on a worker (MXNet's dataset.transform_first), cpu(0) in and out.
using SampleTransform = std::function<nd::NDArray(const nd::NDArray&)>;

namespace detail {
class Prefetcher;  // one epoch's thread and queue (data_loader.cpp)
}

class DataLoader {
 public:
  class Iterator;

  // batch_size > 0, else mx::ValueError. shuffle draws a new order every epoch from a
  // std::mt19937 seeded with mx::random::current_seed() and the epoch number, which restarts at 0
  // whenever mx::random::seed() is called: the same seed gives the same epochs. last_batch says
  // what becomes of a last batch smaller than batch_size:
  //   "keep"      it is the last, short batch;
  //   "discard"   it is dropped;
  //   "rollover"  its samples start the next epoch (they are carried as soon as an epoch starts,
  //               even if that epoch's loop is left early).
  // Another value is an mx::ValueError. A dataset on a GPU is copied to cpu(0) once, here.
  DataLoader(ArrayDataset dataset, std::int64_t batch_size, bool shuffle = false,
             const std::string& last_batch = "keep", BatchTransform transform = {});
  // A Dataset's batches: num_workers threads (0: the loader's own thread) call dataset->get and
  // sample_transform for the samples of a batch; their data, which must then agree in shape and
  // dtype (else mx::ShapeError / mx::DTypeError naming the samples), are stacked into (B, ...) and
  // their labels into (B,) where each has one value, else (B, k); then transform. The same
  // arguments otherwise; num_workers < 0 is an mx::ValueError.
  DataLoader(std::shared_ptr<const Dataset> dataset, std::int64_t batch_size, bool shuffle = false,
             const std::string& last_batch = "keep", SampleTransform sample_transform = {}, int num_workers = 0,
             BatchTransform transform = {});

  // The batches of a batch sampler (gluon/data/sampler.hpp; MXNet's batch_sampler=), in place of
  // batch_size, shuffle and last_batch: each epoch is one next_epoch() of it, each index checked
  // against the dataset when the epoch starts (mx::IndexError). A null sampler is an mx::ValueError.
  DataLoader(ArrayDataset dataset, std::shared_ptr<BatchSamplerBase> batch_sampler, BatchTransform transform = {});
  DataLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<BatchSamplerBase> batch_sampler,
             SampleTransform sample_transform = {}, int num_workers = 0, BatchTransform transform = {});

  // Data parallelism across processes: from now on each epoch gives only part `index` of
  // `parts` of its (shuffled) sample order, every parts-th sample from index on, after the order
  // is padded with its own first samples to a multiple of parts, so that every part has
  // ceil(N / parts) samples (PyTorch's DistributedSampler). Every process draws the same order
  // (the same seed: mx::random::seed in each), so the parts are disjoint and cover the data set:
  //   loader.shard(mx::dist::world_size(), mx::dist::rank());
  // mx::ValueError unless parts >= 1 and 0 <= index < parts, and for a loader of a batch sampler.
  DataLoader& shard(std::int64_t parts, std::int64_t index);

  // Each batch, once the loop takes it, copied to ctx (data and label) and its data transformed
  // there by transform (e.g. a vision::transforms::Compose: one op per transform over the whole
  // batch, each sample drawing with its own key, as on the workers). The loader's threads keep to
  // cpu(0); the copy and the transform are queued on ctx by the loop's thread. An empty transform
  // only copies. Returns *this.
  DataLoader& transform_on(Context ctx, BatchTransform transform = {});

  // Batches prepared ahead of the one the loop holds (default 2, MXNet's prefetch); depth >= 1,
  // else mx::ValueError.
  DataLoader& prefetch(std::int64_t depth);

  // The number of batches the next epoch gives (Python's len(loader)).
  std::int64_t size() const;
  std::int64_t batch_size() const { return batch_size_; }

  // Starts an epoch: its thread begins preparing batches, and the first one is waited for (its
  // error, if any, is thrown here).
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

 private:
  enum class LastBatch { keep, discard, rollover };

  void check_options(const std::string& last_batch);  // batch_size_ and last_batch: sets last_batch_
  std::int64_t batches_for(std::int64_t samples) const;
  std::uint64_t next_epoch();  // the epoch begin() starts, counted from the last mx::random::seed
  std::vector<std::int64_t> next_sample_order(std::uint64_t epoch);  // 0 .. N-1, shuffled if asked

  std::int64_t num_samples_;
  // The samples at the given indices of the epoch, stacked (the ArrayDataset's rows, or the
  // Dataset's samples made by the workers, each under its key: `epoch` with its index).
  std::function<Batch(std::span<const std::int64_t>, const SampleKey& epoch)> gather_;
  std::int64_t batch_size_;
  bool shuffle_;
  LastBatch last_batch_;
  BatchTransform transform_;
  std::optional<Context> device_;            // transform_on()
  BatchTransform device_transform_;
  std::size_t prefetch_depth_ = 2;
  std::uint64_t seed_generation_;            // mx::random::seed_generation() that epoch_ counts from
  std::uint64_t epoch_ = 0;                  // epochs started since then
  std::vector<std::int64_t> rolled_over_;    // samples carried to the next epoch ("rollover")
  std::int64_t parts_ = 1, part_ = 0;        // shard()
  std::shared_ptr<BatchSamplerBase> batch_sampler_;  // null: batch_size_, shuffle_ and last_batch_
  std::int64_t samples_per_epoch() const;    // this part's
};

// An input iterator over one epoch. Copies share the epoch; the thread stops when the last copy
// goes away. *it stays valid until ++it.
class DataLoader::Iterator {
 public:
  using value_type = Batch;
  using difference_type = std::ptrdiff_t;
  using iterator_concept = std::input_iterator_tag;

  Iterator() = default;  // an iterator at the end
  Batch& operator*() const;
  Batch* operator->() const { return &**this; }
  Iterator& operator++();  // waits for the next batch; rethrows the error that prevented it
  void operator++(int) { ++*this; }
  friend bool operator==(const Iterator& it, std::default_sentinel_t);

 private:
  friend class DataLoader;
  explicit Iterator(std::shared_ptr<detail::Prefetcher> epoch);
  std::shared_ptr<detail::Prefetcher> epoch_;
};

}  // namespace mx::gluon::data
