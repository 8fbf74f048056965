// The kinds that move data without arithmetic on the GPU (channel_shuffle, slice, transpose, concat on any axis), for
// every layout and storage type: each is a gather of whole elements, so the kernels copy elements of 2 or 4 bytes and
// never look at their values. Shared by both GPU modules: the cuda backend runs them as its own kernels, the cudnn
// backend because cuDNN has no call for them (its layer note says so).
#pragma once

#include "compute/shape.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace convscope::cuda {

// torch.nn.ChannelShuffle(groups) on rows of `channels` elements spaced `plane` apart: x viewed as
// [outer, channels, plane] (NCHW: outer N, plane H·W; channels-last: outer N·H·W, plane 1), output channel
// j·groups + i taken from input channel i·(channels/groups) + j. elementBytes: 2 or 4.
void channelShuffle(const void* x, long long outer, long long channels, long long groups, long long plane,
    int elementBytes, void* y, cudaStream_t st);

// x.narrow along one axis: x viewed as [outer, size, inner], y = x[:, start:end, :] as [outer, end − start, inner].
void sliceAxis(const void* x, long long outer, long long size, long long inner, long long start, long long end,
    int elementBytes, void* y, cudaStream_t st);

// y = x.permute(perm) made contiguous: x has dims `inDims` (1 to 6), perm[a] is the input axis of output axis a.
void transposeDims(const void* x, const std::vector<int64_t>& inDims, const std::vector<int64_t>& perm,
    int elementBytes, void* y, cudaStream_t st);

// torch.cat along `dim` of inputs of shapes `ins` into `out`, in NCHW order or in channels-last order: every tensor
// viewed as [outer, size, inner] around the axis (axisRuns).
void concatAxis(const std::vector<const void*>& xs, const std::vector<Shape>& ins, const Shape& out, int64_t dim,
    bool channelsLast, int elementBytes, void* y, cudaStream_t st);

// A tensor of `s` (NCHW dims, as Shape::dims() lists them) split at axis `dim` into outer × size × inner, in NCHW
// memory order or in channels-last order (N, [D,] H, W, C: the storage formats' layout).
struct AxisRuns {
    long long outer = 1, size = 1, inner = 1;
};
AxisRuns axisRuns(const Shape& s, int64_t dim, bool channelsLast);

} // namespace convscope::cuda
