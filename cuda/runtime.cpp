// The GPU runtime behind context/device.hpp: device count, names and memory, from the CUDA runtime.
#include <cuda_runtime.h>

#include "context/gpu_runtime.hpp"
#include "cuda/check.hpp"
#include "cuda/device_guard.hpp"

namespace mx::detail {
namespace {

struct CudaRuntime final : GpuRuntime {
  bool available() const override { return true; }

  int device_count() const override {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      // No driver (cudaErrorInsufficientDriver, 35) or no device (100) means 0 GPUs, not a failure.
      cudaGetLastError();
      return 0;
    }
    return count;
  }

  std::string device_name(int id) const override {
    cudaDeviceProp props{};
    NDG_CUDA_CHECK(cudaGetDeviceProperties(&props, id));
    return props.name;
  }

  MemoryInfo memory_info(int id) const override {
    cuda::DeviceGuard guard(id);
    MemoryInfo info;
    NDG_CUDA_CHECK(cudaMemGetInfo(&info.free, &info.total));
    return info;
  }
};

}  // namespace

const GpuRuntime& gpu_runtime() {
  static const CudaRuntime runtime;
  return runtime;
}

}  // namespace mx::detail
