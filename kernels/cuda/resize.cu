// Resize kernels (resize.cuh): one block per output row (plane, z, y) at a time, whose z and y taps every thread
// computes once (resize_math.h, in double as the CPU does); the threads stride along the row, each computing its
// x taps and summing the weighted inputs in FP32. The tap count is a template parameter (1 nearest, 2 linear, 4 cubic)
// so the taps stay in registers: with a run-time count the arrays went to local memory and a 2× upsampling reached
// 5% of the copy bandwidth. The sums run in the CPU's order; an axis of one element (an image's D) has one tap of
// weight 1 and the others weight 0, which add exact zeros.
#include "kernels/cuda/resize.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"

#include <algorithm>

namespace convscope::cuda {

namespace {
    template <int K>
    __device__ __forceinline__ void axisTaps(
        const ResizePlan& p, const ResizeAxis& a, long long o, long long (&idx)[K], float (&w)[K])
    {
        int64_t i4[kResizeMaxTaps] = { 0, 0, 0, 0 };
        float w4[kResizeMaxTaps] = { 0, 0, 0, 0 };
        resizeTaps(p, a, o, i4, w4);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            idx[k] = i4[k];
            w[k] = w4[k];
        }
    }

    // The output row's z and y taps: the input rows it reads (offsets, in rows of W) and their weights.
    template <int K, bool VOLUME> struct RowTaps {
        static constexpr int kZ = VOLUME ? K : 1;
        long long row[kZ * K];
        float weight[kZ * K];
        __device__ RowTaps(const ResizePlan& p, long long oz, long long oy)
        {
            long long iz[K], iy[K];
            float wz[K], wy[K];
            axisTaps<K>(p, p.axis[0], oz, iz, wz);
            axisTaps<K>(p, p.axis[1], oy, iy, wy);
#pragma unroll
            for (int a = 0; a < kZ; ++a)
#pragma unroll
                for (int b = 0; b < K; ++b) {
                    row[a * K + b] = iz[a] * p.axis[1].in + iy[b];
                    weight[a * K + b] = wz[a] * wy[b];
                }
        }
    };

    // Σ_rows weight · Σ_c wx[c] · base[(row · W + ix[c]) · stride]
    template <int K, bool VOLUME, typename T>
    __device__ __forceinline__ float rowSum(const RowTaps<K, VOLUME>& r, const ResizePlan& p, long long ox,
        const T* __restrict__ base, long long width, long long stride)
    {
        long long ix[K];
        float wx[K];
        axisTaps<K>(p, p.axis[2], ox, ix, wx);
        float acc = 0;
#pragma unroll
        for (int t = 0; t < RowTaps<K, VOLUME>::kZ * K; ++t) {
            const T* line = base + r.row[t] * width * stride;
            float part = 0;
#pragma unroll
            for (int c = 0; c < K; ++c)
                part += wx[c] * gpu::toFloat(line[ix[c] * stride]);
            acc += r.weight[t] * part;
        }
        return acc;
    }

    template <int K, bool VOLUME>
    __global__ void resizeNchwKernel(ResizePlan p, long long rows, const float* __restrict__ x, float* __restrict__ y)
    {
        const long long od = p.axis[0].out, oh = p.axis[1].out, ow = p.axis[2].out;
        const long long inPlane = p.axis[0].in * p.axis[1].in * p.axis[2].in;
        for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
            const long long oy = row % oh, oz = (row / oh) % od, plane = row / (oh * od);
            const RowTaps<K, VOLUME> taps(p, oz, oy);
            const float* base = x + plane * inPlane;
            float* out = y + row * ow;
            for (long long ox = threadIdx.x; ox < ow; ox += blockDim.x)
                out[ox] = rowSum<K, VOLUME>(taps, p, ox, base, p.axis[2].in, 1);
        }
    }

    // [n, D, H, W, C]: a row is (n, z, y) and its W' · C outputs, the channels innermost.
    template <int K, bool VOLUME, typename T>
    __global__ void resizeLastKernel(
        ResizePlan p, long long rows, long long channels, const T* __restrict__ x, T* __restrict__ y)
    {
        const long long od = p.axis[0].out, oh = p.axis[1].out, ow = p.axis[2].out;
        const long long inVolume = p.axis[0].in * p.axis[1].in * p.axis[2].in * channels;
        const long long run = ow * channels;
        for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
            const long long oy = row % oh, oz = (row / oh) % od, n = row / (oh * od);
            const RowTaps<K, VOLUME> taps(p, oz, oy);
            T* out = y + row * run;
            for (long long j = threadIdx.x; j < run; j += blockDim.x) {
                const long long ox = j / channels, c = j - ox * channels;
                out[j]
                    = gpu::fromFloat<T>(rowSum<K, VOLUME>(taps, p, ox, x + n * inVolume + c, p.axis[2].in, channels));
            }
        }
    }

    // Block size: a row's outputs in warps, 64 to 256 threads; blocks: the rows, capped (the kernels stride).
    int threadsFor(long long run) { return int(std::clamp<long long>((run + 31) / 32 * 32, 64, 256)); }
    unsigned blocksFor(long long rows) { return unsigned(std::min<long long>(rows, 1LL << 20)); }

    // Calls f.template operator()<K, VOLUME>() for the plan's tap count and whether D is resized.
    template <typename F> void withTaps(const ResizePlan& p, F&& f)
    {
        const bool volume = p.axis[0].in > 1 || p.axis[0].out > 1;
        const int k = p.mode == 0 ? 1 : p.mode == 1 ? 2 : 4;
        const auto pick = [&]<bool V>() {
            if (k == 1)
                f.template operator()<1, V>();
            else if (k == 2)
                f.template operator()<2, V>();
            else
                f.template operator()<4, V>();
        };
        if (volume)
            pick.template operator()<true>();
        else
            pick.template operator()<false>();
    }
} // namespace

void resizeNchw(const ResizePlan& plan, long long planes, const float* x, float* y, cudaStream_t st)
{
    const long long rows = planes * plan.axis[0].out * plan.axis[1].out;
    if (rows <= 0 || plan.axis[2].out <= 0)
        return;
    withTaps(plan, [&]<int K, bool V>() {
        resizeNchwKernel<K, V><<<blocksFor(rows), threadsFor(plan.axis[2].out), 0, st>>>(plan, rows, x, y);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("resize");
}

void resizeChannelsLast(
    const ResizePlan& plan, long long n, long long channels, DType type, const void* x, void* y, cudaStream_t st)
{
    const long long rows = n * plan.axis[0].out * plan.axis[1].out;
    if (rows <= 0 || plan.axis[2].out <= 0 || channels <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        withTaps(plan, [&]<int K, bool V>() {
            resizeLastKernel<K, V, T><<<blocksFor(rows), threadsFor(plan.axis[2].out * channels), 0, st>>>(
                plan, rows, channels, static_cast<const T*>(x), static_cast<T*>(y));
        });
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("resize");
}

} // namespace convscope::cuda
