// maxpool2d: y[n, c, p, q] = max over the window rows p·sh − top + i·dh, columns q·sw − left + j·dw that fall
// inside the input (padding never wins: it is −∞, as in PyTorch). NaN propagates exactly as PyTorch's kernels
// do (`v > best || isnan(v)`), so a NaN input is not silently dropped.
//
// One thread per output element. The op is memory-bound (k·k loads and one store per output, no reuse worth
// staging in shared memory for the usual 2×2 / 3×3 windows): consecutive threads take consecutive output
// columns, so a warp's loads for one window row are one or two contiguous segments and the L1 cache serves the
// overlap of neighbouring windows. ceil_mode and asymmetric padding only change P and Q, which shape inference
// already fixed; the window clipping below handles the rest.
//
// 2×2, stride 2, whole windows (the LeNet / U-Net / VGG case; isPool2x2Stride2 in pooling.cuh): pool2x2Kernel.
// The general kernel reaches only ~60% of the copy bandwidth there: each output costs four 4-byte loads, so a
// warp issues four load instructions that each touch 256 bytes of which it keeps half (the other half is the
// neighbouring window's, fetched again from L1), plus the index arithmetic of a generic window. The 2×2 kernel
// lets one thread make four adjacent outputs from two float4 loads per input row (W % 8 == 0; one float4 when
// W % 4 == 0, a float2 when W is even, scalars otherwise): every load instruction is a full 512-byte line per
// warp, all four loads are independent and in flight together, the index arithmetic is paid once per four
// outputs, and the result leaves as one float4 store. The NaN rule is the same select in the same order.
//
// Channels-last in a session's storage format (stored_layers.cuh): [n, h, w, c] → [n, p, q, c], the same windows,
// clipping and NaN rule, one thread per output position and group of channels — a 16-byte pack (4 FP32 or 8
// FP16/BF16 channels) when C is a whole number of packs, else one channel — so consecutive threads take consecutive
// channels of one position and every window element is one contiguous, coalesced row of C values. The maximum is
// exact in any type (a comparison), so FP16/BF16 widen, compare and narrow back without rounding.
#include "kernels/cuda/pooling.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include <algorithm>
#include <cfloat>

namespace convscope::cuda {

namespace {
    __global__ void maxPoolKernel(PoolGeometry g, const float* __restrict__ x, float* __restrict__ y, unsigned total)
    {
        // 32-bit indices: supports() caps tensors at 2^31 elements, and 64-bit division costs ~5x the loads here.
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const unsigned row = idx / g.q;
            const int q = static_cast<int>(idx - row * g.q);
            const unsigned plane = row / g.p;
            const int p = static_cast<int>(row - plane * g.p);
            const float* xp = x + static_cast<size_t>(plane) * g.h * g.w;
            const int h0 = p * g.strideH - g.padTop, w0 = q * g.strideW - g.padLeft;
            float best = -INFINITY;
            for (int i = 0; i < g.kh; ++i) {
                const int ih = h0 + i * g.dilH;
                if (ih < 0 || ih >= g.h)
                    continue;
                for (int j = 0; j < g.kw; ++j) {
                    const int iw = w0 + j * g.dilW;
                    if (iw < 0 || iw >= g.w)
                        continue;
                    const float v = __ldg(xp + ih * g.w + iw);
                    if (v > best || isnan(v))
                        best = v;
                }
            }
            y[idx] = best;
        }
    }

    // PyTorch's running maximum over (0,0), (0,1), (1,0), (1,1): a NaN, once taken, is never replaced.
    struct Max4 {
        __device__ float operator()(float a, float b, float c, float d) const
        {
            float m = a;
            m = (b > m || isnan(b)) ? b : m;
            m = (c > m || isnan(c)) ? c : m;
            return (d > m || isnan(d)) ? d : m;
        }
    };
    template <typename T, int V>
    __global__ void maxPoolLastKernel(PoolGeometry g, const T* __restrict__ x, T* __restrict__ y, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const ChannelsLastPosition at = channelsLastPosition<V>(g, idx);
            const unsigned pos = at.pos, c0 = at.c0, img = at.image;
            const int p = at.p, q = at.q;
            const T* xp = x + static_cast<size_t>(img) * g.h * g.w * g.c + c0;
            const int h0 = p * g.strideH - g.padTop, w0 = q * g.strideW - g.padLeft;
            float best[V];
#pragma unroll
            for (int k = 0; k < V; ++k)
                best[k] = -INFINITY;
            for (int i = 0; i < g.kh; ++i) {
                const int ih = h0 + i * g.dilH;
                if (ih < 0 || ih >= g.h)
                    continue;
                for (int j = 0; j < g.kw; ++j) {
                    const int iw = w0 + j * g.dilW;
                    if (iw < 0 || iw >= g.w)
                        continue;
                    float v[V];
                    loadValues<T, V>(xp + (static_cast<size_t>(ih) * g.w + iw) * g.c, v);
#pragma unroll
                    for (int k = 0; k < V; ++k)
                        if (v[k] > best[k] || isnan(v[k]))
                            best[k] = v[k];
                }
            }
            storeValues<T, V>(y + static_cast<size_t>(pos) * g.c + c0, best);
        }
    }
} // namespace

void maxPool2dChannelsLast(const PoolGeometry& g, DType type, const void* x, void* y, cudaStream_t st)
{
    launchChannelsLastWindows(
        static_cast<long long>(g.n) * g.p * g.q, g.c, type, x, y, [&](auto t, auto v, unsigned blocks, unsigned total) {
            using T = decltype(t);
            maxPoolLastKernel<T, decltype(v)::value>
                <<<blocks, 256, 0, st>>>(g, static_cast<const T*>(x), static_cast<T*>(y), total);
        });
}

void maxPool2d(const PoolGeometry& g, const float* x, float* y, cudaStream_t st)
{
    if (isPool2x2Stride2(g)) {
        launchPool2x2(g, Max4 {}, x, y, st);
        return;
    }
    const long long total = static_cast<long long>(g.n) * g.c * g.p * g.q;
    const long long blocks = (total + 255) / 256;
    maxPoolKernel<<<static_cast<unsigned>(blocks < (1LL << 30) ? blocks : (1LL << 30)), 256, 0, st>>>(
        g, x, y, static_cast<unsigned>(total));
}

} // namespace convscope::cuda
