// GPU gathers of the attention family (ndarray/ops/attention.cpp has the ops; their products are
// cuBLAS's through gemm()): an interleaved array's slot to dense scratch and back, an element per
// thread, the interleaved side read or written d elements at a time per head.
#include "cuda/launch.hpp"
#include "cuda/module_preload.hpp"
#include "ndarray/ops/attention_kernels.hpp"

NDG_CUDA_MODULE_ANCHOR()

namespace mx::op::gpu {
namespace {

template <class T>
__global__ void gather_slot_elements(SlotView v, const T* interleaved, T* dense, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) op::gather_slot(v, interleaved, dense, i);
}

template <class T>
__global__ void scatter_slot_elements(SlotView v, const T* dense, T* interleaved, std::int64_t n) {
  for (std::int64_t i = cuda::global_thread(); i < n; i += cuda::grid_stride()) op::scatter_slot(v, dense, interleaved, i);
}

std::int64_t elements(const SlotView& v) { return v.batch * v.heads * v.steps * v.d; }

}  // namespace

void gather_slot(const ExecContext& ec, DType dtype, const SlotView& v, const void* interleaved, void* dense) {
  dispatch_floating(dtype, "interleaved_matmul", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "interleaved_matmul", elements(v), &gather_slot_elements<T>, v, static_cast<const T*>(interleaved),
                 static_cast<T*>(dense), elements(v));
  });
}

void scatter_slot(const ExecContext& ec, DType dtype, const SlotView& v, const void* dense, void* interleaved) {
  dispatch_floating(dtype, "interleaved_matmul", [&](auto tag) {
    using T = decltype(tag);
    cuda::launch(ec, "interleaved_matmul", elements(v), &scatter_slot_elements<T>, v, static_cast<const T*>(dense),
                 static_cast<T*>(interleaved), elements(v));
  });
}

}  // namespace mx::op::gpu
