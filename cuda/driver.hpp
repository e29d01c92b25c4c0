#pragma once
// The few driver API calls ndgluon makes, reached through the runtime's entry points (ndgluon
// links no libcuda of its own).
#include <cuda.h>
#include <cuda_runtime.h>

namespace mx::cuda {

// The driver's `name` (CUDA 12.4's signature), or nullptr where the driver lacks it.
template <class F>
F driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12040, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<F>(fn);
}

// The calling thread's current context, or nullptr (none, or a driver without cuCtxGetCurrent).
// A read of the driver's thread state: a tenth of what cudaGetDevice costs on the host.
inline CUcontext current_context() {
  static const auto get = driver_function<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
  CUcontext ctx = nullptr;
  if (!get || get(&ctx) != CUDA_SUCCESS) return nullptr;
  return ctx;
}

}  // namespace mx::cuda
