// Per-channel sums for the cuda training session's gradients (channel_reduce.cu): a bias's gradient (Σ of the output
// gradient over the batch and the positions) and a broadcast gate's (Σ over a plane of gy · the full factor).
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda::train {

// out[c] = Σ_{i < n, j < plane} a[(i·channels + c)·plane + j] · (b ? b[same] : 1), summed in double, for c < channels.
void channelSums(
    const float* a, const float* b, long long n, long long channels, long long plane, float* out, cudaStream_t st);

} // namespace convscope::cuda::train
