// Per-channel sums (channel_reduce.cuh): the bias gradient of conv2d, conv_transpose2d and linear, and a broadcast
// gate's gradient (mul with a [N, C, 1, 1] factor, called with n = 1 and channels = N·C).
//
// Algorithm: the engine of channel_reduce_kernels.cuh with the plan of channel_walk.h. Each channel's n·plane
// elements are cut into runs so that the grid fills the GPU once (1024 threads per multiprocessor: a bias gradient of
// 64 channels of 32·112² on 132 SMs gets 8 runs each, 512 blocks of 256, where the old kernel had 64 blocks); each run
// is summed by a block of 256 (long runs) or a warp (short ones: the gate's N·C channels of a 7² plane get a warp
// each), each thread walking its units with no division per element, two loads in flight, in float4 loads when the
// plane is a multiple of 4 and the pointers are aligned (scalar otherwise). The runs' partial sums go to the workspace
// and a second kernel adds them per channel in a fixed order (one run per channel: written at once). Deterministic,
// and in double because a bias's gradient sums up to N·H·W values (802 816 for a 56² layer at batch 256) whose FP32
// running sum would lose the small ones.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/channel_reduce.cuh"
#include "kernels/cuda/training/channel_reduce_kernels.cuh"

#include <string>

namespace convscope::cuda::train {

namespace {
    // Σ a (b null) or Σ a·b per unit.
    template <bool Vec> struct SumTerm {
        static constexpr int kVals = 1;
        const float* __restrict__ a;
        const float* __restrict__ b;
        __device__ void start(long long) { }
        __device__ void add(double (&acc)[1], long long u) const
        {
            if constexpr (Vec) {
                const float4 x = reinterpret_cast<const float4*>(a)[u];
                if (b) {
                    const float4 y = reinterpret_cast<const float4*>(b)[u];
                    acc[0] += double(x.x) * double(y.x) + double(x.y) * double(y.y) + double(x.z) * double(y.z)
                        + double(x.w) * double(y.w);
                } else
                    acc[0] += (double(x.x) + double(x.y)) + (double(x.z) + double(x.w));
            } else
                acc[0] += b ? double(a[u]) * double(b[u]) : double(a[u]);
        }
    };

    struct StoreSum {
        float* out;
        __device__ void operator()(long long c, const double (&t)[1]) const { out[c] = float(t[0]); }
    };
} // namespace

size_t channelSumsWorkspaceBytes(long long n, long long channels, long long plane, int sms)
{
    const ChannelReducePlan p = planChannelReduce(n, channels, plane, sms);
    return p.chunks > 1 ? size_t(channels * p.chunks) * sizeof(double) : 0;
}

void channelSums(const float* a, const float* b, long long n, long long channels, long long plane, float* out,
    void* workspace, int sms, cudaStream_t st)
{
    if (channels <= 0)
        return;
    const ChannelReducePlan p = planChannelReduce(n, channels, plane, sms);
    if (p.chunks > 1 && !workspace)
        throw Error("train::channelSums: " + std::to_string(p.chunks) + " runs per channel without a workspace");
    const bool vec = plane % 4 == 0 && reduce::aligned16(a) && (!b || reduce::aligned16(b));
    const ChannelReduceShape s = reduceShapeOf(p, n, channels, plane, vec);
    double* partials = static_cast<double*>(workspace);
    if (vec)
        reduce::launchReduce(s, SumTerm<true> { a, b }, StoreSum { out }, partials, st);
    else
        reduce::launchReduce(s, SumTerm<false> { a, b }, StoreSum { out }, partials, st);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::channelSums");
}

} // namespace convscope::cuda::train
