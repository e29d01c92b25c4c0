#pragma once
// The generator behind random numbers on cpu(0). A CUDA build uses cuRAND's host generator
// (cuda/curand_host.cpp), which draws the same values as the device generator for one seed and
// call order; a CPU-only build uses ndarray/std_host_random.cpp. Internal.
#include <cstdint>

#include "ndarray/dtype.hpp"

namespace mx::detail {

// Fills out[0..n) with uniform (0, 1] / standard normal values (n even for normal), reseeding
// from mx::random::current_seed() when mx::random::seed was called since the last draw.
void host_random_uniform(DType dt, void* out, std::int64_t n);
void host_random_normal(DType dt, void* out, std::int64_t n, double loc, double scale);

}  // namespace mx::detail
