// maxpool3d and avgpool3d in a session's storage format (stored_layers.cuh): the windows and PyTorch's rules of
// maxpool3d.cu and avgpool3d.cu (padding never wins a max, a NaN is kept once taken; avg_pool3d's divisor with
// count_include_pad, divisor_override and ceil_mode's clipped last window), on channels-last [n, d, h, w, c] volumes
// of FP32, FP16 or BF16, FP32 math. One thread per output position and 16-byte pack of channels (one channel where C
// or a pointer does not allow it), as the 2-D channels-last pools do: a warp reads consecutive channels of one window
// position, so every load is coalesced, and the caches serve the windows' overlap.
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

namespace convscope::cuda {

namespace {
    // Thread `idx`'s output position (image, depth, row, column) and first channel, V channels a thread.
    struct VolumePosition {
        unsigned pos, image;
        int z, y, x;
        unsigned c0;
    };
    template <int V> __device__ __forceinline__ VolumePosition volumePosition(const Pool3dGeometry& g, unsigned idx)
    {
        const unsigned groups = unsigned(g.c) / V;
        VolumePosition at;
        at.pos = idx / groups;
        at.c0 = (idx - at.pos * groups) * V;
        unsigned rest = at.pos;
        at.x = int(rest % unsigned(g.ow));
        rest /= unsigned(g.ow);
        at.y = int(rest % unsigned(g.oh));
        rest /= unsigned(g.oh);
        at.z = int(rest % unsigned(g.od));
        at.image = rest / unsigned(g.od);
        return at;
    }

    template <typename T, int V>
    __global__ void maxPool3dLastKernel(Pool3dGeometry g, const T* __restrict__ x, T* __restrict__ y, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const VolumePosition at = volumePosition<V>(g, idx);
            const T* xp = x + size_t(at.image) * g.d * g.h * g.w * g.c + at.c0;
            const int z0 = at.z * g.sd - g.padFront, y0 = at.y * g.sh - g.padTop, x0 = at.x * g.sw - g.padLeft;
            float best[V];
#pragma unroll
            for (int k = 0; k < V; ++k)
                best[k] = -INFINITY;
            for (int a = 0; a < g.kd; ++a) {
                const int iz = z0 + a * g.dd;
                if (iz < 0 || iz >= g.d)
                    continue;
                for (int b = 0; b < g.kh; ++b) {
                    const int iy = y0 + b * g.dh;
                    if (iy < 0 || iy >= g.h)
                        continue;
                    for (int e = 0; e < g.kw; ++e) {
                        const int ix = x0 + e * g.dw;
                        if (ix < 0 || ix >= g.w)
                            continue;
                        float v[V];
                        loadValues<T, V>(xp + ((size_t(iz) * g.h + iy) * g.w + ix) * g.c, v);
#pragma unroll
                        for (int k = 0; k < V; ++k)
                            if (v[k] > best[k] || isnan(v[k]))
                                best[k] = v[k];
                    }
                }
            }
            storeValues<T, V>(y + size_t(at.pos) * g.c + at.c0, best);
        }
    }

    template <typename T, int V>
    __global__ void avgPool3dLastKernel(Pool3dGeometry g, const T* __restrict__ x, T* __restrict__ y, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const VolumePosition at = volumePosition<V>(g, idx);
            const T* xp = x + size_t(at.image) * g.d * g.h * g.w * g.c + at.c0;
            int zs = at.z * g.sd - g.padFront, ys = at.y * g.sh - g.padTop, xs = at.x * g.sw - g.padLeft;
            int ze = min(zs + g.kd, g.d + g.padBack), ye = min(ys + g.kh, g.h + g.padBottom),
                xe = min(xs + g.kw, g.w + g.padRight);
            const int pool = (ze - zs) * (ye - ys) * (xe - xs);
            zs = max(zs, 0), ys = max(ys, 0), xs = max(xs, 0);
            ze = min(ze, g.d), ye = min(ye, g.h), xe = min(xe, g.w);
            float sum[V];
#pragma unroll
            for (int k = 0; k < V; ++k)
                sum[k] = 0.0f;
            for (int iz = zs; iz < ze; ++iz)
                for (int iy = ys; iy < ye; ++iy)
                    for (int ix = xs; ix < xe; ++ix) {
                        float v[V];
                        loadValues<T, V>(xp + ((size_t(iz) * g.h + iy) * g.w + ix) * g.c, v);
#pragma unroll
                        for (int k = 0; k < V; ++k)
                            sum[k] += v[k];
                    }
            const bool empty = zs >= ze || ys >= ye || xs >= xe;
            const int divisor = g.divisorOverride ? g.divisorOverride
                : g.countIncludePad               ? pool
                                                  : (ze - zs) * (ye - ys) * (xe - xs);
#pragma unroll
            for (int k = 0; k < V; ++k)
                sum[k] = empty ? 0.0f : sum[k] / static_cast<float>(divisor);
            storeValues<T, V>(y + size_t(at.pos) * g.c + at.c0, sum);
        }
    }

    long long outputPositions(const Pool3dGeometry& g) { return static_cast<long long>(g.n) * g.od * g.oh * g.ow; }
} // namespace

void maxPool3dChannelsLast(const Pool3dGeometry& g, DType type, const void* x, void* y, cudaStream_t st)
{
    launchChannelsLastWindows(
        outputPositions(g), g.c, type, x, y, [&](auto t, auto v, unsigned blocks, unsigned total) {
            using T = decltype(t);
            maxPool3dLastKernel<T, decltype(v)::value>
                <<<blocks, 256, 0, st>>>(g, static_cast<const T*>(x), static_cast<T*>(y), total);
        });
    CONVSCOPE_CUDA_CHECK_LAUNCH("maxpool3d channels-last");
}

void avgPool3dChannelsLast(const Pool3dGeometry& g, DType type, const void* x, void* y, cudaStream_t st)
{
    launchChannelsLastWindows(
        outputPositions(g), g.c, type, x, y, [&](auto t, auto v, unsigned blocks, unsigned total) {
            using T = decltype(t);
            avgPool3dLastKernel<T, decltype(v)::value>
                <<<blocks, 256, 0, st>>>(g, static_cast<const T*>(x), static_cast<T*>(y), total);
        });
    CONVSCOPE_CUDA_CHECK_LAUNCH("avgpool3d channels-last");
}

} // namespace convscope::cuda
