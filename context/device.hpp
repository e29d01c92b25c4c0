#pragma once
// Device enumeration and information, as in D2L: num_gpus(), try_gpu(i), try_all_gpus().
#include <cstddef>
#include <string>
#include <vector>

#include "context/context.hpp"

namespace mx {

// Number of visible GPUs. 0 when the build has no CUDA, or when there is no driver or device
// (cudaGetDeviceCount's "no CUDA-capable device" and "insufficient driver" mean 0, not an error).
int num_gpus();

// gpu(i) if it exists, else cpu(0).
Context try_gpu(int i = 0);

// Every GPU, or [cpu(0)] when there is none.
std::vector<Context> try_all_gpus();

// "NVIDIA H100 80GB HBM3". Throws mx::DeviceError if gpu(i) does not exist.
std::string gpu_name(int i = 0);

struct MemoryInfo {
  std::size_t free = 0;   // bytes
  std::size_t total = 0;  // bytes
};
// Free and total device memory of gpu(i), as the driver reports them.
MemoryInfo gpu_memory_info(int i = 0);

// Whether the library was built with CUDA support.
bool built_with_cuda();

// Throws mx::DeviceError unless ctx can be used: cpu(0), or gpu(i) with i < num_gpus().
// The message says how many GPUs are visible, or how to rebuild with CUDA.
void check_context(Context ctx);

}  // namespace mx
