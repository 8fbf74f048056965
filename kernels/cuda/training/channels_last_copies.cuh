// The copies that let cuda.tensor_core's fp16 / bf16 training step run its convolutions on the inference Tensor Core
// kernel (conv2d_tensor_core.cuh), which reads and writes channels-last tensors in the half type, while the session
// keeps FP32 NCHW tensors (cuda_training_session.h): an FP32 NCHW tensor rounded into a channels-last half copy (and,
// in the same pass, into an FP32 NCHW copy of the rounded values, which the weight gradient reads), the kernel's
// half output widened back to FP32 NCHW (exact), and the weight flipped and transposed for the backward-data.
// Transposes go through 32 × 32 shared tiles, so both the NCHW side and the channels-last side are coalesced.
#pragma once

#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace convscope::cuda::train {

// x: [n, c, positions] FP32 → xh: [n, positions, c] in `type` (F16 or BF16, rounded to nearest even); `rounded`
// (null: not written): the same values as FP32 in x's order, what gpu::train::roundThrough writes.
void packChannelsLast(
    const float* x, int64_t n, int64_t c, int64_t positions, DType type, void* xh, float* rounded, cudaStream_t st);

// yh: [n, positions, c] in `type` → y: [n, c, positions] FP32.
void unpackChannelsLast(const void* yh, int64_t n, int64_t c, int64_t positions, DType type, float* y, cudaStream_t st);

// The weight of a stride-1 conv2d's backward-data: w [k, c, r, s] FP32 → wt [c, k, r, s] in `type` with the taps
// reversed (wt[c][k][r][s] = w[k][c][R−1−r][S−1−s], rounded), so the data gradient is the forward convolution of the
// output gradient with wt (padding dil·(R−1) − pad).
void flippedTransposedWeight(const float* w, int k, int c, int r, int s, DType type, void* wt, cudaStream_t st);

} // namespace convscope::cuda::train
