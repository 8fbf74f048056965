// Per-channel sums for the cuda training session's gradients (channel_reduce.cu): a bias's gradient (Σ of the output
// gradient over the batch and the positions) and a broadcast gate's (Σ over a plane of gy · the full factor).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace convscope::cuda::train {

// The workspace channelSums needs for this shape on a GPU of `sms` multiprocessors (0: none).
size_t channelSumsWorkspaceBytes(long long n, long long channels, long long plane, int sms);

// out[c] = Σ_{i < n, j < plane} a[(i·channels + c)·plane + j] · (b ? b[same] : 1), summed in double, for c < channels.
// `workspace`: channelSumsWorkspaceBytes(n, channels, plane, sms) bytes (may be null when that is 0), the same `sms`.
void channelSums(const float* a, const float* b, long long n, long long channels, long long plane, float* out,
    void* workspace, int sms, cudaStream_t st);

} // namespace convscope::cuda::train
