// avgpool2d with PyTorch's divisor rule, exactly:
//   hstart = p·sh − top;  hend = min(hstart + kh, H + bottom);  (columns likewise)
//   pool   = (hend − hstart)·(wend − wstart)      — the window's area, padding included, clipped to the padded
//                                                    input (ceil_mode can push a last window past it)
//   clip the window to the real input; sum there (padding adds zeros)
//   divide by divisor_override, else pool when count_include_pad, else the clipped area; an empty window is 0.
//
// One thread per output element, like maxpool2d.cu and for the same reason (memory-bound, the caches serve
// the window overlap; coalesced across consecutive output columns).
//
// 2×2, stride 2, whole windows (isPool2x2Stride2 in pooling.cuh): the shared pool2x2Kernel, for the reasons
// maxpool2d.cu gives (four adjacent outputs per thread from float4 loads, one float4 store). No padding ever
// enters such a window, so count_include_pad cannot change anything and the divisor is divisor_override or 4;
// the sum is taken in the general kernel's order, ((v00 + v01) + v10) + v11, and divided, not multiplied by a
// reciprocal, so both paths round identically.
//
// Channels-last in a session's storage format (stored_layers.cuh): the same windows and divisor rule over
// [n, h, w, c], one thread per output position and channel group (a 16-byte pack when C allows it, as
// maxpool2d.cu's channels-last kernel does), the sum in FP32 in the general kernel's order, one rounding on the store.
#include "kernels/cuda/pooling.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include <algorithm>

namespace convscope::cuda {

namespace {
    __global__ void avgPoolKernel(PoolGeometry g, const float* __restrict__ x, float* __restrict__ y, unsigned total)
    {
        // 32-bit indices: supports() caps tensors at 2^31 elements, and 64-bit division costs ~5x the loads here.
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const unsigned row = idx / g.q;
            const int q = static_cast<int>(idx - row * g.q);
            const unsigned plane = row / g.p;
            const int p = static_cast<int>(row - plane * g.p);
            const float* xp = x + static_cast<size_t>(plane) * g.h * g.w;
            int hs = p * g.strideH - g.padTop, ws = q * g.strideW - g.padLeft;
            int he = min(hs + g.kh, g.h + g.padBottom), we = min(ws + g.kw, g.w + g.padRight);
            const int pool = (he - hs) * (we - ws);
            hs = max(hs, 0), ws = max(ws, 0);
            he = min(he, g.h), we = min(we, g.w);
            if (hs >= he || ws >= we) {
                y[idx] = 0.0f;
                continue;
            }
            float sum = 0.0f;
            for (int ih = hs; ih < he; ++ih)
                for (int iw = ws; iw < we; ++iw)
                    sum += __ldg(xp + ih * g.w + iw);
            const int divisor = g.divisorOverride ? g.divisorOverride
                : g.countIncludePad               ? pool
                                                  : (he - hs) * (we - ws);
            y[idx] = sum / static_cast<float>(divisor);
        }
    }

    struct Avg4 {
        float divisor;
        __device__ float operator()(float a, float b, float c, float d) const { return (((a + b) + c) + d) / divisor; }
    };
    template <typename T, int V>
    __global__ void avgPoolLastKernel(PoolGeometry g, const T* __restrict__ x, T* __restrict__ y, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const ChannelsLastPosition at = channelsLastPosition<V>(g, idx);
            const unsigned pos = at.pos, c0 = at.c0, img = at.image;
            const int p = at.p, q = at.q;
            const T* xp = x + static_cast<size_t>(img) * g.h * g.w * g.c + c0;
            int hs = p * g.strideH - g.padTop, ws = q * g.strideW - g.padLeft;
            int he = min(hs + g.kh, g.h + g.padBottom), we = min(ws + g.kw, g.w + g.padRight);
            const int pool = (he - hs) * (we - ws);
            hs = max(hs, 0), ws = max(ws, 0);
            he = min(he, g.h), we = min(we, g.w);
            float sum[V];
#pragma unroll
            for (int k = 0; k < V; ++k)
                sum[k] = 0.0f;
            for (int ih = hs; ih < he; ++ih)
                for (int iw = ws; iw < we; ++iw) {
                    float v[V];
                    loadValues<T, V>(xp + (static_cast<size_t>(ih) * g.w + iw) * g.c, v);
#pragma unroll
                    for (int k = 0; k < V; ++k)
                        sum[k] += v[k];
                }
            const bool empty = hs >= he || ws >= we;
            const int divisor = g.divisorOverride ? g.divisorOverride
                : g.countIncludePad               ? pool
                                                  : (he - hs) * (we - ws);
#pragma unroll
            for (int k = 0; k < V; ++k)
                sum[k] = empty ? 0.0f : sum[k] / static_cast<float>(divisor);
            storeValues<T, V>(y + static_cast<size_t>(pos) * g.c + c0, sum);
        }
    }
} // namespace

void avgPool2dChannelsLast(const PoolGeometry& g, DType type, const void* x, void* y, cudaStream_t st)
{
    launchChannelsLastWindows(
        static_cast<long long>(g.n) * g.p * g.q, g.c, type, x, y, [&](auto t, auto v, unsigned blocks, unsigned total) {
            using T = decltype(t);
            avgPoolLastKernel<T, decltype(v)::value>
                <<<blocks, 256, 0, st>>>(g, static_cast<const T*>(x), static_cast<T*>(y), total);
        });
}

void avgPool2d(const PoolGeometry& g, const float* x, float* y, cudaStream_t st)
{
    if (isPool2x2Stride2(g)) {
        launchPool2x2(g, Avg4 { static_cast<float>(g.divisorOverride ? g.divisorOverride : 4) }, x, y, st);
        return;
    }
    const long long total = static_cast<long long>(g.n) * g.c * g.p * g.q;
    const long long blocks = (total + 255) / 256;
    avgPoolKernel<<<static_cast<unsigned>(blocks < (1LL << 30) ? blocks : (1LL << 30)), 256, 0, st>>>(
        g, x, y, static_cast<unsigned>(total));
}

} // namespace convscope::cuda
