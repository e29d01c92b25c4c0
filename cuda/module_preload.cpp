// preload_modules (Note [lazy loading and the exchange], cuda/module_preload.hpp), through the
// driver's module API, reached from the runtime (ndgluon links no libcuda of its own).
#include "cuda/module_preload.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <vector>

#include "cuda/device_guard.hpp"
#include "cuda/driver.hpp"

namespace mx::cuda {
namespace {

std::vector<const void*>& anchors() {
  static std::vector<const void*> kernels;  // filled by static initialisers, before main
  return kernels;
}

struct Driver {
  CUresult (*loading_mode)(CUmoduleLoadingMode*) = driver_function<decltype(loading_mode)>("cuModuleGetLoadingMode");
  CUresult (*module_of)(CUmodule*, CUfunction) = driver_function<decltype(module_of)>("cuFuncGetModule");
  CUresult (*count)(unsigned*, CUmodule) = driver_function<decltype(count)>("cuModuleGetFunctionCount");
  CUresult (*enumerate)(CUfunction*, unsigned, CUmodule) = driver_function<decltype(enumerate)>("cuModuleEnumerateFunctions");
  CUresult (*load)(CUfunction) = driver_function<decltype(load)>("cuFuncLoad");
  bool complete() const { return loading_mode && module_of && count && enumerate && load; }
};

}  // namespace

ModuleAnchor::ModuleAnchor(const void* kernel) { anchors().push_back(kernel); }

int preload_modules(int device) {
  static std::mutex mutex;
  static std::set<int> done;
  std::lock_guard lock(mutex);
  if (!done.insert(device).second) return 0;
  static const Driver driver;
  CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
  if (!driver.complete() || driver.loading_mode(&mode) != CUDA_SUCCESS || mode != CU_MODULE_LAZY_LOADING) return 0;
  DeviceGuard guard(device);
  int loaded = 0;
  for (const void* anchor : anchors()) {
    cudaFunction_t function = nullptr;
    CUmodule module = nullptr;
    unsigned n = 0;
    if (cudaGetFuncBySymbol(&function, anchor) != cudaSuccess) {
      cudaGetLastError();  // a module without code for this GPU: its kernels never launch here
      continue;
    }
    if (driver.module_of(&module, function) != CUDA_SUCCESS || driver.count(&n, module) != CUDA_SUCCESS) continue;
    std::vector<CUfunction> functions(n);
    if (driver.enumerate(functions.data(), n, module) != CUDA_SUCCESS) continue;
    for (CUfunction f : functions) loaded += driver.load(f) == CUDA_SUCCESS ? 1 : 0;
  }
  return loaded;
}

}  // namespace mx::cuda
