// The GPU runtime of a CPU-only build (-Dcuda=disabled): no devices.
#include "context/gpu_runtime.hpp"

namespace mx::detail {
namespace {

struct NoGpuRuntime final : GpuRuntime {
  bool available() const override { return false; }
  int device_count() const override { return 0; }
  std::string device_name(int) const override { return {}; }
  MemoryInfo memory_info(int) const override { return {}; }
};

}  // namespace

const GpuRuntime& gpu_runtime() {
  static const NoGpuRuntime runtime;
  return runtime;
}

}  // namespace mx::detail
