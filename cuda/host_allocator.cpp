// Pinned (page-locked) host memory for large CPU arrays while a GPU is present, so that
// host<->device copies run at the DMA engines' full rate. cudaHostAlloc is slow (it maps pages for
// every device), so freed blocks are cached by power-of-two size class, as PyTorch's
// CachingHostAllocator does.
#include <cuda_runtime.h>

#include <bit>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "context/device.hpp"
#include "ndarray/backend.hpp"

namespace mx {
namespace {

class PinnedHostAllocator final : public HostAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    const std::size_t size = std::bit_ceil(bytes);
    std::lock_guard lock(mutex_);
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

  std::size_t cached_bytes() const override {
    std::lock_guard lock(mutex_);
    return cached_;
  }

  void empty_cache() override {
    std::lock_guard lock(mutex_);
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
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> owned_;    // every pinned block -> its size class
  std::map<std::size_t, std::vector<void*>> free_;  // size class -> cached blocks
  std::size_t cached_ = 0;
};

}  // namespace

HostAllocator* pinned_host_allocator() {
  if (num_gpus() == 0) return nullptr;
  static auto* allocator = new PinnedHostAllocator();  // never destroyed: outlives every array
  return allocator;
}

}  // namespace mx
