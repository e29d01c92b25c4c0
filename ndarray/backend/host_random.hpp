#pragma once
// The generator behind random numbers on cpu(0). A CUDA build uses cuRAND's host generator
// (cuda/curand_host.cpp), which draws the same values as the device generator for one seed and
// call order; a CPU-only build uses ndarray/std_host_random.cpp. Internal.
#include <cstdint>

#include "ndarray/core/dtype.hpp"

namespace mx::detail {

// Fills out[0..n) with uniform (0, 1] / normal values (n even for normal), reseeding from
// mx::random::current_seed() when mx::random::seed was called since the last draw, and starting
// `offset` values after the seed when offset >= 0.
void host_random_uniform(DType dt, void* out, std::int64_t n, std::int64_t offset);
void host_random_normal(DType dt, void* out, std::int64_t n, double loc, double scale, std::int64_t offset);
// Values drawn on cpu(0) since the last seed.
std::uint64_t host_random_position();
void host_random_set_position(std::uint64_t position);

}  // namespace mx::detail
