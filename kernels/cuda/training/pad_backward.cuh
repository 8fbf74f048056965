// pad's backward on the GPU (pad_backward.cu): the gradient of merge.cuh's pad2d (constant, reflect, replicate).
#pragma once

#include "kernels/cuda/merge.cuh"

#include <cuda_runtime_api.h>

namespace convscope::cuda::train {

// gx [planes, h, w] (every element written) from gy [planes, oh, ow]: each input element sums the gradient of every
// output element the forward copied from it (none of constant mode's fill).
void pad2dBackward(const float* gy, long long planes, int h, int w, int top, int left, int oh, int ow, PadMode mode,
    float* gx, cudaStream_t st);

} // namespace convscope::cuda::train
