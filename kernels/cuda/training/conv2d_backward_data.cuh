// conv2d's input gradient as an ordinary forward convolution (conv2d_backward_data.cu), so that the backward pass
// runs the same pipelined implicit GEMM tiles as the forward; and the weight flip it needs, which also gives
// linear's transposed weight for its backward-data GEMM. Host-side launchers only.
#pragma once

#include "kernels/cuda/conv2d.cuh"

#include <cuda_runtime_api.h>

namespace convscope::cuda::train {

// Whether conv2d g's input gradient is a forward convolution of dy with the flipped weights: stride 1 in both
// dimensions, and padding no larger than the dilated kernel's reach (dil·(R − 1) ≥ pad), so the new padding is ≥ 0.
bool conv2dBackwardDataAsConvApplies(const ConvGeometry& g);
// That convolution: input dy [n, k, p, q], output dx [n, c, h, w], weight [c, k/groups, r, s] (the flipped layout),
// padding dil·(R − 1) − pad before each dimension, the same dilation and groups, stride 1.
ConvGeometry conv2dBackwardDataGeometry(const ConvGeometry& g);
// flipped[g·Cg + c, k', r, s] = w[g·Kg + k', c, R − 1 − r, S − 1 − s]: the weight [k, c/groups, r, s] of conv2d g
// turned into the weight of conv2dBackwardDataGeometry(g). For a 1×1 layer of one group it is the transpose
// [k, c] → [c, k] (linear's backward-data weight).
void flipConvWeights(const ConvGeometry& g, const float* w, float* flipped, cudaStream_t st);

} // namespace convscope::cuda::train
