#pragma once
// Device memory from the CUDA runtime's stream-ordered pool (cudaMallocAsync on the device's
// stream). Freed blocks stay cached in the pool (release threshold: unlimited) until
// empty_cache. Internal to cuda/.
#include <cstddef>

#include "ndarray/backend.hpp"

namespace mx::cuda {

// Throws mx::OutOfMemory naming the context, the MiB requested, in use, cached, free and total.
void* device_allocate(int id, std::size_t bytes);
void device_free(int id, void* ptr) noexcept;
MemoryStats device_memory_stats(int id);
void device_empty_cache(int id);

}  // namespace mx::cuda
