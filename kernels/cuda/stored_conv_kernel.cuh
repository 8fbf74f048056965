// The storage-format convolutions (stored_conv.cuh): one gather formulation for conv and conv_transpose, in 2-D and
// 3-D, on channels-last tensors of T = float, __half or __nv_bfloat16, FP32 sums.
//
// Every thread owns one output position and V consecutive output channels and gathers what reaches them:
//   y[n, o, k] = bias[k] + Σ_{tap, c in k's group} x[n, i(o, tap), group·C/g + c] · W[tap][c][k]
// where i(o, tap) per axis is o·stride − pad + t·dil for a conv, and for a conv_transpose the input position whose
// scatter lands on o: (o + pad − t·dil) / stride when that is a whole number inside the input (PyTorch's crop of the
// full output is `pad` at the front/top/left; output_padding and the back/bottom/right crop only change the output
// size, which shape inference fixed). No atomics, deterministic, every stride, dilation, padding and group count.
//
// Two forms, picked per layer:
//   depthwise (one input and one output channel a group — MobileNet's 3×3 layers, and their transposed twins): the V
//     channels a thread owns are V different groups, so per tap it loads one 16-byte pack of V consecutive input
//     channels (coalesced across a warp that spans the channels of a position) and V consecutive prepared weights,
//     and does V FMAs. This is the form that matters for speed: the layer is bound by reading its input.
//   grouped (every other layer: dense, grouped, or depthwise with a channel multiplier): the V = 4 (or 1) channels a
//     thread owns are in one group; per tap and input channel of the group it loads one input value — the same
//     address for all the threads of a position, which the cache broadcasts — and a float4 of prepared weights.
// Weights are read as FP32 [taps][C/g][K] from the scratch (storedConvPrepare), so both forms' weight loads are
// contiguous over the channels the threads of a warp own.
#pragma once

#include "kernels/cuda/activation_op.cuh"
#include "kernels/cuda/conv3d.cuh"
#include "kernels/cuda/storage_pack.cuh"

#include <cuda_runtime.h>

namespace convscope::cuda {

namespace stored_conv {

    // The input coordinate of tap t along one axis for output coordinate o, or −1 when it is outside the input (or,
    // transposed, when no whole input position scatters there).
    template <bool Transposed>
    __device__ __forceinline__ int tapInput(int o, int t, int stride, int pad, int dil, int size)
    {
        if constexpr (Transposed) {
            const int th = o + pad - t * dil;
            if (th < 0 || th % stride != 0)
                return -1;
            const int i = th / stride;
            return i < size ? i : -1;
        } else {
            const int i = o * stride - pad + t * dil;
            return i >= 0 && i < size ? i : -1;
        }
    }

    struct OutPosition {
        int x, y, z;
        unsigned n;
    };

    __device__ __forceinline__ OutPosition outPosition(unsigned pos, const Conv3dGeometry& g)
    {
        OutPosition o;
        o.x = int(pos % unsigned(g.ow));
        pos /= unsigned(g.ow);
        o.y = int(pos % unsigned(g.oh));
        pos /= unsigned(g.oh);
        o.z = int(pos % unsigned(g.od));
        o.n = pos / unsigned(g.od);
        return o;
    }

    // V consecutive FP32 weights (V = 1, 4 or 8; 16-byte aligned for 4 and 8: K and k0 are multiples of V).
    template <int V> __device__ __forceinline__ void loadWeights(const float* p, float (&v)[V])
    {
        if constexpr (V == 1) {
            v[0] = __ldg(p);
        } else {
#pragma unroll
            for (int q = 0; q < V / 4; ++q) {
                const float4 f = __ldg(reinterpret_cast<const float4*>(p) + q);
                v[4 * q + 0] = f.x;
                v[4 * q + 1] = f.y;
                v[4 * q + 2] = f.z;
                v[4 * q + 3] = f.w;
            }
        }
    }

    // Calls f(tap, input offset in positions) for every tap of output position `o` that reads the input.
    template <bool Transposed, typename F>
    __device__ __forceinline__ void forEachTap(const Conv3dGeometry& g, const OutPosition& o, F&& f)
    {
        for (int a = 0; a < g.kd; ++a) {
            const int iz = tapInput<Transposed>(o.z, a, g.sd, g.pd, g.dd, g.d);
            if (iz < 0)
                continue;
            for (int b = 0; b < g.kh; ++b) {
                const int iy = tapInput<Transposed>(o.y, b, g.sh, g.ph, g.dh, g.h);
                if (iy < 0)
                    continue;
                for (int e = 0; e < g.kw; ++e) {
                    const int ix = tapInput<Transposed>(o.x, e, g.sw, g.pw, g.dw, g.w);
                    if (ix < 0)
                        continue;
                    f((a * g.kh + b) * g.kw + e, (size_t(iz) * g.h + iy) * g.w + ix);
                }
            }
        }
    }

    // Depthwise: C = K = groups. V = kPack<T> channels a thread (16-byte packs), or 1 where C or a pointer forbids.
    template <typename T, int V, bool Transposed>
    __global__ void __launch_bounds__(256)
        depthwiseKernel(Conv3dGeometry g, int act, float actParam, const T* __restrict__ x, const float* __restrict__ w,
            const float* __restrict__ bias, const T* __restrict__ skip, T* __restrict__ y, unsigned total)
    {
        const unsigned packs = unsigned(g.k / V);
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const unsigned pos = idx / packs;
            const int k0 = int(idx - pos * packs) * V;
            const OutPosition o = outPosition(pos, g);
            float acc[V];
#pragma unroll
            for (int v = 0; v < V; ++v)
                acc[v] = bias ? __ldg(bias + k0 + v) : 0.0f;
            const T* xn = x + size_t(o.n) * g.d * g.h * g.w * g.c + k0;
            forEachTap<Transposed>(g, o, [&](int tap, size_t at) {
                float xv[V], wv[V];
                loadValues<T, V>(xn + at * g.c, xv);
                loadWeights<V>(w + size_t(tap) * g.k + k0, wv);
#pragma unroll
                for (int v = 0; v < V; ++v)
                    acc[v] = fmaf(xv[v], wv[v], acc[v]);
            });
#pragma unroll
            for (int v = 0; v < V; ++v) // a fused residual add's skip (stored like y), rounded as residualSum does
                acc[v] = epilogue(act, actParam,
                    skip ? gpu::toFloat(gpu::fromFloat<T>(acc[v])) + gpu::toFloat(skip[size_t(pos) * g.k + k0 + v])
                         : acc[v]);
            storeValues<T, V>(y + size_t(pos) * g.k + k0, acc);
        }
    }

    // Every other layer: V = 4 (K/groups a multiple of 4) or 1 output channels of one group a thread.
    template <typename T, int V, bool Transposed>
    __global__ void __launch_bounds__(256)
        groupedKernel(Conv3dGeometry g, int act, float actParam, const T* __restrict__ x, const float* __restrict__ w,
            const float* __restrict__ bias, const T* __restrict__ skip, T* __restrict__ y, unsigned total)
    {
        const int cg = g.c / g.groups, kg = g.k / g.groups;
        const unsigned packs = unsigned(g.k / V);
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const unsigned pos = idx / packs;
            const int k0 = int(idx - pos * packs) * V;
            const OutPosition o = outPosition(pos, g);
            float acc[V];
#pragma unroll
            for (int v = 0; v < V; ++v)
                acc[v] = bias ? __ldg(bias + k0 + v) : 0.0f;
            const T* xn = x + size_t(o.n) * g.d * g.h * g.w * g.c + size_t(k0 / kg) * cg;
            forEachTap<Transposed>(g, o, [&](int tap, size_t at) {
                const T* xp = xn + at * g.c;
                const float* wp = w + size_t(tap) * cg * g.k + k0;
                for (int c = 0; c < cg; ++c) {
                    const float xv = gpu::toFloat(xp[c]);
                    float wv[V];
                    loadWeights<V>(wp + size_t(c) * g.k, wv);
#pragma unroll
                    for (int v = 0; v < V; ++v)
                        acc[v] = fmaf(xv, wv[v], acc[v]);
                }
            });
            T* yp = y + size_t(pos) * g.k + k0;
#pragma unroll
            for (int v = 0; v < V; ++v) // a fused residual add's skip (stored like y), rounded as residualSum does
                yp[v] = gpu::fromFloat<T>(epilogue(act, actParam,
                    skip ? gpu::toFloat(gpu::fromFloat<T>(acc[v])) + gpu::toFloat(skip[yp - y + v]) : acc[v]));
        }
    }

    inline bool isDepthwise(const Conv3dGeometry& g) { return g.c == g.groups && g.k == g.groups; }

    inline unsigned blocksFor(long long total) { return unsigned(std::min<long long>((total + 255) / 256, 1LL << 30)); }

    // Picks the form and width for this layer and launches it (stored_conv.cu instantiates it for convolutions,
    // stored_conv_transpose.cu for transposed ones).
    template <bool Transposed>
    void launch(const Conv3dGeometry& g, int act, float actParam, DType type, const void* xv, const float* w,
        const float* bias, const void* skipv, void* yv, cudaStream_t st)
    {
        const long long positions = static_cast<long long>(g.n) * g.od * g.oh * g.ow;
        if (positions <= 0 || g.k <= 0)
            return;
        gpu::withStorageType(type, [&](auto tag) {
            using T = decltype(tag);
            const T* x = static_cast<const T*>(xv);
            T* y = static_cast<T*>(yv);
            const T* skip = static_cast<const T*>(skipv);
            if (isDepthwise(g)) {
                constexpr int P = kPack<T>;
                if (g.k % P == 0 && aligned16(x) && aligned16(y)) {
                    const long long total = positions * (g.k / P);
                    depthwiseKernel<T, P, Transposed>
                        <<<blocksFor(total), 256, 0, st>>>(g, act, actParam, x, w, bias, skip, y, unsigned(total));
                } else {
                    const long long total = positions * g.k;
                    depthwiseKernel<T, 1, Transposed>
                        <<<blocksFor(total), 256, 0, st>>>(g, act, actParam, x, w, bias, skip, y, unsigned(total));
                }
            } else if ((g.k / g.groups) % 4 == 0) {
                const long long total = positions * (g.k / 4);
                groupedKernel<T, 4, Transposed>
                    <<<blocksFor(total), 256, 0, st>>>(g, act, actParam, x, w, bias, skip, y, unsigned(total));
            } else {
                const long long total = positions * g.k;
                groupedKernel<T, 1, Transposed>
                    <<<blocksFor(total), 256, 0, st>>>(g, act, actParam, x, w, bias, skip, y, unsigned(total));
            }
        });
    }

} // namespace stored_conv

} // namespace convscope::cuda
