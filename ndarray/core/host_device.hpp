#pragma once
// NDG_HD marks functions that the CPU reference and the CUDA kernels share: under nvcc it adds
// __host__ __device__, elsewhere nothing. Outside cuda/, only this macro and the device branches
// (__CUDA_ARCH__) of the 16-bit conversions in ndarray/core/half.hpp know about CUDA; neither includes
// a CUDA header.
#ifdef __CUDACC__
#define NDG_HD __host__ __device__ __forceinline__
#else
// Always inlined on the host too: the CPU loops that call them vectorise only what is inlined.
#define NDG_HD __attribute__((always_inline)) inline
#endif
