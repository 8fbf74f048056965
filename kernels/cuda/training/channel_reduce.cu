// Per-channel sums (channel_reduce.cuh): the bias gradient of conv2d, conv_transpose2d and linear, a broadcast gate's
// gradient (mul with a [N, C, 1, 1] factor, called with n = 1 and channels = N·C), and PReLU's slope gradient (one
// slope: the whole tensor as n runs of C·plane of one channel; a slope per channel: per channel).
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
#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/training/channel_reduce.cuh"
#include "kernels/cuda/training/channel_reduce_kernels.cuh"

#include <string>

namespace convscope::cuda::train {

namespace {
    enum class SumOf { A, AB, NegativeAB }; // Σ a, Σ a·b, Σ a·b where a is not positive (prelu's slopes)

    template <SumOf K> __device__ __forceinline__ double term(float a, float b)
    {
        if constexpr (K == SumOf::A)
            return double(a);
        else if constexpr (K == SumOf::AB)
            return double(a) * double(b);
        else
            return a > 0.0f ? 0.0 : double(a) * double(b); // NaN: not positive, as the CPU's !(x > 0)
    }

    template <bool Vec, SumOf K> struct SumTerm {
        static constexpr int kVals = 1;
        const float* __restrict__ a;
        const float* __restrict__ b;
        __device__ void start(long long) { }
        __device__ void add(double (&acc)[1], long long u) const
        {
            if constexpr (Vec) {
                const float4 x = reinterpret_cast<const float4*>(a)[u];
                const float4 y = K == SumOf::A ? x : reinterpret_cast<const float4*>(b)[u];
                acc[0] += (term<K>(x.x, y.x) + term<K>(x.y, y.y)) + (term<K>(x.z, y.z) + term<K>(x.w, y.w));
            } else
                acc[0] += term<K>(a[u], K == SumOf::A ? 0.0f : b[u]);
        }
    };

    struct StoreSum {
        float* out;
        __device__ void operator()(long long c, const double (&t)[1]) const { out[c] = float(t[0]); }
    };

    // Σ a over elements of a storage type (mixed precision), widened to double; the sum stored in that type.
    template <typename T> struct StoredTerm {
        static constexpr int kVals = 1;
        const T* __restrict__ a;
        __device__ void start(long long) { }
        __device__ void add(double (&acc)[1], long long u) const { acc[0] += double(gpu::toFloat(a[u])); }
    };
    template <typename T> struct StoreAs {
        T* out;
        __device__ void operator()(long long c, const double (&t)[1]) const { out[c] = gpu::fromFloat<T>(float(t[0])); }
    };

    // The reduction's plan; a plan of several runs per channel needs the workspace for their partial sums.
    ChannelReducePlan checkedPlan(
        long long n, long long channels, long long plane, int sms, const void* workspace, const char* what)
    {
        const ChannelReducePlan p = planChannelReduce(n, channels, plane, sms);
        if (p.chunks > 1 && !workspace)
            throw Error(std::string(what) + ": " + std::to_string(p.chunks) + " runs per channel without a workspace");
        return p;
    }

    template <SumOf K>
    void sums(const float* a, const float* b, long long n, long long channels, long long plane, float* out,
        void* workspace, int sms, cudaStream_t st, const char* what)
    {
        if (channels <= 0)
            return;
        const ChannelReducePlan p = checkedPlan(n, channels, plane, sms, workspace, what);
        const bool vec = plane % 4 == 0 && reduce::aligned16(a) && (K == SumOf::A || reduce::aligned16(b));
        const ChannelReduceShape s = reduceShapeOf(p, n, channels, plane, vec);
        double* partials = static_cast<double*>(workspace);
        if (vec)
            reduce::launchReduce(s, SumTerm<true, K> { a, b }, StoreSum { out }, partials, st);
        else
            reduce::launchReduce(s, SumTerm<false, K> { a, b }, StoreSum { out }, partials, st);
        CONVSCOPE_CUDA_CHECK_LAUNCH(what);
    }
} // namespace

size_t channelSumsWorkspaceBytes(long long n, long long channels, long long plane, int sms)
{
    const ChannelReducePlan p = planChannelReduce(n, channels, plane, sms);
    return p.chunks > 1 ? size_t(channels * p.chunks) * sizeof(double) : 0;
}

void channelSums(const float* a, const float* b, long long n, long long channels, long long plane, float* out,
    void* workspace, int sms, cudaStream_t st)
{
    if (b)
        sums<SumOf::AB>(a, b, n, channels, plane, out, workspace, sms, st, "train::channelSums");
    else
        sums<SumOf::A>(a, nullptr, n, channels, plane, out, workspace, sms, st, "train::channelSums");
}

void channelSumsStored(const void* a, DType type, long long n, long long channels, long long plane, void* out,
    void* workspace, int sms, cudaStream_t st)
{
    if (channels <= 0)
        return;
    const ChannelReducePlan p = checkedPlan(n, channels, plane, sms, workspace, "train::channelSumsStored");
    const ChannelReduceShape s = reduceShapeOf(p, n, channels, plane, false);
    gpu::withStorageType(type, [&](auto v) {
        using T = decltype(v);
        reduce::launchReduce(s, StoredTerm<T> { static_cast<const T*>(a) }, StoreAs<T> { static_cast<T*>(out) },
            static_cast<double*>(workspace), st);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::channelSumsStored");
}

size_t preluSlopeGradientWorkspaceBytes(long long slopes, long long n, long long channels, long long plane, int sms)
{
    return slopes == 1 ? channelSumsWorkspaceBytes(n, 1, channels * plane, sms)
                       : channelSumsWorkspaceBytes(n, channels, plane, sms);
}

void preluSlopeGradient(long long slopes, long long n, long long channels, long long plane, const float* x,
    const float* gy, float* out, void* workspace, int sms, cudaStream_t st)
{
    const char* what = "train::preluSlopeGradient";
    if (slopes == 1) // one slope for every channel: each image's C·plane values are one run of one "channel"
        sums<SumOf::NegativeAB>(x, gy, n, 1, channels * plane, out, workspace, sms, st, what);
    else
        sums<SumOf::NegativeAB>(x, gy, n, channels, plane, out, workspace, sms, st, what);
}

} // namespace convscope::cuda::train
