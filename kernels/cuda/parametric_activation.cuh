// The activations that carry parameters beyond one scalar: hardtanh (two bounds) and prelu (a learned slope per
// channel). The scalar-parameter activations are in elementwise.cuh / activation.cu.
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// y = min(max(x, lo), hi) over `count` elements (torch.nn.Hardtanh; NaN stays NaN).
void hardtanh(float lo, float hi, long long count, const float* x, float* y, cudaStream_t st);

// y = x > 0 ? x : a·x (torch.nn.PReLU) for x [n, channels, plane] (plane = D·H·W; 1 for a flat [N, F] input) with
// `slopeCount` slopes on the device: 1 (shared) or `channels` (a[c]).
void prelu(const float* slopes, long long slopeCount, long long n, long long channels, long long plane, const float* x,
    float* y, cudaStream_t st);

} // namespace convscope::cuda
