#include "context/device.hpp"

#include "context/error.hpp"
#include "context/gpu_runtime.hpp"

namespace mx {

int num_gpus() {
  static const int count = detail::gpu_runtime().device_count();
  return count;
}

bool built_with_cuda() { return detail::gpu_runtime().available(); }

Context try_gpu(int i) { return i >= 0 && i < num_gpus() ? gpu(i) : cpu(0); }

std::vector<Context> try_all_gpus() {
  std::vector<Context> contexts;
  for (int i = 0; i < num_gpus(); ++i) contexts.push_back(gpu(i));
  if (contexts.empty()) contexts.push_back(cpu(0));
  return contexts;
}

void check_context(Context ctx) {
  if (ctx.is_cpu()) {
    if (ctx.device_id() != 0) {
      throw DeviceError(ctx.str() + " requested but only cpu(0) exists: cpu(0) uses every core");
    }
    return;
  }
  if (!built_with_cuda()) {
    throw DeviceError(ctx.str() +
                      " requested but this build of ndgluon has no CUDA support; reconfigure with "
                      "`meson setup --reconfigure <builddir> -Dcuda=enabled` (nvcc must be on PATH)");
  }
  const int count = num_gpus();
  if (ctx.device_id() < 0 || ctx.device_id() >= count) {
    throw DeviceError(ctx.str() + " requested but " + std::to_string(count) +
                      (count == 1 ? " GPU is" : " GPUs are") + " visible");
  }
}

std::string gpu_name(int i) {
  check_context(gpu(i));
  return detail::gpu_runtime().device_name(i);
}

MemoryInfo gpu_memory_info(int i) {
  check_context(gpu(i));
  return detail::gpu_runtime().memory_info(i);
}

}  // namespace mx
