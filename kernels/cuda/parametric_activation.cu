// Hardtanh and PReLU on the device, PyTorch's definitions:
//   hardtanh  y = min(max(x, min_val), max_val)   written as two comparisons so a NaN fails both and stays NaN, as
//             torch.clamp keeps it (fminf/fmaxf would turn it into a bound)
//   prelu     y = x > 0 ? x : a[c]·x              one slope, or one per channel c (dim 1; the feature of a flat input)
//
// Both are memory-bound like the other activations (activation.cu says how those move their bytes): a grid-stride
// loop over float4 when the element count allows it. Hardtanh's two bounds travel as kernel arguments. PReLU's slope
// depends on the channel, so each element's channel is recovered from its index: c = (i / plane) % channels. The
// division is by a per-launch constant and costs far less than the memory traffic; with one shared slope there is no
// index arithmetic at all. In the float4 path a vector of four never straddles two
// channels when the plane is a multiple of 4 (the common case: 4·k pixels); otherwise each lane finds its own
// channel. The slopes ([C] floats, a few KiB at most) are read through the read-only cache: every warp of a channel
// reads the same address.
//
// In a session's storage format (stored_layers.cuh) both run through storage_pack.cuh's map (16-byte packs of FP32,
// FP16 or BF16, FP32 math); channels-last puts the channel innermost, so prelu's channel is i mod C, stepped
// along a pack instead of divided per element. Hardtanh's FP32 kernel is the same map.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/parametric_activation.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include <cuda_runtime.h>

namespace convscope::cuda {

namespace {

    __device__ __forceinline__ float clampKeepNan(float v, float lo, float hi)
    {
        return v < lo ? lo : (v > hi ? hi : v);
    }

    struct Clamp {
        float lo, hi;
        template <int N> __device__ void operator()(float (&v)[N], unsigned) const
        {
#pragma unroll
            for (int k = 0; k < N; ++k)
                v[k] = clampKeepNan(v[k], lo, hi);
        }
    };

    __device__ __forceinline__ float preluOf(float v, float a) { return v > 0.0f ? v : a * v; }

    // The slope of element i.
    __device__ __forceinline__ float slopeAt(
        const float* __restrict__ slopes, long long slopeCount, long long channels, long long plane, long long i)
    {
        return slopeCount == 1 ? __ldg(slopes) : __ldg(slopes + (i / plane) % channels);
    }

    __global__ void preluKernel(long long count, const float* __restrict__ slopes, long long slopeCount,
        long long channels, long long plane, const float* __restrict__ x, float* __restrict__ y)
    {
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        if (count % 4 == 0) {
            const float4* x4 = reinterpret_cast<const float4*>(x);
            float4* y4 = reinterpret_cast<float4*>(y);
            const bool oneChannelPerVector = slopeCount == 1 || plane % 4 == 0;
            for (long long i = first; i < count / 4; i += stride) {
                float4 v = __ldg(x4 + i);
                const long long e = 4 * i;
                if (oneChannelPerVector) {
                    const float a = slopeAt(slopes, slopeCount, channels, plane, e);
                    v.x = preluOf(v.x, a), v.y = preluOf(v.y, a), v.z = preluOf(v.z, a), v.w = preluOf(v.w, a);
                } else {
                    v.x = preluOf(v.x, slopeAt(slopes, slopeCount, channels, plane, e));
                    v.y = preluOf(v.y, slopeAt(slopes, slopeCount, channels, plane, e + 1));
                    v.z = preluOf(v.z, slopeAt(slopes, slopeCount, channels, plane, e + 2));
                    v.w = preluOf(v.w, slopeAt(slopes, slopeCount, channels, plane, e + 3));
                }
                y4[i] = v;
            }
        } else {
            for (long long i = first; i < count; i += stride)
                y[i] = preluOf(__ldg(x + i), slopeAt(slopes, slopeCount, channels, plane, i));
        }
    }

    // Channels-last: the channel is the innermost index, c = i mod channels, found once per array and stepped.
    struct PreluLast {
        const float* slopes;
        unsigned slopeCount, channels;
        template <int N> __device__ void operator()(float (&v)[N], unsigned i0) const
        {
            unsigned c = i0 % channels;
#pragma unroll
            for (int k = 0; k < N; ++k) {
                v[k] = preluOf(v[k], __ldg(slopes + (slopeCount == 1 ? 0 : c)));
                c = c + 1 == channels ? 0 : c + 1;
            }
        }
    };

} // namespace

void hardtanh(float lo, float hi, long long count, const float* x, float* y, cudaStream_t st)
{
    launchMap(count, Clamp { lo, hi }, x, y, st);
}

void hardtanhStored(float lo, float hi, long long count, DType type, const void* x, void* y, cudaStream_t st)
{
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        launchMap(count, Clamp { lo, hi }, static_cast<const T*>(x), static_cast<T*>(y), st);
    });
}

void preluChannelsLast(const float* slopes, long long slopeCount, long long count, long long channels, DType type,
    const void* x, void* y, cudaStream_t st)
{
    const PreluLast op { slopes, unsigned(slopeCount), unsigned(channels) };
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        launchMap(count, op, static_cast<const T*>(x), static_cast<T*>(y), st);
    });
}

void prelu(const float* slopes, long long slopeCount, long long n, long long channels, long long plane, const float* x,
    float* y, cudaStream_t st)
{
    const long long count = n * channels * plane;
    const long long work = count % 4 == 0 ? count / 4 : count;
    preluKernel<<<elementwiseBlocks(work, 256), 256, 0, st>>>(count, slopes, slopeCount, channels, plane, x, y);
}

} // namespace convscope::cuda
