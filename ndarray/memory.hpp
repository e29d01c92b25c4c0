#pragma once
// Memory held on a context, as torch.cuda.memory_allocated / memory_reserved / empty_cache.
// GPU memory comes from the CUDA runtime's stream-ordered pool (cudaMallocAsync), which keeps
// freed blocks cached for reuse.
#include <cstddef>

#include "context/context.hpp"

namespace mx {

std::size_t memory_allocated(Context ctx);  // bytes held by live arrays
std::size_t memory_reserved(Context ctx);   // bytes held by the allocator (live + cached)
void empty_cache(Context ctx);              // returns cached, unused memory to the system

}  // namespace mx
