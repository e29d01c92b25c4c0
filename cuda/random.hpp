#pragma once
// cuRAND draws on a GPU (the device generator of gpu(id), on its stream).
#include <cstdint>

#include "ndarray/dtype.hpp"

namespace mx::cuda {

void random_uniform(int device_id, DType dt, void* out, std::int64_t n, double low, double high);
void random_normal(int device_id, DType dt, void* out, std::int64_t n, double loc, double scale);

}  // namespace mx::cuda
