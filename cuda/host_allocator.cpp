// Pinned (page-locked) host memory for large CPU arrays while a GPU is present, so that
// host<->device copies run at the DMA engines' full rate. cudaHostAlloc is slow (it maps pages for
// every device), so freed blocks are cached by power-of-two size class, as PyTorch's
// CachingHostAllocator does. The blocks that stage copies to a device return to the cache only
// once the copy reading them has finished (an event recorded after it).
#include <cuda_runtime.h>

#include <bit>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "context/device.hpp"
#include "cuda/memory.hpp"
#include "ndarray/backend/backend.hpp"

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
    owned_[ptr] = size;
    return ptr;
  }

  bool deallocate(void* ptr, std::size_t) noexcept override {
    std::lock_guard lock(mutex_);
    const auto it = owned_.find(ptr);
    if (it == owned_.end()) return false;
    free_[it->second].push_back(ptr);
    cached_ += it->second;
    return true;
  }

  // A staging block goes back to the cache once `done` has completed (stream-ordered lifetime).
  // A null event: nothing queued reads the block any more.
  void release_after(void* ptr, cudaEvent_t done) {
    std::lock_guard lock(mutex_);
    if (done == nullptr) {
      free_[owned_.at(ptr)].push_back(ptr);
      cached_ += owned_.at(ptr);
      return;
    }
    const auto it = owned_.find(ptr);
    if (it == owned_.end()) {  // not pinned here (cannot happen for a staging block): keep it safe
      cudaEventSynchronize(done);
      cudaEventDestroy(done);
      return;
    }
    pending_.push_back({ptr, done});
    cached_ += it->second;
  }

  std::size_t cached_bytes() const override {
    std::lock_guard lock(mutex_);
    return cached_;
  }

  void empty_cache() override {
    std::lock_guard lock(mutex_);
    for (const Pending& p : pending_) cudaEventSynchronize(p.done);  // the copies that read them
    reclaim_finished();
    for (auto& [size, blocks] : free_) {
      for (void* ptr : blocks) {
        cudaFreeHost(ptr);
        owned_.erase(ptr);
      }
      blocks.clear();
    }
    cached_ = 0;
  }

 private:
  struct Pending {
    void* ptr;
    cudaEvent_t done;
  };

  // Moves the staging blocks whose copies have finished to the free lists. Under mutex_.
  void reclaim_finished() {
    std::size_t kept = 0;
    for (const Pending& p : pending_) {
      const cudaError_t status = cudaEventQuery(p.done);
      if (status == cudaErrorNotReady) {
        pending_[kept++] = p;
        continue;
      }
      if (status != cudaSuccess) cudaGetLastError();  // a failed device: the copy will not run
      cudaEventDestroy(p.done);
      free_[owned_.at(p.ptr)].push_back(p.ptr);
    }
    pending_.resize(kept);
  }

  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> owned_;    // every pinned block -> its size class
  std::map<std::size_t, std::vector<void*>> free_;  // size class -> cached blocks
  std::vector<Pending> pending_;                    // staging blocks still read by a copy
  std::size_t cached_ = 0;                          // bytes free or pending
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

}  // namespace cuda

}  // namespace mx
