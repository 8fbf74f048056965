// conv2d's weight gradient on the GPU (conv2d_backward_weights.cu): an implicit GEMM over N·P·Q with split-K, and
// the bias gradient (channel_reduce.cuh). conv_transpose2d's and linear's weight gradients run the same kernel with
// the roles swapped (cuda_training_layers.cpp says how). Host-side launchers only.
#pragma once

#include "kernels/cuda/conv2d.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda::train {

// How many parts the reduction is split into for a device of `sms` multiprocessors (1: none), and the workspace the
// parts' partial sums need (0 when unsplit). Both throw UnsupportedError for a layer past the kernel's 32-bit index
// math (N·P·Q, or one image of x or dy, beyond 2^31 − 1 elements).
int conv2dWgradSplits(const ConvGeometry& g, int sms);
size_t conv2dWgradWorkspaceBytes(const ConvGeometry& g, int sms);
// "backward-weights: implicit GEMM 64x128 tiles (128 threads, 4 blocks a multiprocessor, 8-deep steps, 4-stage
// cp.async) over N*P*Q = 100352, split-K 105 (…)"
std::string conv2dWgradNote(const ConvGeometry& g, int sms);

// dW [K, C/G, R, S] = the weight gradient of the convolution g from its input x and output gradient dy (every element
// written). `workspace` holds conv2dWgradWorkspaceBytes (may be null when that is 0).
void conv2dBackwardWeights(
    const ConvGeometry& g, const float* x, const float* dy, float* dw, float* workspace, int sms, cudaStream_t st);

} // namespace convscope::cuda::train
