// Pinned (page-locked) host memory for large CPU arrays while a GPU is present, so that
// host<->device copies run at the DMA engines' full rate. cudaHostAlloc is slow (it maps pages for
// every device), so freed blocks are cached by power-of-two size class, as PyTorch's
// CachingHostAllocator does. The blocks that stage copies to a device return to the cache only
// once the copy reading them has finished (an event recorded after it).
#include <cuda_runtime.h>

#include <atomic>
#include <bit>
#include <map>
#include <mutex>
#include <vector>

#include "context/device.hpp"
#include "cuda/memory.hpp"
#include "ndarray/backend.hpp"

namespace mx {
namespace {

class PinnedHostAllocator final : public HostAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    const std::size_t size = std::bit_ceil(bytes);
    std::lock_guard lock(mutex_);
    reclaim_finished();
    auto& free_list = free_[size];
    if (!free_list.empty()) {
      void* ptr = free_list.back();
      free_list.pop_back();
      cached_ -= size;
      return ptr;
    }
    void* ptr = nullptr;
    if (cudaHostAlloc(&ptr, size, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;  // the CPU backend falls back to pageable memory
    }
    owned_[static_cast<char*>(ptr)] = size;
    return ptr;
  }

  // A block still read by a copy to a device waits for it before it can be handed out again.
  bool deallocate(void* ptr, std::size_t) noexcept override {
    std::lock_guard lock(mutex_);
    const auto it = owned_.find(static_cast<char*>(ptr));
    if (it == owned_.end()) return false;
    std::vector<cudaEvent_t> readers;
    if (const auto r = reads_.find(it->first); r != reads_.end()) {
      readers = std::move(r->second);
      reads_.erase(r);
      reading_ = reads_.size();
    }
    release_locked(it->first, std::move(readers));
    return true;
  }

  // The copy that `done` follows reads the block holding ptr (taking the event): until it has
  // finished, the block is not handed out again and wait_for_device_reads waits for it.
  void mark_read(const void* ptr, cudaEvent_t done) {
    std::lock_guard lock(mutex_);
    char* block = block_holding(ptr);
    if (block == nullptr) {  // not pinned here: the caller checked, so this cannot happen
      cudaEventSynchronize(done);
      cudaEventDestroy(done);
      return;
    }
    reads_[block].push_back(done);
    reading_ = reads_.size();
  }

  void wait_for_device_reads(const void* ptr) override {
    if (reading_.load(std::memory_order_acquire) == 0) return;
    std::vector<cudaEvent_t> readers;
    {
      std::lock_guard lock(mutex_);
      char* block = block_holding(ptr);
      const auto r = block ? reads_.find(block) : reads_.end();
      if (r == reads_.end()) return;
      readers = std::move(r->second);
      reads_.erase(r);
      reading_ = reads_.size();
    }
    for (cudaEvent_t e : readers) {
      cudaEventSynchronize(e);
      cudaEventDestroy(e);
    }
  }

  bool holds(const void* ptr) {
    std::lock_guard lock(mutex_);
    return block_holding(ptr) != nullptr;
  }

  // A staging block goes back to the cache once `done` has completed (a null event: at once).
  void release_after(void* ptr, cudaEvent_t done) {
    std::lock_guard lock(mutex_);
    char* block = block_holding(ptr);
    if (block == nullptr) {
      if (done) {
        cudaEventSynchronize(done);
        cudaEventDestroy(done);
      }
      return;
    }
    release_locked(block, done ? std::vector<cudaEvent_t>{done} : std::vector<cudaEvent_t>{});
  }

  std::size_t cached_bytes() const override {
    std::lock_guard lock(mutex_);
    return cached_;
  }

  void empty_cache() override {
    std::lock_guard lock(mutex_);
    for (const Pending& p : pending_) {
      for (cudaEvent_t e : p.readers) cudaEventSynchronize(e);  // the copies that read them
    }
    reclaim_finished();
    for (auto& [size, blocks] : free_) {
      for (void* ptr : blocks) {
        cudaFreeHost(ptr);
        owned_.erase(static_cast<char*>(ptr));
      }
      blocks.clear();
    }
    cached_ = 0;
  }

 private:
  struct Pending {
    char* block;
    std::vector<cudaEvent_t> readers;  // the copies that still read it
  };

  // The block that holds ptr, or null. Under mutex_.
  char* block_holding(const void* ptr) const {
    const char* p = static_cast<const char*>(ptr);
    auto it = owned_.upper_bound(const_cast<char*>(p));
    if (it == owned_.begin()) return nullptr;
    --it;
    return p < it->first + it->second ? it->first : nullptr;
  }

  // The block back to the cache: free at once, or pending until its readers finish. Under mutex_.
  void release_locked(char* block, std::vector<cudaEvent_t> readers) {
    cached_ += owned_.at(block);
    if (readers.empty()) {
      free_[owned_.at(block)].push_back(block);
      return;
    }
    pending_.push_back({block, std::move(readers)});
  }

  // Moves the pending blocks whose copies have finished to the free lists. Under mutex_.
  void reclaim_finished() {
    std::size_t kept = 0;
    for (Pending& p : pending_) {
      bool done = true;
      for (cudaEvent_t e : p.readers) {
        const cudaError_t status = cudaEventQuery(e);
        if (status == cudaErrorNotReady) done = false;
        else if (status != cudaSuccess) cudaGetLastError();  // a failed device: the copy will not run
      }
      if (!done) {
        pending_[kept++] = std::move(p);
        continue;
      }
      for (cudaEvent_t e : p.readers) cudaEventDestroy(e);
      free_[owned_.at(p.block)].push_back(p.block);
    }
    pending_.resize(kept);
  }

  mutable std::mutex mutex_;
  std::map<char*, std::size_t> owned_;                          // every pinned block -> its size class
  std::map<std::size_t, std::vector<void*>> free_;              // size class -> cached blocks
  std::vector<Pending> pending_;                                // freed blocks still read by a copy
  std::map<char*, std::vector<cudaEvent_t>> reads_;             // live blocks read by copies in flight
  std::atomic<std::size_t> reading_{0};                         // reads_.size(), read without the lock
  std::size_t cached_ = 0;                                      // bytes free or pending
};

PinnedHostAllocator* pinned() {
  if (num_gpus() == 0) return nullptr;
  static auto* allocator = new PinnedHostAllocator();  // never destroyed: outlives every array
  return allocator;
}

}  // namespace

HostAllocator* pinned_host_allocator() { return pinned(); }

namespace cuda {

void* allocate_pinned_staging(std::size_t bytes) {
  PinnedHostAllocator* allocator = pinned();
  return allocator ? allocator->allocate(bytes) : nullptr;
}

void release_pinned_after(void* block, cudaEvent_t done) { pinned()->release_after(block, done); }

bool is_pinned(const void* ptr) {
  PinnedHostAllocator* allocator = pinned();
  return allocator && allocator->holds(ptr);
}

void mark_pinned_read(const void* ptr, cudaEvent_t done) { pinned()->mark_read(ptr, done); }

}  // namespace cuda

}  // namespace mx
