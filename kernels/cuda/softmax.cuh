// Our CUDA softmax over dim 1 (features or channels).
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// Softmax over dim 1 of [n, c, h, w]: over the features of a flat input (h·w = 1), or over the channels at
// every pixel.
void softmax(int n, int c, int planeSize, const float* x, float* y, cudaStream_t st);

} // namespace convscope::cuda
