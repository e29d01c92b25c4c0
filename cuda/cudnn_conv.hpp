#pragma once
// The cuDNN path of Convolution (built with the cudnn option): one pass through cuDNN 9's graph API,
// with the engine chosen once per (pass, geometry, dtype, TF32 allowed, alignment) by timing
// cuDNN's candidates. Internal to cuda/ and bench/.
#include <cudnn.h>

#include <cstdint>
#include <optional>
#include <string>

#include "ndarray/ops/conv_kernels.hpp"

namespace mx::cuda {

// The calling thread's cuDNN handle on gpu(device), which the caller made current, bound to stream
// (a cudaStream_t): one per (thread, device), shared by the cuDNN paths (convolution, RNN).
cudnnHandle_t cudnn_handle(int device, void* stream);

// One pass of a convolution through cuDNN on ec's stream, `out` overwritten, with the operand roles
// of op::im2col_convolution:
//   forward:          a = x,  b = w,  out = y
//   backward_data:    a = dy, b = w,  out = dx
//   backward_filter:  a = x,  b = dy, out = dw
// x (batch, in_channels, in...), w (out_channels, in_channels / groups, kernel...),
// y (batch, out_channels, out...), all packed. Returns false, having queued nothing, when cuDNN has
// no engine for this geometry and dtype (the caller then uses im2col + cuBLAS). Throws
// mx::DeviceError naming Convolution when a cuDNN call fails at execution.
bool cudnn_convolution(const op::ExecContext& ec, op::ConvPass pass, const op::ConvGeometry& g, const void* a,
                       const void* b, void* out);

// The plan that cudnn_convolution uses for this pass and geometry (chosen first if it never was),
// for bench/ to time the raw cudnnBackendExecute with the same engine: its variant pack takes a, b
// and out under uid_a, uid_b and uid_out, and workspace_bytes of workspace. Owned by the calling
// thread's cache; valid for the life of the thread.
struct CudnnConvPlan {
  cudnnHandle_t handle;
  cudnnBackendDescriptor_t plan;
  std::int64_t workspace_bytes;
  std::int64_t uid_a, uid_b, uid_out;
  std::string engine;  // "eng<index>_k<knob>=<choice>...", as cudnn-frontend names plans
};
// Empty when cuDNN has no engine for it.
std::optional<CudnnConvPlan> cudnn_convolution_plan(const op::ExecContext& ec, op::ConvPass pass,
                                                    const op::ConvGeometry& g, const void* a, const void* b,
                                                    void* out);

}  // namespace mx::cuda
