// The window pools' backward on the GPU (pool2d_backward.cu): maxpool2d, avgpool2d and global_avgpool2d, with the
// forward's windows, clipping, divisor rule and NaN rule (pooling.cuh's PoolGeometry; maxpool2d.cu, avgpool2d.cu).
#pragma once

#include "kernels/cuda/pooling.cuh"

#include <cuda_runtime_api.h>

namespace convscope::cuda::train {

// gx [n, c, h, w] (every element written) from gy [n, c, p, q]: the gradient of each window goes to its maximum, the
// first tap that is larger than all before it or NaN (PyTorch's max_pool2d_with_indices), found again from x:
// each window's argmax into `argmax` (n·c·p·q ints of scratch), then gathered per input element.
void maxPool2dBackward(const PoolGeometry& g, const float* x, const float* gy, float* gx, int* argmax, cudaStream_t st);
// Each window's gradient shared over its clipped taps, divided by the forward's divisor.
void avgPool2dBackward(const PoolGeometry& g, const float* gy, float* gx, cudaStream_t st);
// gx[plane, i] = gy[plane] / area for `planes` planes of `area` elements.
void globalAvgPool2dBackward(long long planes, long long area, const float* gy, float* gx, cudaStream_t st);

} // namespace convscope::cuda::train
