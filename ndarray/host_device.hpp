#pragma once
// NDG_HD marks functions that the CPU reference and the CUDA kernels share. It is the only
// CUDA-aware line outside cuda/: under nvcc it adds __host__ __device__, elsewhere nothing.
#ifdef __CUDACC__
#define NDG_HD __host__ __device__ __forceinline__
#else
#define NDG_HD inline
#endif
