#pragma once
// Matrix products through cuBLAS on the device's stream (row-major terms, see GemmArgs).
#include "ndarray/backend.hpp"

namespace mx::cuda {

void gemm(int device_id, DType dt, const GemmArgs& args, const void* a, const void* b, void* c);

}  // namespace mx::cuda
