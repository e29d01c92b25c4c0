#include "cuda/memory.hpp"

#include <string>

#include "context/device.hpp"
#include "cuda/device.hpp"
#include "cuda/device_guard.hpp"

namespace mx::cuda {
namespace {

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::size_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  std::uint64_t value = 0;
  NDG_CUDA_CHECK(cudaMemPoolGetAttribute(pool, attr, &value));
  return static_cast<std::size_t>(value);
}

}  // namespace

void* device_allocate(int id, std::size_t bytes) {
  Device& dev = device(id);
  DeviceGuard guard(id);
  void* ptr = nullptr;
  cudaError_t status = cudaMallocAsync(&ptr, bytes, dev.stream());
  if (status == cudaErrorMemoryAllocation) {
    // Give cached blocks back and try once more before failing.
    cudaGetLastError();
    device_empty_cache(id);
    status = cudaMallocAsync(&ptr, bytes, dev.stream());
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

void device_free(int id, void* ptr) noexcept {
  // Stream-ordered: the block is reused only by work queued after every use of it.
  cudaFreeAsync(ptr, device(id).stream());
}

MemoryStats device_memory_stats(int id) {
  const cudaMemPool_t pool = device(id).pool();
  return {pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent), pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent)};
}

void device_empty_cache(int id) {
  Device& dev = device(id);
  DeviceGuard guard(id);
  NDG_CUDA_CHECK(cudaStreamSynchronize(dev.stream()));
  NDG_CUDA_CHECK(cudaMemPoolTrimTo(dev.pool(), 0));
}

}  // namespace mx::cuda
