// Per-channel sums for the cuda training session's gradients (channel_reduce.cu): a bias's gradient (Σ of the output
// gradient over the batch and the positions), a broadcast gate's (Σ over a plane of gy · the full factor) and PReLU's
// slopes'.
#pragma once

#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <cstddef>

namespace convscope::cuda::train {

// The workspace channelSums needs for this shape on a GPU of `sms` multiprocessors (0: none).
size_t channelSumsWorkspaceBytes(long long n, long long channels, long long plane, int sms);

// out[c] = Σ_{i < n, j < plane} a[(i·channels + c)·plane + j] · (b ? b[same] : 1), summed in double, for c < channels.
// `workspace`: channelSumsWorkspaceBytes(n, channels, plane, sms) bytes (may be null when that is 0), the same `sms`.
void channelSums(const float* a, const float* b, long long n, long long channels, long long plane, float* out,
    void* workspace, int sms, cudaStream_t st);

// The same sums of `a` alone (b = 1) over elements of `type` (a mixed-precision step's FP16 / BF16 bias gradient:
// cuDNN's backward bias has no BFLOAT16), in double, each stored in `type`. The same workspace.
void channelSumsStored(const void* a, DType type, long long n, long long channels, long long plane, void* out,
    void* workspace, int sms, cudaStream_t st);

// PReLU's slope gradient: out[k] = Σ x·gy over the elements with x not positive (NaN included) that slope k covers —
// every element (slopes = 1) or channel k's (slopes = channels). `workspace`: preluSlopeGradientWorkspaceBytes bytes.
size_t preluSlopeGradientWorkspaceBytes(long long slopes, long long n, long long channels, long long plane, int sms);
void preluSlopeGradient(long long slopes, long long n, long long channels, long long plane, const float* x,
    const float* gy, float* out, void* workspace, int sms, cudaStream_t st);

} // namespace convscope::cuda::train
