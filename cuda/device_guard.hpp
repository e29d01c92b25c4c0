#pragma once
// DeviceGuard: makes gpu(id) current for a scope and restores the previous device (like c10's
// CUDAGuard). Move-free, copy-free; never throws from its destructor.
#include <cuda_runtime.h>

#include "cuda/check.hpp"

namespace mx::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int id) {
    NDG_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != id) {
      NDG_CUDA_CHECK(cudaSetDevice(id));
      changed_ = true;
    }
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace mx::cuda
