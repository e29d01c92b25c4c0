#pragma once
// Random numbers, generated on the array's context: cuRAND on a GPU; on cpu(0) cuRAND's host
// generator in a CUDA build, so that one seed and call order give bit-identical uniform values on
// cpu(0) and every GPU. A CPU-only build uses its own generator (same API, other values).
#include "ndarray/core/array.hpp"

namespace mx::random {

// Seeds every context's generator; the next draws start the sequence anew.
void seed(std::uint64_t seed);

// The seed in force and how many times seed() was called (generators reseed when it changes).
std::uint64_t current_seed();
std::uint64_t seed_generation();

// ctx's generator state: how far it has drawn since the seed in force (torch's get_rng_state /
// set_rng_state). set_state takes a value get_state gave under the same seed; the next draws on
// ctx are then those that followed it. hybridize() uses the pair to trace a forward that draws
// (Dropout) and leave the generator where an eager call would.
std::uint64_t get_state(Context ctx);
void set_state(Context ctx, std::uint64_t state);

}  // namespace mx::random

namespace mx::nd::random {

// Uniform on (low, high], as cuRAND draws (0, 1]; normal with mean loc and deviation scale.
// float32 or float64; other dtypes throw mx::DTypeError.
NDArray uniform(double low = 0.0, double high = 1.0, const Shape& shape = {1},
                Context ctx = current_context(), DType dtype = DType::float32);
NDArray normal(double loc = 0.0, double scale = 1.0, const Shape& shape = {1},
               Context ctx = current_context(), DType dtype = DType::float32);

// Fill every array (one shape and dtype, any contexts) with the same draws, generated on each
// array's own context: all generators draw at the furthest position among them. This is how
// parameter copies on several contexts get bit-identical initial values. (Normal values on cpu(0)
// are drawn and then replaced by the first GPU copy's: host and device normals differ in ulps.)
void fill_uniform(const std::vector<NDArray>& arrays, double low, double high);
void fill_normal(const std::vector<NDArray>& arrays, double loc, double scale);

}  // namespace mx::nd::random
