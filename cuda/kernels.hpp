#pragma once
// Launchers of the GPU ops: each queues its kernel on `stream` and checks the launch. The CPU
// reference of each lives in ndarray/cpu/ and shares the functors of ndarray/functors.hpp.
#include <cuda_runtime.h>

#include <cstdint>

#include "ndarray/backend.hpp"

namespace mx::cuda {

void fill(cudaStream_t stream, DType dt, void* out, std::int64_t n, double value);
void arange(cudaStream_t stream, DType dt, void* out, std::int64_t n, double start, double step);
void cast(cudaStream_t stream, DType from, const void* in, DType to, void* out, std::int64_t n);
// out = in * scale + shift (maps cuRAND's (0, 1] to (low, high]).
void affine(cudaStream_t stream, DType dt, void* data, std::int64_t n, double scale, double shift);
void gather(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out);
void scatter(cudaStream_t stream, DType dt, const GatherIndex& index, const void* in, void* out);
// `scratch` holds reduce_scratch_bytes(shape) bytes for the two-pass full reductions.
void reduce(cudaStream_t stream, int multiprocessors, ReduceOp op, DType dt, const void* in, void* out,
            ReduceShape shape, void* scratch);
std::size_t reduce_scratch_bytes(int multiprocessors, ReduceShape shape);

}  // namespace mx::cuda
