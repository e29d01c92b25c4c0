#pragma once
// The GPU backend's copies through strided views: each queues its kernel on `stream` and checks
// the launch (the CPU ones are in ndarray/backend/cpu_layout.cpp).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ndarray/backend/backend.hpp"

namespace mx::cuda {

void gather(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out);
void scatter(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out);
// Every item's bytes copied, in as few launches as the kernel's parameter space allows.
void copy_batch(cudaStream_t stream, const std::vector<CopyItem>& items);

// copy_batch's kernel, a byte a thread, as a CUDA graph kernel node's parameters, for small copies
// in a captured graph (cuda/graph.cpp), where a kernel starts sooner than a memcpy node and can be
// a programmatic dependent launch. `params` points into this object: keep it where it is while
// they are used.
struct CopyNodeParams {
  static constexpr std::size_t kMaxItems = 48;
  cudaKernelNodeParams params{};
  alignas(8) unsigned char argument[2048];  // the kernel's one argument, its list of copies
  void* arguments[1] = {argument};
};
// Fills out for items (at most kMaxItems).
void copy_node_params(const std::vector<CopyItem>& items, CopyNodeParams& out);

// Whether the current device runs kernels compiled from compute_90 PTX or newer, which wait with
// griddepcontrol.wait: the kernels launched as programmatic dependent launches have that wait
// only then (`#if __CUDA_ARCH__ >= 900`); machine code from older PTX (an sm_90 binary built from
// compute_80) lacks it, and must be launched plainly. All of them are built with the same flags.
bool kernels_wait_on_dependencies();

}  // namespace mx::cuda
