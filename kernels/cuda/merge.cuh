// The layers that join branches, and padding, on the GPU: add (a residual), mul (a gate, with [N, C, 1, 1]
// broadcast over H and W as squeeze-and-excitation uses it), concat (along channels, U-Net's skips) and pad
// (constant, reflect, replicate). Shared by both GPU modules: the cuda backend runs them as its own kernels, the
// cudnn backend for the kinds cuDNN has no call for (its layer note says so).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

namespace convscope::cuda {

// y = x[0] + x[1] + ..., summed in the order given (as PyTorch's x + y + z), `count` elements each.
void addTensors(const std::vector<const float*>& xs, long long count, float* y, cudaStream_t st);

// y = a · b over `count` elements. plane > 0: b holds one value per plane of `plane` elements (a [N, C, 1, 1] gate
// broadcast over H·W); plane == 0: b has `count` elements too.
void mulTensors(const float* a, const float* b, long long count, long long plane, float* y, cudaStream_t st);

// torch.cat(dim=1): input k, [n, channels[k], hw], goes to channels offset..offset+channels[k] of y [n, ΣC, hw].
void concatChannels(const std::vector<const float*>& xs, const std::vector<long long>& channels, long long n,
    long long hw, float* y, cudaStream_t st);

enum class PadMode { Constant = 0, Reflect = 1, Replicate = 2 };
// planes of h × w in, planes of oh × ow out (oh = h + top + bottom, ow = w + left + right); reflect needs
// padding < size (shape inference checks it).
void pad2d(const float* x, long long planes, int h, int w, int top, int left, int oh, int ow, PadMode mode, float value,
    float* y, cudaStream_t st);

} // namespace convscope::cuda
