#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// y[n, o] = bias[o] + Σ_i x[n, i] · W[o, i]; x [rows, in], W [out, in], y [rows, out].
void linear(int rows, int in, int out, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);
// "warp per output (GEMV)" or "tiled SGEMM 64x64"
const char* linearVariant(int rows);

} // namespace convscope::cuda
