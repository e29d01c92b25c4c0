#pragma once
// Note [lazy loading and the exchange]
// CUDA loads a kernel at its first launch (lazy loading, the default since CUDA 12.2), and loading
// may synchronise the device's context. A SyncBatchNorm exchange kernel spins on its GPU until the
// other GPUs of the group get there (cuda/device_exchange.hpp), and those GPUs' work is queued by
// the host only after this GPU's next kernels: if one of those is launched for the first time, its
// loading waits for the spinning kernel, which waits for work the host never queues. CUDA's
// remedy is to load the kernels beforehand (CUDA Programming Guide, "Lazy Loading: Possible
// Hazards"). So, when a GPU first joins a group of several GPUs, every kernel of ndgluon's modules
// is loaded on it (not CUDA_MODULE_LOADING=EAGER for the process, which loads cuBLAS's and
// cuDNN's thousands of kernels too: +2.8 s and +570 MiB per GPU for BN-LeNet on an H200).
//
// Each .cu file names one of its kernels with NDG_CUDA_MODULE_ANCHOR(); a module is a translation
// unit's kernels, found from that anchor.
namespace mx::cuda {

struct ModuleAnchor {
  explicit ModuleAnchor(const void* kernel);
};

// Loads every kernel of the anchored modules on gpu(device), once per device, when CUDA loads
// lazily; returns how many kernels were loaded (0 when loading is eager or they were loaded before).
int preload_modules(int device);

}  // namespace mx::cuda

// In a .cu file, at namespace scope: registers the file's module for preload_modules.
#define NDG_CUDA_MODULE_ANCHOR()                                                       \
  namespace {                                                                          \
  __global__ void ndg_module_anchor() {}                                               \
  const ::mx::cuda::ModuleAnchor ndg_module_anchor_registration(                       \
      reinterpret_cast<const void*>(&ndg_module_anchor));                              \
  }
