#pragma once
// cuRAND draws on a GPU (the device generator of gpu(id), on its stream).
#include <cstdint>

#include "ndarray/dtype.hpp"

namespace mx::cuda {

void random_uniform(int device_id, DType dt, void* out, std::int64_t n, double low, double high, std::int64_t offset);
void random_normal(int device_id, DType dt, void* out, std::int64_t n, double loc, double scale, std::int64_t offset);
std::uint64_t random_position(int device_id);

}  // namespace mx::cuda
