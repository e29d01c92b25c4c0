#pragma once
// The small device-query interface that context/ needs from a GPU runtime. cuda/runtime.cpp
// implements it; context/no_gpu_runtime.cpp stands in for it in a CPU-only build. Internal.
#include <string>

#include "context/device.hpp"

namespace mx::detail {

struct GpuRuntime {
  virtual ~GpuRuntime() = default;
  virtual bool available() const = 0;  // compiled with CUDA
  virtual int device_count() const = 0;
  virtual std::string device_name(int id) const = 0;
  virtual MemoryInfo memory_info(int id) const = 0;
};

const GpuRuntime& gpu_runtime();

}  // namespace mx::detail
