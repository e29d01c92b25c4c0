#pragma once
// A cuDNN backend descriptor (cudnnBackendCreateDescriptor), destroyed with its owner, for the
// graph-API callers (cuda/cudnn_conv.cpp, cuda/cudnn_attention.cpp). The first failing call is
// recorded and turns the later ones into no-ops, so that a descriptor is built in one chain and
// checked once.
#include <cudnn.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace mx::cuda {

class CudnnDescriptor {
 public:
  CudnnDescriptor() = default;  // none yet
  explicit CudnnDescriptor(cudnnBackendDescriptorType_t type) : status_(cudnnBackendCreateDescriptor(type, &desc_)) {}
  ~CudnnDescriptor() {
    if (desc_) cudnnBackendDestroyDescriptor(desc_);
  }
  CudnnDescriptor(CudnnDescriptor&& other) noexcept
      : desc_(std::exchange(other.desc_, nullptr)), status_(other.status_) {}
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept {
    std::swap(desc_, other.desc_);
    std::swap(status_, other.status_);
    return *this;
  }

  cudnnBackendDescriptor_t get() const { return desc_; }
  cudnnStatus_t status() const { return status_; }

  CudnnDescriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const void* values,
                       std::int64_t count = 1) {
    if (status_ == CUDNN_STATUS_SUCCESS) status_ = cudnnBackendSetAttribute(desc_, name, type, count, values);
    return *this;
  }
  CudnnDescriptor& set(cudnnBackendAttributeName_t name, std::int64_t value) {
    return set(name, CUDNN_TYPE_INT64, &value);
  }
  CudnnDescriptor& set(cudnnBackendAttributeName_t name, const std::vector<std::int64_t>& values) {
    return set(name, CUDNN_TYPE_INT64, values.data(), static_cast<std::int64_t>(values.size()));
  }
  CudnnDescriptor& set(cudnnBackendAttributeName_t name, const CudnnDescriptor& value) {
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &value.desc_);
  }
  CudnnDescriptor& set(cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t value) {
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &value);
  }
  cudnnStatus_t finalize() {
    if (status_ == CUDNN_STATUS_SUCCESS) status_ = cudnnBackendFinalize(desc_);
    return status_;
  }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
  cudnnStatus_t status_ = CUDNN_STATUS_NOT_INITIALIZED;
};

}  // namespace mx::cuda
