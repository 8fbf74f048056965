// softmax's and log_softmax's backward on the GPU (softmax_backward.cu), along one axis as the forward (softmax.cuh).
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda::train {

// gx = y · (gy − Σ_c gy·y) (log: gx = gy − e^y · Σ_c gy) per (image, position), from the forward's output y;
// [n, c, plane] each: any axis as [outer, size, inner].
void softmaxBackward(
    int n, int c, long long plane, const float* y, const float* gy, float* gx, cudaStream_t st, bool log = false);

} // namespace convscope::cuda::train
