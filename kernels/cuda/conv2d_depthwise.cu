// Depthwise conv2d (groups = C: each output channel reads one input channel, MobileNet's and EfficientNet's 3×3 and
// 5×5 layers), taken by the GEMM-family algorithms (cuda.implicit_gemm, cuda.winograd, cuda.tensor_core's FP32
// layers). As a GEMM it is one output channel by 9 or 25 taps per group: the implicit GEMM's 32×64 tiles were
// almost empty and ran 4–6× behind cuDNN on DeepLabV3 (MobileNetV3). Here a block takes a run of output pixels of one
// (sample, channel) plane with the channel's taps in shared memory; each thread sums one output in the direct
// kernel's order (bias, then the taps row by row: the same rounding as cuda.direct), the input reads coalesced
// along the row and served by L1 for the neighbouring taps. 3×3 and 5×5 have their taps unrolled at compile time.
#include "kernels/cuda/conv2d.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/activation_op.cuh"

#include <algorithm>
#include <string>

namespace convscope::cuda {

namespace {
    constexpr int kMaxTaps = 256;

    template <int R, int S>
    __global__ void __launch_bounds__(256)
        conv2dDepthwiseKernel(ConvGeometry g, const float* __restrict__ x, const float* __restrict__ w,
            const float* __restrict__ bias, float* __restrict__ y, long long tilesPerPlane, long long blocks)
    {
        __shared__ float taps[kMaxTaps];
        const int rr = R ? R : g.r, ss = S ? S : g.s;
        const int pq = g.p * g.q, perGroup = g.k / g.groups;
        for (long long b = blockIdx.x; b < blocks; b += gridDim.x) {
            const long long plane = b / tilesPerPlane; // n · K + k
            const int tile = static_cast<int>(b - plane * tilesPerPlane);
            const int k = static_cast<int>(plane % g.k), n = static_cast<int>(plane / g.k);
            __syncthreads(); // the previous plane's taps are read
            for (int t = threadIdx.x; t < rr * ss; t += blockDim.x)
                taps[t] = w[static_cast<long long>(k) * rr * ss + t];
            __syncthreads();
            const int o = tile * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
            if (o >= pq)
                continue;
            const int p = o / g.q, q = o - p * g.q;
            const float* xp = x + (static_cast<long long>(n) * g.c + k / perGroup) * g.h * g.w;
            const int ih0 = p * g.strideH - g.padTop, iw0 = q * g.strideW - g.padLeft;
            float acc = bias ? bias[k] : 0.0f;
#pragma unroll
            for (int r = 0; r < rr; ++r) {
                const int ih = ih0 + r * g.dilH;
                if (ih < 0 || ih >= g.h)
                    continue;
#pragma unroll
                for (int s = 0; s < ss; ++s) {
                    const int iw = iw0 + s * g.dilW;
                    if (iw >= 0 && iw < g.w)
                        acc = fmaf(xp[ih * g.w + iw], taps[r * ss + s], acc);
                }
            }
            const long long idx = plane * pq + o;
            y[idx] = epilogue(g.act, g.actParam, acc + skipAt(g.residual, idx));
        }
    }
} // namespace

bool conv2dDepthwiseApplies(const ConvGeometry& g)
{
    return g.groups > 1 && g.c == g.groups && g.r * g.s <= kMaxTaps && static_cast<long long>(g.p) * g.q < (1LL << 31)
        && static_cast<long long>(g.h) * g.w < (1LL << 31);
}

std::string conv2dDepthwiseNote(const ConvGeometry& g)
{
    const bool unrolled = (g.r == 3 && g.s == 3) || (g.r == 5 && g.s == 5);
    return "depthwise: a block per run of one plane's pixels, the channel's " + std::to_string(g.r) + "x"
        + std::to_string(g.s) + " taps in shared memory" + (unrolled ? ", unrolled" : "");
}

void conv2dDepthwise(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const int pq = g.p * g.q;
    if (pq <= 0 || g.n <= 0 || g.k <= 0)
        return;
    const int threads = std::clamp((pq + 31) / 32 * 32, 64, 256);
    const long long tilesPerPlane = (pq + threads - 1) / threads;
    const long long blocks = static_cast<long long>(g.n) * g.k * tilesPerPlane;
    const unsigned grid = static_cast<unsigned>(std::min<long long>(blocks, 1LL << 22));
    if (g.r == 3 && g.s == 3)
        conv2dDepthwiseKernel<3, 3><<<grid, threads, 0, st>>>(g, x, w, bias, y, tilesPerPlane, blocks);
    else if (g.r == 5 && g.s == 5)
        conv2dDepthwiseKernel<5, 5><<<grid, threads, 0, st>>>(g, x, w, bias, y, tilesPerPlane, blocks);
    else
        conv2dDepthwiseKernel<0, 0><<<grid, threads, 0, st>>>(g, x, w, bias, y, tilesPerPlane, blocks);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d depthwise");
}

} // namespace convscope::cuda
