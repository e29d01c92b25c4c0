#pragma once
// The raw baselines' own kernels, compiled once (bench/raw_kernels.cu), so that the benchmark
// programs themselves are plain C++.
#include <cuda_runtime.h>

namespace bench {

// out[i] = a[i] + b[i], i < n: 256-thread blocks on stream.
void launch_add(const float* a, const float* b, float* out, int n, cudaStream_t stream = nullptr);
// out (rows, cols)[r, c] += bias[c].
void launch_add_bias(float* out, const float* bias, int rows, int cols, cudaStream_t stream = nullptr);

}  // namespace bench
