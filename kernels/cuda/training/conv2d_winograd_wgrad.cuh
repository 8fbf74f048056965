// conv2d's weight gradient by Winograd's minimal filtering F(3×3, 2×2) (cuda.winograd's training step, on 3×3
// stride-1 ungrouped layers): a 2×2 block of the output gradient dy and the 4×4 input patch under it give the block's
// contribution to the 3×3 weight gradient as
//   dW_kc += G^T [ (A dy_k A^T) ⊙ (B^T x_c B) ] G
// with F(2×2, 3×3)'s matrices B^T, G and A^T (winograd_transforms.cuh; the forward's A^T y is the adjoint of the
// weight gradient's A dy, so the roles swap). The sum over the N·⌈P/2⌉·⌈Q/2⌉ blocks is, for each of the 16 transformed
// positions, a K × C matrix product with that long reduction, which conv2d_backward_weights.cuh's split-K implicit GEMM
// runs, posed as the weight gradient of a 1×1 convolution with 16 groups. 16 multiplies a (k, c) pair and block
// instead of 36: 2.25× fewer, against the transformed tensors' traffic (4× the input and the output gradient). Runs on
// cuda.winograd (FFMA) and on cuda.tensor_core in tf32 (the products on its TF32 tiles: the transformed operands
// rounded to TF32, as cuDNN's TF32 Winograd rounds them).
// Host-side launchers only.
#pragma once

#include "kernels/cuda/conv2d.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda::train {

// Empty when the Winograd weight gradient takes layer g; else why not.
std::string conv2dWinogradWgradRefusal(const ConvGeometry& g);
// The batched product as the weight gradient of a 1×1 convolution with 16 groups (its split-K workspace is
// conv2dWgradWorkspaceBytes of this geometry).
ConvGeometry conv2dWinogradWgradGemm(const ConvGeometry& g);
// The transformed input, output gradient and products: 16·(C + K)·T + 16·K·C floats.
size_t conv2dWinogradWgradScratchBytes(const ConvGeometry& g);
std::string conv2dWinogradWgradNote(const ConvGeometry& g, int sms);
// dW [K, C, 3, 3] of g from x and dy (every element written); `scratch` holds conv2dWinogradWgradScratchBytes,
// `workspace` the GEMM's split-K sums.
void conv2dWinogradBackwardWeights(const ConvGeometry& g, const float* x, const float* dy, float* dw, void* scratch,
    float* workspace, int sms, cudaStream_t st);

} // namespace convscope::cuda::train
