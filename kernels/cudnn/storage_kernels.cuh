// The one pass of our own that the cudnn session's native layers need (compute/storage_format.h): a per-channel
// FP32 bias and an activation over a channels-last tensor of the storage type, y = act(y + bias[c]) (plus a fused
// residual add's skip where there is one), the sum and the
// activation in FP32 and one rounding to the storage type. It follows a convolution whose bias cuDNN's fused call
// does not take (a graph API plan, an algorithm other than implicit_precomp_gemm) and every linear layer's cuBLAS
// GEMM: channels-last [N, H, W, C] and [N, F] both have the channel innermost, so the channel of element i is i % C.
// Host-side launcher only, so the session needs no device code.
#pragma once

#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace convscope::cudnn {

enum class EpilogueAct { None, ReLU, Sigmoid, Tanh, ELU };

// y[i] = act(y[i] + bias[i % channels] + skip[i]) for i < total; bias may be null (activation only). `param` is ELU's
// alpha. `skip`: a fused residual add's skip tensor (compute/fusion.h), like y, or null.
void biasActivation(void* y, const float* bias, int64_t total, int channels, DType type, EpilogueAct act, float param,
    cudaStream_t stream, const void* skip = nullptr);

} // namespace convscope::cudnn
