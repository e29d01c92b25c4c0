#pragma once
// Note [copy-engine all-reduce]
// The sum of a tensor's copies over the GPUs of one process, moved by the GPUs' copy engines
// instead of NCCL's kernels, so that a sum overlapped with backward takes no SMs from its GEMMs
// while it moves data or waits for the other GPUs (NCCL's blocks hold SMs for both).
//
// The items of a call are one concatenation of elements, cut into one chunk per GPU. Each GPU
// writes its part of every other chunk into scratch memory on that chunk's GPU (peer copies, one
// copy lane per destination, after both GPUs are ready), each GPU adds the copies into its own
// buffers with one kernel, in a fixed order, and then writes its chunk's sum into the other GPUs'
// buffers. Every copy ends with the same values, each chunk summed once. On n GPUs each moves
// 2(n-1)/n of the bytes out, as a ring all-reduce does. Writes over NVLink beat reads here: on 4
// H100s pulling the chunks instead gave 3.62-3.65x over one GPU, these writes 3.67-3.71x.
#include <vector>

#include "ndarray/backend/backend.hpp"

namespace mx::cuda {

// Queues the sum (AllReduceItem, ndarray/backend/backend.hpp) on each device's stream, or, for a slot >= 0,
// on its communication stream after its mark for the slot, and returns true. Returns false, with
// nothing queued, where the copy engines cannot reach (fewer than 2 devices, or a pair of them
// without peer access), for items of several dtypes or of an integer dtype, and on the devices'
// streams below kCopyEngineMinBytes a device, where NCCL's one kernel finishes sooner (beside the
// GPUs' work, waiting without SMs matters more).
bool copy_engine_all_reduce(const std::vector<int>& devices, const std::vector<AllReduceItem>& items, int slot);
inline constexpr std::size_t kCopyEngineMinBytes = std::size_t{1} << 20;

// Whether every pair of these GPUs has peer access, which the copy-engine sums need.
bool copy_engines_reach(const std::vector<int>& devices);

}  // namespace mx::cuda
