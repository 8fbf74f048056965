// CONVSCOPE_HD: a function both the CUDA kernels and the host (the CPU tests that emulate the kernels' index math,
// the launchers' plans) call — __host__ __device__ under nvcc, a plain inline function elsewhere.
#pragma once

#if defined(__CUDACC__)
#define CONVSCOPE_HD __host__ __device__ __forceinline__
#else
#define CONVSCOPE_HD inline
#endif
