#pragma once
// The CPU backend's copies through strided views, parallel over all cores with OpenMP for large
// arrays.
#include <cstdint>

#include "ndarray/backend/backend.hpp"

namespace mx::cpu_kernels {

void gather(DType dt, const GatherIndex& index, const void* in, void* out);
void scatter(DType dt, const GatherIndex& index, const void* in, void* out);

}  // namespace mx::cpu_kernels
