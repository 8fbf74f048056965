// conv2d for few input channels (C ≤ 4, C·R·S ≤ 64 taps, one group): a network's stem, such as 3→64 channels at
// 3×3 on a 512×512 image. cuda.implicit_gemm and cuda.winograd take this kernel when it applies.
//
// Why a kernel of its own. A stem's GEMM is 27 deep and 64 wide but millions of pixels long: the implicit GEMM
// pads the 27 to 32, spends its shared-memory double buffering on four short steps, and its output — 64 planes
// of the full image, 268 MB at batch 4 — dominates. Here every block keeps all the layer's weights for 64
// output channels in shared memory (≤ 16 KB, loaded once), each thread reads its input taps straight from
// global memory (the input is small: 3 planes, L1- and L2-resident) and computes 4 consecutive pixels of one row
// × KC output channels in registers: per tap 4 loads, KC/4 float4 weight reads that every lane of a warp shares
// (a broadcast), and 4·KC FMAs. The 4 pixels are one aligned float4 of each output plane, so a warp stores
// 128 consecutive pixels of a channel at once.
#include "kernels/cuda/conv2d.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/activation_op.cuh"

namespace convscope::cuda {

namespace {
    constexpr int kMaxChannels = 4;
    constexpr int kMaxTaps = 64; // C·R·S
    constexpr int kBlockChannels = 64; // output channels a block covers
    constexpr int kThreads = 256;
    constexpr int kPixelsPerThread = 4;

    // FixedS > 0 makes the kernel width a constant, so the tap loop unrolls and a row's loads are all in flight
    // before its FMAs (3×3 stems); 0 reads it from the geometry.
    template <int KC, int FixedS>
    __global__ void __launch_bounds__(kThreads) conv2dSmallChannelsKernel(ConvGeometry g, const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y)
    {
        constexpr int channelGroups = kBlockChannels / KC; // threads of one pixel group, one per KC channels
        constexpr int pixelGroups = kThreads / channelGroups;
        __shared__ __align__(16) float ws[kMaxTaps][kBlockChannels]; // [tap][channel]: a thread's KC are contiguous

        const int taps = g.c * g.r * g.s;
        const int kBase = blockIdx.y * kBlockChannels;
        for (int i = threadIdx.x; i < taps * kBlockChannels; i += kThreads) {
            const int t = i / kBlockChannels, k = i % kBlockChannels; // conflict-free shared stores; w is tiny
            ws[t][k] = kBase + k < g.k ? __ldg(w + static_cast<long long>(kBase + k) * taps + t) : 0.0f;
        }
        __syncthreads();

        // Consecutive threads take consecutive pixel groups (a warp: 128 consecutive pixels), one channel group.
        const int cgrp = threadIdx.x / pixelGroups;
        const long long group = static_cast<long long>(blockIdx.x) * pixelGroups + threadIdx.x % pixelGroups;
        const long long pixel = group * kPixelsPerThread; // q is a multiple of 4 (Q % 4 == 0 where this applies)
        const long long plane = static_cast<long long>(g.p) * g.q;
        if (pixel >= g.n * plane)
            return;
        const int n = static_cast<int>(pixel / plane);
        const int rem = static_cast<int>(pixel % plane);
        const int p = rem / g.q, q0 = rem % g.q;
        const int ihBase = p * g.strideH - g.padTop;
        const int iwBase = q0 * g.strideW - g.padLeft;
        const float* xn = x + static_cast<long long>(n) * g.c * g.h * g.w;

        const int kw = FixedS > 0 ? FixedS : g.s;
        float acc[kPixelsPerThread][KC] = {};
        for (int c = 0; c < g.c; ++c) {
            for (int r = 0; r < g.r; ++r) {
                const int ih = ihBase + r * g.dilH;
                if (static_cast<unsigned>(ih) >= static_cast<unsigned>(g.h))
                    continue; // a zero row of padding contributes nothing
                const float* row = xn + (static_cast<long long>(c) * g.h + ih) * g.w;
                const float* wt = &ws[(c * g.r + r) * kw][cgrp * KC];
#pragma unroll
                for (int s = 0; s < kw; ++s, wt += kBlockChannels) {
                    float v[kPixelsPerThread];
#pragma unroll
                    for (int j = 0; j < kPixelsPerThread; ++j) {
                        const int iw = iwBase + j * g.strideW + s * g.dilW;
                        v[j] = static_cast<unsigned>(iw) < static_cast<unsigned>(g.w) ? __ldg(row + iw) : 0.0f;
                    }
#pragma unroll
                    for (int k4 = 0; k4 < KC; k4 += 4) {
                        const float4 wk = *reinterpret_cast<const float4*>(wt + k4);
#pragma unroll
                        for (int j = 0; j < kPixelsPerThread; ++j) {
                            acc[j][k4 + 0] = fmaf(v[j], wk.x, acc[j][k4 + 0]);
                            acc[j][k4 + 1] = fmaf(v[j], wk.y, acc[j][k4 + 1]);
                            acc[j][k4 + 2] = fmaf(v[j], wk.z, acc[j][k4 + 2]);
                            acc[j][k4 + 3] = fmaf(v[j], wk.w, acc[j][k4 + 3]);
                        }
                    }
                }
            }
        }

        float* yp = y + static_cast<long long>(n) * g.k * plane + rem;
#pragma unroll
        for (int k = 0; k < KC; ++k) {
            const int m = kBase + cgrp * KC + k;
            if (m >= g.k)
                break;
            const float b = bias ? __ldg(bias + m) : 0.0f;
            const size_t at = static_cast<size_t>(yp + m * plane - y); // 4 outputs from here (a fused skip's)
            *reinterpret_cast<float4*>(yp + m * plane)
                = make_float4(epilogue(g.act, g.actParam, acc[0][k] + b + skipAt(g.residual, at)),
                    epilogue(g.act, g.actParam, acc[1][k] + b + skipAt(g.residual, at + 1)),
                    epilogue(g.act, g.actParam, acc[2][k] + b + skipAt(g.residual, at + 2)),
                    epilogue(g.act, g.actParam, acc[3][k] + b + skipAt(g.residual, at + 3)));
        }
    }
} // namespace

bool conv2dSmallChannelsApplies(const ConvGeometry& g)
{
    // Q % 4: a thread's 4 pixels lie in one row and form one aligned float4 (the output tensor is 256-byte
    // aligned and every plane's size is then a multiple of 4 floats too).
    return g.groups == 1 && g.c <= kMaxChannels && g.c * g.r * g.s <= kMaxTaps && g.q % kPixelsPerThread == 0;
}

std::string conv2dSmallChannelsNote(const ConvGeometry& g)
{
    return std::to_string(g.c) + " input channels, " + std::to_string(g.c * g.r * g.s)
        + " taps: weights in shared memory, 4 pixels x 16 output channels per thread, float4 stores";
}

void conv2dSmallChannels(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    constexpr int kc = 16;
    constexpr int pixelsPerBlock = kThreads / (kBlockChannels / kc) * kPixelsPerThread;
    const long long pixels = static_cast<long long>(g.n) * g.p * g.q;
    const dim3 grid(static_cast<unsigned>((pixels + pixelsPerBlock - 1) / pixelsPerBlock),
        static_cast<unsigned>((g.k + kBlockChannels - 1) / kBlockChannels));
    if (g.s == 3)
        conv2dSmallChannelsKernel<kc, 3><<<grid, kThreads, 0, st>>>(g, x, w, bias, y);
    else
        conv2dSmallChannelsKernel<kc, 0><<<grid, kThreads, 0, st>>>(g, x, w, bias, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d small-channel kernel");
}

} // namespace convscope::cuda
