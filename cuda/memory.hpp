#pragma once
// Device memory from the CUDA runtime's stream-ordered pool (cudaMallocAsync on the device's
// stream), with small blocks (up to 1 MiB) cached on the host side per size. Freed blocks stay
// cached (in the pool, release threshold unlimited, or in the block cache) until empty_cache.
// Internal to cuda/.
#include <cstddef>

#include "ndarray/backend.hpp"

namespace mx::cuda {

// Throws mx::OutOfMemory naming the context, the MiB requested, in use, cached, free and total.
void* device_allocate(int id, std::size_t bytes);
void device_free(int id, void* ptr, std::size_t bytes) noexcept;  // bytes as allocated
MemoryStats device_memory_stats(int id);
void device_empty_cache(int id);

}  // namespace mx::cuda
