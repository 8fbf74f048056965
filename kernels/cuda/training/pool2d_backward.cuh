// The window pools' backward on the GPU (pool2d_backward.cu): maxpool2d, avgpool2d and global_avgpool2d, with the
// forward's windows, clipping, divisor rule and NaN rule (pooling.cuh's PoolGeometry; maxpool2d.cu, avgpool2d.cu).
#pragma once

#include "compute/storage_format.h"
#include "kernels/cuda/pooling.cuh"

#include <cuda_runtime_api.h>

namespace convscope::cuda::train {

// maxpool2d in training: y as maxpool2d.cu's forward computes it, and each window's argmax (its in-plane index:
// the first tap that is larger than all before it or NaN, PyTorch's max_pool2d_with_indices; −1 for a window with no
// tap in the input) into `argmax` (n·c·p·q ints). Tensors below 2^31 elements.
// Tensors in `type` (FP32 for the cuda session; the cudnn session's storage type in mixed precision): the maximum is
// exact in any type.
void maxPool2dTrainForward(const PoolGeometry& g, DType type, const void* x, void* y, int* argmax, cudaStream_t st);
// gx [n, c, h, w] (every element written) from gy [n, c, p, q]: the gradient of each window goes to the element the
// forward's argmax names, gathered per input element, summed in FP32 and rounded once to `type`.
void maxPool2dBackward(const PoolGeometry& g, DType type, const int* argmax, const void* gy, void* gx, cudaStream_t st);
// Each window's gradient shared over its clipped taps, divided by the forward's divisor.
void avgPool2dBackward(const PoolGeometry& g, const float* gy, float* gx, cudaStream_t st);
// gx[plane, i] = gy[plane] / area for `planes` planes of `area` elements.
void globalAvgPool2dBackward(long long planes, long long area, const float* gy, float* gx, cudaStream_t st);

} // namespace convscope::cuda::train
