#pragma once
// Memory held on a context, as torch.cuda.memory_allocated / memory_reserved / empty_cache.
// GPU memory comes from the CUDA runtime's stream-ordered pool (cudaMallocAsync), which keeps
// freed blocks cached for reuse.
#include <cstddef>
#include <cstdint>

#include "context/context.hpp"

namespace mx {

std::size_t memory_allocated(Context ctx);  // bytes held by live arrays
std::size_t memory_reserved(Context ctx);   // bytes held by the allocator (live + cached)
void empty_cache(Context ctx);              // returns cached, unused memory to the system

// empty_cache on every context, the GPUs' random-generator state freed (made again, at the same
// position, by the next draw) and the NCCL communicators of nd::all_reduce destroyed (made again
// by the next one). The end of a process that used a GPU does this too, so that a
// leak checker (compute-sanitizer --leak-check full) finds allocated only what live arrays hold;
// a program may call it itself before such a check. Arrays are untouched.
void release_cached_resources();

}  // namespace mx

// Fault injection, for tests of what a failed allocation in the middle of work leaves behind.
namespace mx::testing {

// Makes the nth array allocation from now (1: the next one), on any context, throw mx::OutOfMemory
// as an exhausted pool does; once, then allocations succeed again. 0 cancels a failure not yet hit.
void fail_nth_allocation(std::int64_t nth);
// Array allocations made so far in this process, on every context (to count those of a step).
std::int64_t allocation_count();

}  // namespace mx::testing
