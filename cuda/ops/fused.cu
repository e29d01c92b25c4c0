// GPU launch of _FusedElementwise (ndarray/ops/fused.hpp): one thread per element runs the program
// in registers; the program travels by value in the kernel's parameters, so a captured graph
// holds it.
#include "cuda/launch.hpp"
#include "ndarray/ops/fused_kernels.hpp"

namespace mx::op::gpu {
namespace {

struct Operands {
  const float* in[kFusedMaxInputs];
  float* out[kFusedMaxOutputs];
};

__global__ void fused_elements(FusedProgram p, Operands a, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) {
    float v[kFusedMaxInputs + kFusedMaxInstrs];
    for (int k = 0; k < p.inputs; ++k) v[k] = a.in[k][i];
    fused_run(p, v);
    for (int o = 0; o < p.outputs; ++o) a.out[o][i] = v[p.out_slot[o]];
  }
}

}  // namespace

void fused_elementwise(const ExecContext& ec, const Invocation& inv) {
  const FusedProgram& p = *inv.params.as<FusedParams>().program;
  Operands a{};
  for (int k = 0; k < p.inputs; ++k) a.in[k] = static_cast<const float*>(inv.inputs[k].data());
  for (int o = 0; o < p.outputs; ++o) a.out[o] = static_cast<float*>(inv.outputs[o].data());
  const std::int64_t n = inv.inputs[0].size();
  cuda::launch(ec, "_FusedElementwise", n, &fused_elements, p, a, n);
}

}  // namespace mx::op::gpu
