#pragma once
// Turns CUDA, cuBLAS, cuRAND and cuDNN status codes into mx::DeviceError with the call and device named.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>
#ifdef NDG_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace mx::cuda {

// Throws mx::DeviceError (mx::OutOfMemory for cudaErrorMemoryAllocation) unless status is success.
void check(cudaError_t status, const char* call);
void check(cublasStatus_t status, const char* call);
void check(curandStatus_t status, const char* call);
#ifdef NDG_HAVE_CUDNN
void check(cudnnStatus_t status, const char* call);
#endif

// After a kernel launch: reports a bad launch configuration at once, naming the op.
void check_launch(const char* op);
// The same for a launch's own status (cudaLaunchKernel's).
void check_launch(const char* op, cudaError_t status);

}  // namespace mx::cuda

#define NDG_CUDA_CHECK(call) ::mx::cuda::check((call), #call)
