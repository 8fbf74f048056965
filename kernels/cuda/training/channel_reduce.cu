// Per-channel sums (channel_reduce.cuh): the bias gradient of conv2d, conv_transpose2d and linear, and a broadcast
// gate's gradient (mul with a [N, C, 1, 1] factor, called with n = 1 and channels = N·C).
//
// Algorithm: one block per channel; its 256 threads stride over the channel's n·plane elements (a plane at a time,
// consecutive threads on consecutive positions, so the loads coalesce), each summing in double, then a tree
// reduction in shared memory. Deterministic (a fixed order), and in double because a bias's gradient sums up to
// N·H·W values (802 816 for a 56² layer at batch 256) whose FP32 running sum would lose the small ones.
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/channel_reduce.cuh"

namespace convscope::cuda::train {

namespace {
    constexpr int kThreads = 256;

    __global__ void __launch_bounds__(kThreads) channelSumKernel(const float* __restrict__ a,
        const float* __restrict__ b, long long n, long long channels, long long plane, float* __restrict__ out)
    {
        __shared__ double partial[kThreads];
        const long long c = blockIdx.x;
        const long long total = n * plane;
        double sum = 0;
        for (long long e = threadIdx.x; e < total; e += kThreads) {
            const long long img = e / plane, j = e - img * plane;
            const long long at = (img * channels + c) * plane + j;
            sum += b ? double(a[at]) * double(b[at]) : double(a[at]);
        }
        partial[threadIdx.x] = sum;
        __syncthreads();
        for (int half = kThreads / 2; half > 0; half /= 2) {
            if (int(threadIdx.x) < half)
                partial[threadIdx.x] += partial[threadIdx.x + half];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            out[c] = float(partial[0]);
    }
} // namespace

void channelSums(
    const float* a, const float* b, long long n, long long channels, long long plane, float* out, cudaStream_t st)
{
    if (channels <= 0)
        return;
    channelSumKernel<<<unsigned(channels), kThreads, 0, st>>>(a, b, n, channels, plane, out);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::channelSums");
}

} // namespace convscope::cuda::train
