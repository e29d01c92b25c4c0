#pragma once
// The CPU reference implementations of the backend ops: plain loops over the shared functors
// (ndarray/functors.hpp), parallel over all cores with OpenMP for large arrays.
#include <cstdint>

#include "ndarray/backend.hpp"

namespace mx::cpu_kernels {

// Arrays smaller than this run on one thread: thread start-up costs more than the loop.
inline constexpr std::int64_t kParallelThreshold = 1 << 15;

void fill(DType dt, void* out, std::int64_t n, double value);
void arange(DType dt, void* out, std::int64_t n, double start, double step);
void cast(DType from, const void* in, DType to, void* out, std::int64_t n);
// data = data * scale + shift, fused (see functors::Affine).
void affine(DType dt, void* data, std::int64_t n, double scale, double shift);
void gather(DType dt, const GatherIndex& index, const void* in, void* out);
void scatter(DType dt, const GatherIndex& index, const void* in, void* out);
void reduce(ReduceOp op, DType dt, const void* in, void* out, ReduceShape shape);
void gemm(DType dt, const GemmArgs& args, const void* a, const void* b, void* c);

}  // namespace mx::cpu_kernels
