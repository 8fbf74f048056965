// The few things cuDNN's legacy API cannot express, done by small kernels of our own around the cuDNN calls.
// Host-side launchers only, so cudnn_backend.cpp needs no device code. Each launcher checks its launch.
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cudnn {

// NCHW [n, c, h, w] → [n, c, h+top+bottom, w+left+right] with zeros around (NCHW), or the same padded tensor
// in NHWC when `nhwc` is set. cuDNN's convolution descriptor has one padding per axis, applied on both sides;
// asymmetric padding ("same" with an even kernel or a stride) needs the input padded first.
void padInput(const float* x, int n, int c, int h, int w, int top, int bottom, int left, int right, bool nhwc, float* y,
    cudaStream_t stream);

// Batched transpose: for each of `batch` matrices, in [rows, cols] → out [cols, rows]. NCHW → NHWC is
// (batch n, rows c, cols h·w); NHWC → NCHW is (batch n, rows h·w, cols c). Tiles through shared memory so both
// the reads and the writes are coalesced.
void transpose(const float* in, float* out, int batch, int rows, int cols, cudaStream_t stream);

// conv_transpose2d's crop step: y[n, c, oh, ow] = full[n, c, oh + offH, ow + offW] (0 where that lies past the
// full output: rows that output_padding adds beyond every tap) + bias[c] (bias may be null).
void cropAddBias(const float* full, int n, int c, int fullH, int fullW, int offH, int offW, const float* bias, float* y,
    int outH, int outW, cudaStream_t stream);

// Pooling outputs cuDNN cannot give with PyTorch's rules (see cudnn_pooling in the backend): every output with
// oh >= cudnnH or ow >= cudnnW, computed here exactly as PyTorch does. mode: 0 max, 1 average counting padding
// (divisor = window clipped to the padded input), 2 average over real pixels only.
struct PoolEdge {
    int n, c, h, w, outH, outW;
    int kh, kw, sh, sw;
    int top, bottom, left, right;
    int mode;
    int cudnnH, cudnnW; // the block [0, cudnnH) × [0, cudnnW) cuDNN computed
};
void poolEdges(const PoolEdge& g, const float* x, float* y, cudaStream_t stream);

} // namespace convscope::cudnn
