#include "gluon/data/data_loader.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <thread>
#include <utility>

#include "gluon/data/shuffle.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/core/threads.hpp"
#include "ndarray/ops/random.hpp"
#include "ndarray/profiler/profiler.hpp"

namespace mx::gluon::data {
namespace {

// Rows indices[0], indices[1], ... of source (N, ...) on cpu(0), stacked into a new (k, ...) array
// on cpu(0) (pinned memory when a GPU is present and it is large enough).
nd::NDArray gather_rows(const nd::NDArray& source, std::span<const std::int64_t> indices) {
  Shape shape = source.shape();
  shape[0] = static_cast<std::int64_t>(indices.size());
  nd::NDArray out(shape, cpu(), source.dtype());
  std::size_t row_bytes = dtype_size(source.dtype());
  for (int axis = 1; axis < shape.ndim(); ++axis) row_bytes *= static_cast<std::size_t>(shape[axis]);
  const nd::NDArray rows = source.contiguous();  // a strided view is read through a copy
  const auto* from = static_cast<const char*>(rows.data());
  auto* to = static_cast<char*>(out.data());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    std::memcpy(to + i * row_bytes, from + static_cast<std::size_t>(indices[i]) * row_bytes, row_bytes);
  }
  return out;
}

ArrayDataset on_cpu(const ArrayDataset& dataset) {
  if (dataset.data().context() == cpu() && dataset.label().context() == cpu()) return dataset;
  return ArrayDataset(dataset.data().as_in_context(cpu()), dataset.label().as_in_context(cpu()));
}

// Threads that run the items of one job at a time: run(count, fn) calls fn(i) for every i in
// [0, count) on the workers and returns when all have run, rethrowing the first exception.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this] { work(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void run(std::int64_t count, const std::function<void(std::int64_t)>& fn) {
    const std::lock_guard one_job(run_mutex_);  // two epochs' threads may ask at once
    std::unique_lock lock(mutex_);
    fn_ = &fn;
    count_ = count;
    next_ = 0;
    done_ = 0;
    error_ = nullptr;
    ++job_;
    wake_.notify_all();
    finished_.wait(lock, [this] { return done_ == count_; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void work() {
    const nd::SingleThreadedOps one_thread;  // the workers are the parallelism
    std::uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || (job_ != seen && next_ < count_); });
      if (stop_) return;
      while (next_ < count_) {
        const std::int64_t i = next_++;
        const auto* fn = fn_;
        lock.unlock();
        std::exception_ptr error;
        try {
          (*fn)(i);
        } catch (...) {
          error = std::current_exception();
        }
        lock.lock();
        if (error && !error_) error_ = error;
        if (++done_ == count_) finished_.notify_all();
      }
      seen = job_;
    }
  }

  std::mutex run_mutex_, mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void(std::int64_t)>* fn_ = nullptr;
  std::int64_t count_ = 0, next_ = 0, done_ = 0;
  std::uint64_t job_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Stacks arrays of one shape and dtype on cpu(0) into (n, shape...); mx::ShapeError /
// mx::DTypeError naming `what`, the samples' positions in the epoch and both shapes otherwise.
nd::NDArray stack(const std::vector<nd::NDArray>& parts, std::span<const std::int64_t> indices, const char* what) {
  const nd::NDArray& first = parts.front();
  std::vector<std::int64_t> dims{static_cast<std::int64_t>(parts.size())};
  dims.insert(dims.end(), first.shape().begin(), first.shape().end());
  nd::NDArray out(Shape(dims), cpu(), first.dtype());
  const std::size_t bytes = static_cast<std::size_t>(first.size()) * dtype_size(first.dtype());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const nd::NDArray& p = parts[i];
    const auto differ = [&](const std::string& why) {
      return std::string("DataLoader: the ") + what + " of sample " + std::to_string(indices[i]) + " " + nd::describe(p) +
             " and of sample " + std::to_string(indices[0]) + " " + nd::describe(first) + " differ in " + why;
    };
    if (p.dtype() != first.dtype()) throw DTypeError(differ("dtype: a batch stacks samples of one dtype"));
    if (p.shape() != first.shape()) {
      throw ShapeError(differ("shape: a batch stacks samples of one shape (resize or crop them in the sample transform)"));
    }
    const nd::NDArray c = p.context() == cpu() ? p.contiguous() : p.as_in_context(cpu()).contiguous();
    std::memcpy(static_cast<char*>(out.data()) + i * bytes, c.data(), bytes);
  }
  return out;
}

// The batches of a Dataset: its samples made on the workers, stacked.
class SampleGatherer {
 public:
  SampleGatherer(std::shared_ptr<const Dataset> dataset, SampleTransform transform, int workers)
      : dataset_(std::move(dataset)), transform_(std::move(transform)),
        pool_(workers > 0 ? std::make_unique<WorkerPool>(workers) : nullptr) {}

  Batch operator()(std::span<const std::int64_t> indices, const SampleKey& epoch) const {
    std::vector<nd::NDArray> data(indices.size()), labels(indices.size());
    const std::function<void(std::int64_t)> make = [&](std::int64_t k) {
      const profiler::Range range("DataLoader::sample");
      SampleKey key = epoch;
      key.index = indices[static_cast<std::size_t>(k)];
      const SampleKeyScope scope({&key, 1});
      Sample s = dataset_->get(key.index);
      data[static_cast<std::size_t>(k)] = transform_ ? transform_(s.data) : s.data;
      labels[static_cast<std::size_t>(k)] = s.label;
    };
    const auto count = static_cast<std::int64_t>(indices.size());
    if (pool_) {
      pool_->run(count, make);
    } else {
      for (std::int64_t k = 0; k < count; ++k) make(k);
    }
    const profiler::Range range("DataLoader::stack");
    nd::NDArray label = stack(labels, indices, "label");
    if (label.ndim() == 2 && label.shape()[1] == 1) label = label.reshape({label.shape()[0]});
    return {stack(data, indices, "data"), label};
  }

 private:
  std::shared_ptr<const Dataset> dataset_;
  SampleTransform transform_;
  std::unique_ptr<WorkerPool> pool_;  // null: the loader's own thread makes the samples
};

}  // namespace

namespace detail {

// The samples of one epoch, batch after batch: batch b is order[bounds[b], bounds[b + 1]).
struct EpochPlan {
  std::vector<std::int64_t> order;
  std::vector<std::int64_t> bounds{0};
  SampleKey key;  // the seed and epoch the samples' keys share
  std::int64_t num_batches() const { return static_cast<std::int64_t>(bounds.size()) - 1; }
  std::span<const std::int64_t> batch(std::int64_t b) const {
    const auto first = static_cast<std::size_t>(bounds[static_cast<std::size_t>(b)]);
    return {order.data() + first, static_cast<std::size_t>(bounds[static_cast<std::size_t>(b) + 1]) - first};
  }
  std::vector<SampleKey> keys(std::int64_t b) const {
    std::vector<SampleKey> k;
    for (const std::int64_t i : batch(b)) {
      k.push_back(key);
      k.back().index = i;
    }
    return k;
  }
};

// What the loop's thread does to each batch it takes (DataLoader::transform_on).
struct DeviceStage {
  std::optional<Context> ctx;
  BatchTransform transform;
};

// Note [one epoch's thread]: the producer thread builds batch after batch and queues them, waiting
// whenever `depth` batches are ready and not taken; the consumer (the range-for) takes them
// in order. The producer waits for room *before* building, so at most depth + 1 batches
// exist besides the ones the loop still holds. An exception in the producer is stored and thrown by
// the consumer once the batches built before it are taken. The destructor sets stop_, wakes the
// producer and joins it: a loop left early finishes at most the batch under way.
class Prefetcher {
 public:
  Prefetcher(std::function<Batch(std::span<const std::int64_t>, const SampleKey&)> gather, EpochPlan plan,
             BatchTransform transform, DeviceStage device, std::size_t depth)
      : gather_(std::move(gather)), plan_(std::move(plan)), transform_(std::move(transform)),
        device_(std::move(device)), depth_(depth), thread_([this] { produce(); }) {}

  ~Prefetcher() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Makes the next batch current and returns true, or returns false at the end of the epoch.
  // Rethrows the producer's exception in place of the batch it could not build.
  bool advance() {
    std::unique_lock lock(mutex_);
    {
      const profiler::Range range("DataLoader::wait");  // the loop waiting for the producer
      changed_.wait(lock, [this] { return !ready_.empty() || produced_all_; });
    }
    if (ready_.empty()) {
      finished_ = true;
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      return false;
    }
    current_ = std::move(ready_.front());
    ready_.pop_front();
    lock.unlock();
    changed_.notify_all();  // room for the producer
    if (device_.ctx) to_device(taken_);
    ++taken_;
    return true;
  }

  Batch& current() { return current_; }
  bool finished() const { return finished_; }

 private:
  void produce() {
    try {
      for (std::int64_t b = 0; b < plan_.num_batches(); ++b) {
        if (!wait_for_room()) break;  // stopped
        Batch batch = build(b);
        {
          std::lock_guard lock(mutex_);
          ready_.push_back(std::move(batch));
        }
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      produced_all_ = true;
    }
    changed_.notify_all();
  }

  // Waits until fewer than depth_ batches are ready; false when asked to stop.
  bool wait_for_room() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return stop_ || ready_.size() < depth_; });
    return !stop_;
  }

  // Batch b: the rows it lists, then the transform.
  Batch build(std::int64_t b) const {
    Batch batch = gather_(plan_.batch(b), plan_.key);
    if (transform_) {
      const profiler::Range range("DataLoader::transform");
      batch.data = apply_transform(transform_, batch.data, b);
    }
    return batch;
  }

  // The batch the loop took (batch b) moved to the device stage's context and transformed there.
  void to_device(std::int64_t b) {
    const profiler::Range range("DataLoader::transform_on");
    current_.data = current_.data.as_in_context(*device_.ctx);
    current_.label = current_.label.as_in_context(*device_.ctx);
    if (device_.transform) current_.data = apply_transform(device_.transform, current_.data, b);
  }

  // transform on batch b's data, under the keys of its samples.
  nd::NDArray apply_transform(const BatchTransform& transform, const nd::NDArray& data, std::int64_t b) const {
    const std::vector<SampleKey> keys = plan_.keys(b);
    const SampleKeyScope scope(keys);
    nd::NDArray out = transform(data);
    if (out.is_none() || out.ndim() == 0 || out.shape()[0] != data.shape()[0]) {
      throw ShapeError("DataLoader: the transform turned batch " + std::to_string(b) + " " +
                       nd::describe(data) + " into " +
                       (out.is_none() ? std::string("a null array") : nd::describe(out)) +
                       "; it must keep the batch axis of " + std::to_string(data.shape()[0]) + " samples");
    }
    return out;
  }

  const std::function<Batch(std::span<const std::int64_t>, const SampleKey&)> gather_;
  const EpochPlan plan_;
  const BatchTransform transform_;
  const DeviceStage device_;
  const std::size_t depth_;

  std::mutex mutex_;
  std::condition_variable changed_;  // a batch was queued or taken, the producer ended, or stop_
  std::deque<Batch> ready_;          // built and not yet taken, at most depth_
  std::exception_ptr error_;         // what stopped the producer
  bool produced_all_ = false;        // the producer has ended (every batch queued, or error_)
  bool stop_ = false;                // the consumer is gone

  Batch current_;          // the batch the loop holds (consumer side only)
  std::int64_t taken_ = 0;  // batches the loop has taken (consumer side only)
  bool finished_ = false;  // advance() found the end (consumer side only)

  std::thread thread_;  // last: it starts once every other member exists
};

}  // namespace detail

DataLoader::DataLoader(ArrayDataset dataset, std::int64_t batch_size, bool shuffle, const std::string& last_batch,
                       BatchTransform transform)
    : num_samples_(dataset.size()),
      gather_([arrays = on_cpu(dataset)](std::span<const std::int64_t> indices, const SampleKey&) {
        return Batch{gather_rows(arrays.data(), indices), gather_rows(arrays.label(), indices)};
      }),
      batch_size_(batch_size), shuffle_(shuffle), last_batch_(LastBatch::keep), transform_(std::move(transform)),
      seed_generation_(mx::random::seed_generation()) {
  check_options(last_batch);
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, std::int64_t batch_size, bool shuffle,
                       const std::string& last_batch, SampleTransform sample_transform, int num_workers,
                       BatchTransform transform)
    : num_samples_(dataset ? dataset->size() : 0), batch_size_(batch_size), shuffle_(shuffle),
      last_batch_(LastBatch::keep), transform_(std::move(transform)), seed_generation_(mx::random::seed_generation()) {
  if (!dataset) throw ValueError("DataLoader: the dataset is null");
  if (num_workers < 0) throw ValueError("DataLoader: num_workers must be >= 0, got " + std::to_string(num_workers));
  check_options(last_batch);
  gather_ = [gatherer = std::make_shared<SampleGatherer>(std::move(dataset), std::move(sample_transform), num_workers)](
                std::span<const std::int64_t> indices, const SampleKey& epoch) { return (*gatherer)(indices, epoch); };
}

DataLoader::DataLoader(ArrayDataset dataset, std::shared_ptr<BatchSamplerBase> batch_sampler, BatchTransform transform)
    : DataLoader(std::move(dataset), 1, false, "keep", std::move(transform)) {
  if (!batch_sampler) throw ValueError("DataLoader: the batch sampler is null");
  batch_sampler_ = std::move(batch_sampler);
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, std::shared_ptr<BatchSamplerBase> batch_sampler,
                       SampleTransform sample_transform, int num_workers, BatchTransform transform)
    : DataLoader(std::move(dataset), 1, false, "keep", std::move(sample_transform), num_workers, std::move(transform)) {
  if (!batch_sampler) throw ValueError("DataLoader: the batch sampler is null");
  batch_sampler_ = std::move(batch_sampler);
}

void DataLoader::check_options(const std::string& last_batch) {
  if (batch_size_ <= 0) {
    throw ValueError("DataLoader: batch_size must be positive, but it is " + std::to_string(batch_size_));
  }
  if (last_batch == "keep") {
    last_batch_ = LastBatch::keep;
  } else if (last_batch == "discard") {
    last_batch_ = LastBatch::discard;
  } else if (last_batch == "rollover") {
    last_batch_ = LastBatch::rollover;
  } else {
    throw ValueError("DataLoader: last_batch \"" + last_batch +
                     "\" is not one of the valid values \"keep\", \"discard\", \"rollover\"");
  }
}

std::int64_t DataLoader::batches_for(std::int64_t samples) const {
  return last_batch_ == LastBatch::keep ? (samples + batch_size_ - 1) / batch_size_ : samples / batch_size_;
}

DataLoader& DataLoader::shard(std::int64_t parts, std::int64_t index) {
  if (batch_sampler_) {
    throw ValueError("DataLoader::shard: this loader's batches come from a batch sampler; give each process a "
                     "sampler of its own part instead");
  }
  if (parts < 1 || index < 0 || index >= parts) {
    throw ValueError("DataLoader::shard: part " + std::to_string(index) + " of " + std::to_string(parts) +
                     " does not exist; parts must be >= 1 and 0 <= index < parts");
  }
  parts_ = parts;
  part_ = index;
  return *this;
}

std::int64_t DataLoader::samples_per_epoch() const { return (num_samples_ + parts_ - 1) / parts_; }

std::int64_t DataLoader::size() const {
  if (batch_sampler_) return batch_sampler_->size();
  return batches_for(static_cast<std::int64_t>(rolled_over_.size()) + samples_per_epoch());
}

DataLoader& DataLoader::transform_on(Context ctx, BatchTransform transform) {
  device_ = ctx;
  device_transform_ = std::move(transform);
  return *this;
}

DataLoader& DataLoader::prefetch(std::int64_t depth) {
  if (depth < 1) throw ValueError("DataLoader::prefetch: the depth must be >= 1, got " + std::to_string(depth));
  prefetch_depth_ = static_cast<std::size_t>(depth);
  return *this;
}

std::uint64_t DataLoader::next_epoch() {
  if (mx::random::seed_generation() != seed_generation_) {  // seeded anew: count epochs from 0 again
    seed_generation_ = mx::random::seed_generation();
    epoch_ = 0;
  }
  return epoch_++;
}

std::vector<std::int64_t> DataLoader::next_sample_order(std::uint64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(num_samples_));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (shuffle_) detail::shuffle(order, mx::random::current_seed(), epoch);
  if (parts_ == 1 || order.empty()) return order;
  // This part: padded with the order's first samples to a multiple of parts, every parts-th.
  const auto n = static_cast<std::size_t>(samples_per_epoch() * parts_);
  order.reserve(n);
  for (std::size_t i = 0; order.size() < n; ++i) order.push_back(order[i]);
  std::vector<std::int64_t> part;
  for (std::size_t i = static_cast<std::size_t>(part_); i < n; i += static_cast<std::size_t>(parts_)) {
    part.push_back(order[i]);
  }
  return part;
}

DataLoader::Iterator DataLoader::begin() {
  detail::EpochPlan plan;
  const std::uint64_t epoch = next_epoch();
  plan.key.seed = mx::random::current_seed();
  plan.key.epoch = epoch;
  const auto start = [&] {
    return Iterator(std::make_shared<detail::Prefetcher>(gather_, std::move(plan), transform_,
                                                         detail::DeviceStage{device_, device_transform_},
                                                         prefetch_depth_));
  };
  if (batch_sampler_) {  // its batches, each index checked against the dataset
    for (const std::vector<std::int64_t>& batch : batch_sampler_->next_epoch()) {
      if (batch.empty()) throw ValueError("DataLoader: the batch sampler gave an empty batch");
      for (const std::int64_t i : batch) {
        if (i < 0 || i >= num_samples_) {
          throw IndexError("DataLoader: the sampler gave index " + std::to_string(i) + " of a dataset of " +
                           std::to_string(num_samples_) + " samples");
        }
      }
      plan.order.insert(plan.order.end(), batch.begin(), batch.end());
      plan.bounds.push_back(static_cast<std::int64_t>(plan.order.size()));
    }
    return start();
  }
  // The samples rolled over from the last epoch come first, as MXNet's BatchSampler puts them.
  plan.order = std::exchange(rolled_over_, {});
  const std::vector<std::int64_t> samples = next_sample_order(epoch);
  plan.order.insert(plan.order.end(), samples.begin(), samples.end());
  const std::int64_t num_batches = batches_for(static_cast<std::int64_t>(plan.order.size()));
  const auto used = std::min(plan.order.size(), static_cast<std::size_t>(num_batches * batch_size_));
  if (last_batch_ == LastBatch::rollover) rolled_over_.assign(plan.order.begin() + used, plan.order.end());
  plan.order.resize(used);
  for (std::int64_t b = 1; b <= num_batches; ++b) {
    plan.bounds.push_back(std::min(b * batch_size_, static_cast<std::int64_t>(used)));
  }
  return start();
}

DataLoader::Iterator::Iterator(std::shared_ptr<detail::Prefetcher> epoch) : epoch_(std::move(epoch)) {
  epoch_->advance();
}

Batch& DataLoader::Iterator::operator*() const { return epoch_->current(); }

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  epoch_->advance();
  return *this;
}

bool operator==(const DataLoader::Iterator& it, std::default_sentinel_t) {
  return !it.epoch_ || it.epoch_->finished();
}

}  // namespace mx::gluon::data
