#pragma once
// The GPU backend's copies through strided views: each queues its kernel on `stream` and checks
// the launch (the CPU ones are in ndarray/cpu/layout.cpp).
#include <cuda_runtime.h>

#include <cstdint>

#include "ndarray/backend.hpp"

namespace mx::cuda {

void gather(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out);
void scatter(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out);
// Every item's bytes copied, in as few launches as the kernel's parameter space allows.
void copy_batch(cudaStream_t stream, const std::vector<CopyItem>& items);

}  // namespace mx::cuda
