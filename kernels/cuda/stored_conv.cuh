// The cuda backend's convolutions in a session's storage format (compute/storage_format.h) when the Tensor Core kernel
// does not run them: conv2d with groups (depthwise, MobileNet's), conv_transpose2d, conv3d and conv_transpose3d, on
// FP32, FP16 or BF16 channels-last tensors ([n, d, h, w, c]; an image is a volume of depth 1), FP32 sums. They replace
// the FP32 NCHW kernels plus the two conversions around them that such a layer used to cost. The kernels are in
// stored_conv_kernel.cuh (why they look as they do); stored_dispatch.cpp calls these launchers.
//
// Weights: prepared once (storedConvPrepare) into the layer's scratch as FP32 [taps][C/groups][K] — for a
// conv_transpose from PyTorch's [C, K/groups, taps], for a conv from [K, C/groups, taps] — rounded to the storage
// type first (FP16/BF16 runs compute with FP16/BF16 weights, as the GEMM layers and PyTorch's half models do), so
// the V output channels one thread computes read V consecutive floats of one row.
// Host-side launchers only, so stored_dispatch.cpp can include this without device code.
#pragma once

#include "compute/storage_format.h"
#include "kernels/cuda/conv3d.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda {

// The scratch a storage-format convolution of geometry `g` needs: its prepared weights.
size_t storedConvScratchBytes(const Conv3dGeometry& g);
// w: the FP32 weight in PyTorch's layout ([K, C/g, kd, kh, kw] for a conv, [C, K/g, kd, kh, kw] for a transposed one).
void storedConvPrepare(
    const Conv3dGeometry& g, bool transposed, DType type, const float* w, void* scratch, cudaStream_t st);
// Which form runs ("depthwise, 8 channels a thread" ...), for the layer note.
std::string storedConvNote(const Conv3dGeometry& g, bool transposed, DType type);
// x: [n, d, h, w, c], y: [n, od, oh, ow, k], in `type`; weights as prepared; bias FP32 or null. `act`: a fused
// activation (ConvGeometry::act, −1 none; conv2d only); `skip`: a fused residual add's skip tensor, like y, or null
// (ConvGeometry::residual; conv2d only).
void convChannelsLast(const Conv3dGeometry& g, int act, float actParam, DType type, const void* x, const float* w,
    const float* bias, void* y, cudaStream_t st, const void* skip = nullptr);
void convTransposeChannelsLast(
    const Conv3dGeometry& g, DType type, const void* x, const float* w, const float* bias, void* y, cudaStream_t st);

} // namespace convscope::cuda
