// GPU launch of _FusedElementwise (ndarray/graph/fused.hpp): one thread per element runs the program
// in registers, in the run's element type; the program travels by value in the kernel's parameters, so a captured graph
// holds it.
#include "cuda/launch.hpp"
#include "ndarray/graph/fused_kernels.hpp"
#include "cuda/module_preload.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

template <class T>
struct Operands {
  const T* in[kFusedMaxInputs];
  T* out[kFusedMaxOutputs];
};

template <class T>
__global__ void fused_elements(FusedProgram p, Operands<T> a, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    T v[kFusedMaxInputs + kFusedMaxInstrs];
    for (int k = 0; k < p.inputs; ++k) v[k] = a.in[k][i];
    fused_run(p, v);
    for (int o = 0; o < p.outputs; ++o) a.out[o][i] = v[p.out_slot[o]];
  }
}

template <class T>
void launch_fused(const ExecContext& ec, const Invocation& inv, const FusedProgram& p) {
  Operands<T> a{};
  for (int k = 0; k < p.inputs; ++k) a.in[k] = static_cast<const T*>(inv.inputs[k].data());
  for (int o = 0; o < p.outputs; ++o) a.out[o] = static_cast<T*>(inv.outputs[o].data());
  const std::int64_t n = inv.inputs[0].size();
  cuda::launch(ec, "_FusedElementwise", n, &fused_elements<T>, p, a, n);
}

}  // namespace

void fused_elementwise(const ExecContext& ec, const Invocation& inv) {
  const FusedProgram& p = *inv.params.as<FusedParams>().program;
  switch (p.dtype) {
    case DType::float16: return launch_fused<float16>(ec, inv, p);
    case DType::bfloat16: return launch_fused<bfloat16>(ec, inv, p);
    default: return launch_fused<float>(ec, inv, p);
  }
}

}  // namespace mx::op::gpu
