#pragma once
// Device memory from the CUDA runtime's stream-ordered pool (cudaMallocAsync on the device's
// stream), with small blocks (up to 1 MiB) cached on the host side per size. Freed blocks stay
// cached (in the pool, release threshold unlimited, or in the block cache) until empty_cache.
// Internal to cuda/.
#include <cuda_runtime.h>

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "ndarray/backend/backend.hpp"

namespace mx::cuda {

// Throws mx::OutOfMemory naming the context, the MiB requested, in use, cached, free and total.
void* device_allocate(int id, std::size_t bytes);
void device_free(int id, void* ptr, std::size_t bytes) noexcept;  // bytes as allocated
MemoryStats device_memory_stats(int id);
void device_empty_cache(int id);
// A block for the destination of a copy from the host, allocated in gpu(id)'s copy stream order
// (so that the copy need not wait for the device's queued work); freed with device_free, once
// the device's stream has waited for the copy.
void* device_allocate_for_upload(int id, std::size_t bytes);

// Pinned host blocks that stage copies to a device (taken from the pinned allocator's cache),
// nullptr when pinned memory cannot be had. A staging block returns to the cache once `done`
// (recorded after the copy that reads it) has completed: release_pinned_after takes the event
// and destroys it then.
void* allocate_pinned_staging(std::size_t bytes);
void release_pinned_after(void* block, cudaEvent_t done);

// Memory that a CUDA graph keeps (PyTorch's private graph pool): while a CaptureMemory is
// installed on a thread, that thread's allocations on its device come from it, and blocks freed
// there return to it. A captured graph replays its kernels on these addresses, so the blocks stay
// reserved until the CaptureMemory is destroyed; blocks freed during the capture serve the later
// allocations of the same capture (its kernels run in stream order). Allocated with cudaMalloc,
// which a relaxed-mode capture allows.
class CaptureMemory {
 public:
  explicit CaptureMemory(int id) : id_(id) {}
  ~CaptureMemory();
  CaptureMemory(const CaptureMemory&) = delete;
  CaptureMemory& operator=(const CaptureMemory&) = delete;
  int device() const { return id_; }
  void* allocate(std::size_t bytes);
  bool free(void* ptr);  // false if ptr is not one of its blocks

 private:
  int id_;
  std::unordered_map<void*, std::size_t> blocks_;  // every block, by address, with its size
  std::vector<std::pair<std::size_t, void*>> free_;  // blocks not in use
  std::unordered_map<void*, bool> in_use_;
};

// Installs `memory` on the calling thread for its lifetime (the previous one comes back after).
class CaptureMemoryScope {
 public:
  explicit CaptureMemoryScope(CaptureMemory* memory);
  ~CaptureMemoryScope();
  CaptureMemoryScope(const CaptureMemoryScope&) = delete;
  CaptureMemoryScope& operator=(const CaptureMemoryScope&) = delete;

 private:
  CaptureMemory* previous_;
};

}  // namespace mx::cuda
