// softmax's backward on the GPU (softmax_backward.cu), over the channel axis as the forward (softmax.cuh).
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda::train {

// gx = y · (gy − Σ_c gy·y) per (image, position), from the forward's output y; [n, c, plane] each.
void softmaxBackward(int n, int c, long long plane, const float* y, const float* gy, float* gx, cudaStream_t st);

} // namespace convscope::cuda::train
