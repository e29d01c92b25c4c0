#include "cuda/memory.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "context/device.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"
#include "context/fast_tls.hpp"

namespace mx::cuda {
namespace {

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::size_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  std::uint64_t value = 0;
  NDG_CUDA_CHECK(cudaMemPoolGetAttribute(pool, attr, &value));
  return static_cast<std::size_t>(value);
}

// A host-side cache of small blocks in front of the stream-ordered pool, as c10's caching
// allocator: cudaMallocAsync + cudaFreeAsync cost microseconds of host time per op, a free list a
// few nanoseconds. Every op of a device runs on its one stream, so a block freed here may serve
// the next allocation at once: the work queued after it is ordered after every earlier use.
// (Peer copies and NCCL order themselves against the device's stream with events.)
constexpr std::size_t kGranule = 512;                  // small sizes are rounded up to this
constexpr std::size_t kMaxCached = std::size_t{1} << 20;  // larger blocks go straight to the pool

struct BlockCache {
  std::mutex mutex;
  std::vector<std::vector<void*>> free;  // [size / kGranule - 1]: free blocks of that size
  std::atomic<std::size_t> live{0};      // bytes of blocks handed out
  std::atomic<bool> used{false};         // anything allocated on this device yet
  BlockCache() : free(kMaxCached / kGranule) {}
};

BlockCache& cache(int id) {
  static std::vector<std::unique_ptr<BlockCache>>* caches = [] {
    auto* all = new std::vector<std::unique_ptr<BlockCache>>;  // never destroyed (see device.hpp)
    for (int i = 0; i < num_gpus(); ++i) all->push_back(std::make_unique<BlockCache>());
    return all;
  }();
  return *(*caches)[static_cast<std::size_t>(id)];
}

// A block handed out: counted as live, and the device marked used (device_empty_cache skips others).
void count_allocation(BlockCache& c, std::size_t size) {
  c.live += size;
  if (!c.used.load(std::memory_order_relaxed)) c.used.store(true);
}

std::size_t rounded(std::size_t bytes) {
  return bytes <= kMaxCached ? (bytes + kGranule - 1) / kGranule * kGranule : bytes;
}

// Gives every cached block back to the pool (stream-ordered).
void release_cached(int id) {
  BlockCache& c = cache(id);
  const cudaStream_t stream = device(id).stream();
  std::lock_guard lock(c.mutex);
  for (auto& blocks : c.free) {
    for (void* p : blocks) cudaFreeAsync(p, stream);
    blocks.clear();
  }
}

// From the pool, in the order of gpu(id)'s stream (or its copy stream).
void* pool_allocate(int id, std::size_t bytes, bool for_copy = false) {
  Device& dev = device(id);
  DeviceGuard guard(id);
  const cudaStream_t stream = for_copy ? dev.copy_stream() : dev.stream();
  void* ptr = nullptr;
  cudaError_t status = cudaMallocAsync(&ptr, bytes, stream);
  if (status == cudaErrorMemoryAllocation) {
    // Give cached blocks back and try once more before failing.
    cudaGetLastError();
    device_empty_cache(id);  // the cached blocks too
    status = cudaMallocAsync(&ptr, bytes, stream);
  }
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    const MemoryStats stats = device_memory_stats(id);
    const MemoryInfo info = gpu_memory_info(id);
    throw OutOfMemory("gpu(" + std::to_string(id) + "): out of memory allocating " + mib(bytes) +
                      " (in use by arrays: " + mib(stats.allocated) + ", cached: " +
                      mib(stats.reserved - stats.allocated) + ", device free: " + mib(info.free) + " of " +
                      mib(info.total) + "). Free arrays you no longer need, or use a smaller batch");
  }
  NDG_CUDA_CHECK(status);
  return ptr;
}

NDG_FAST_TLS thread_local CaptureMemory* capture_memory = nullptr;

}  // namespace

CaptureMemory::~CaptureMemory() {
  DeviceGuard guard(id_);
  cudaStreamSynchronize(cuda::device(id_).stream());  // a launch may still be using the blocks
  for (const auto& [ptr, size] : blocks_) {
    // A block still in use escaped the capture (an array made during it that outlived it): it is
    // left allocated rather than handed to two owners.
    if (!in_use_[ptr]) cudaFree(ptr);
  }
}

void* CaptureMemory::allocate(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  // Best fit among the free blocks.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->first >= size && (best == free_.end() || it->first < best->first)) best = it;
  }
  void* ptr = nullptr;
  if (best != free_.end()) {
    ptr = best->second;
    free_.erase(best);
  } else {
    DeviceGuard guard(id_);
    const cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory("gpu(" + std::to_string(id_) + "): out of memory allocating " + mib(size) +
                        " for a captured graph");
    }
    NDG_CUDA_CHECK(status);
    blocks_[ptr] = size;
  }
  in_use_[ptr] = true;
  return ptr;
}

bool CaptureMemory::free(void* ptr) {
  const auto it = blocks_.find(ptr);
  if (it == blocks_.end()) return false;
  in_use_[ptr] = false;
  free_.emplace_back(it->second, ptr);
  return true;
}

CaptureMemoryScope::CaptureMemoryScope(CaptureMemory* memory) : previous_(capture_memory) { capture_memory = memory; }
CaptureMemoryScope::~CaptureMemoryScope() { capture_memory = previous_; }

void* device_allocate(int id, std::size_t bytes) {
  if (capture_memory && capture_memory->device() == id) return capture_memory->allocate(bytes);
  BlockCache& c = cache(id);
  const std::size_t size = rounded(bytes);
  void* ptr = nullptr;
  if (size <= kMaxCached) {
    std::lock_guard lock(c.mutex);
    auto& blocks = c.free[size / kGranule - 1];
    if (!blocks.empty()) {
      ptr = blocks.back();
      blocks.pop_back();
    }
  }
  if (!ptr) ptr = pool_allocate(id, size);
  count_allocation(c, size);
  return ptr;
}

void* device_allocate_for_upload(int id, std::size_t bytes) {
  if (capture_memory && capture_memory->device() == id) return capture_memory->allocate(bytes);
  BlockCache& c = cache(id);
  const std::size_t size = rounded(bytes);
  // Not from the block cache: its blocks are free in the device stream's order only.
  void* ptr = pool_allocate(id, size, true);
  count_allocation(c, size);
  return ptr;
}

void device_free(int id, void* ptr, std::size_t bytes) noexcept {
  if (capture_memory && capture_memory->device() == id) {
    try {
      if (capture_memory->free(ptr)) return;
    } catch (...) {  // no memory for the free list: the block stays the capture's, unused
      return;
    }
  }
  BlockCache& c = cache(id);
  const std::size_t size = rounded(bytes);
  c.live -= size;
  if (size <= kMaxCached) {
    try {
      std::lock_guard lock(c.mutex);
      c.free[size / kGranule - 1].push_back(ptr);
      return;
    } catch (...) {  // no memory for the free list: give the block back instead
    }
  }
  // Stream-ordered: the pool reuses the block only for work queued after every use of it.
  cudaFreeAsync(ptr, device(id).stream());
}

MemoryStats device_memory_stats(int id) {
  // In use: the blocks handed out; reserved: all the pool holds, the cached blocks included.
  return {cache(id).live.load(), pool_attribute(device(id).pool(), cudaMemPoolAttrReservedMemCurrent)};
}

void device_empty_cache(int id) {
  if (!cache(id).used.load()) return;  // nothing to give back, and no device state to make
  // After mx::dist's communicator failed, the stream may hold a collective that never ends.
  if (!world_failure(id).empty()) return;
  release_cached(id);
  Device& dev = device(id);
  DeviceGuard guard(id);
  NDG_CUDA_CHECK(cudaStreamSynchronize(dev.stream()));
  NDG_CUDA_CHECK(cudaMemPoolTrimTo(dev.pool(), 0));
}

}  // namespace mx::cuda
