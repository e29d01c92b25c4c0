#include "cuda/check.hpp"

#include <string>

#include "context/error.hpp"

namespace mx::cuda {

namespace {
std::string device_suffix() {
  int device = -1;
  return cudaGetDevice(&device) == cudaSuccess ? " on gpu(" + std::to_string(device) + ")" : "";
}
}  // namespace

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so that the process can go on
  std::string message = std::string(call) + " failed" + device_suffix() + ": " + cudaGetErrorName(status) +
                        " (" + cudaGetErrorString(status) + ")";
  if (status == cudaErrorMemoryAllocation) throw OutOfMemory(message);
  throw DeviceError(message);
}

void check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw DeviceError(std::string(call) + " failed" + device_suffix() + ": " + cublasGetStatusName(status) +
                    " (" + cublasGetStatusString(status) + ")");
}

void check(curandStatus_t status, const char* call) {
  if (status == CURAND_STATUS_SUCCESS) return;
  throw DeviceError(std::string(call) + " failed" + device_suffix() + ": curandStatus " +
                    std::to_string(static_cast<int>(status)));
}

#ifdef NDG_HAVE_CUDNN
void check(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw DeviceError(std::string(call) + " failed" + device_suffix() + ": " + cudnnGetErrorString(status));
}
#endif

void check_launch(const char* op) { check_launch(op, cudaGetLastError()); }

void check_launch(const char* op, cudaError_t status) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // the runtime keeps the failure as its last error too: cleared, it is thrown
    throw DeviceError(std::string("kernel launch for '") + op + "' failed" + device_suffix() + ": " +
                      cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
  }
}

}  // namespace mx::cuda
