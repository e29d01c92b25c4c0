#pragma once
// Turns CUDA, cuBLAS and cuRAND status codes into mx::DeviceError with the call and device named.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

namespace mx::cuda {

// Throws mx::DeviceError (mx::OutOfMemory for cudaErrorMemoryAllocation) unless status is success.
void check(cudaError_t status, const char* call);
void check(cublasStatus_t status, const char* call);
void check(curandStatus_t status, const char* call);

// After a kernel launch: reports a bad launch configuration at once, naming the op.
void check_launch(const char* op);

}  // namespace mx::cuda

#define NDG_CUDA_CHECK(call) ::mx::cuda::check((call), #call)
