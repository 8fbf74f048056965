#include "kernels/cuda/training/conv2d_winograd_wgrad.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/conv2d_backward_weights.cuh"
#include "kernels/cuda/winograd_transforms.cuh"

#include <limits>

namespace convscope::cuda::train {

namespace {
    using winograd::leftMul;
    using winograd::rightMulT;
    using W = winograd::Winograd<2>;
    constexpr int kPositions = 16; // the 4×4 transformed tile

    // A = (A^T)^T (4×2) and G^T (3×4): the transposes of F(2×2, 3×3)'s matrices.
    struct A {
        __device__ static float at(int i, int k) { return W::AT::at(k, i); }
    };
    struct GT {
        __device__ static float at(int i, int k) { return W::G::at(k, i); }
    };

    struct Layout {
        int tilesH, tilesW;
        long long tiles; // T = N · tilesH · tilesW
        size_t vFloats, eFloats, mFloats;
    };
    Layout layoutOf(const ConvGeometry& g)
    {
        Layout l {};
        l.tilesH = (g.p + 1) / 2;
        l.tilesW = (g.q + 1) / 2;
        l.tiles = static_cast<long long>(g.n) * l.tilesH * l.tilesW;
        l.vFloats = size_t(kPositions) * g.c * l.tiles;
        l.eFloats = size_t(kPositions) * g.k * l.tiles;
        l.mFloats = size_t(kPositions) * g.k * g.c;
        return l;
    }

    // E = A dy A^T for every (output channel, 2×2 block of dy), zero beyond P or Q, stored [16][K][T].
    __global__ void gradientTransformKernel(
        ConvGeometry g, int tilesH, int tilesW, int tiles, const float* __restrict__ dy, float* __restrict__ e)
    {
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; // (k, tile), tile fastest
        if (idx >= static_cast<long long>(g.k) * tiles)
            return;
        const int k = static_cast<int>(idx / tiles), t = static_cast<int>(idx % tiles);
        const int n = t / (tilesH * tilesW), rem = t % (tilesH * tilesW);
        const int p0 = (rem / tilesW) * 2, q0 = (rem % tilesW) * 2;
        const float* dp = dy + (static_cast<long long>(n) * g.k + k) * g.p * g.q;
        float d[2][2];
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j)
                d[i][j]
                    = p0 + i < g.p && q0 + j < g.q ? __ldg(dp + static_cast<long long>(p0 + i) * g.q + q0 + j) : 0.0f;
        float half[4][2], r[4][4];
        leftMul<A>(d, half);
        rightMulT<A>(half, r);
        const long long plane = static_cast<long long>(g.k) * tiles;
#pragma unroll
        for (int i = 0; i < kPositions; ++i)
            e[i * plane + idx] = r[i / 4][i % 4];
    }

    // dW = G^T M G for every (k, c) from the 16 products M [16][K][C].
    __global__ void weightGradientTransformKernel(int k, int c, const float* __restrict__ m, float* __restrict__ dw)
    {
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; // (kk, cc), cc fastest
        if (idx >= static_cast<long long>(k) * c)
            return;
        const long long plane = static_cast<long long>(k) * c;
        float a[4][4];
#pragma unroll
        for (int i = 0; i < kPositions; ++i)
            a[i / 4][i % 4] = __ldg(m + i * plane + idx);
        float half[3][4], out[3][3];
        leftMul<GT>(a, half);
        rightMulT<GT>(half, out);
#pragma unroll
        for (int i = 0; i < 9; ++i)
            dw[idx * 9 + i] = out[i / 3][i % 3];
    }

    unsigned blocksOf(long long n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }
} // namespace

std::string conv2dWinogradWgradRefusal(const ConvGeometry& g)
{
    if (g.r != 3 || g.s != 3 || g.strideH != 1 || g.strideW != 1 || g.dilH != 1 || g.dilW != 1)
        return "the Winograd weight gradient F(3x3,2x2) needs a 3x3 kernel with stride 1 and dilation 1";
    if (g.groups != 1)
        return "the Winograd weight gradient is implemented for one group only";
    // Each of the 16 products is K × C: with few channels their tiles run nearly empty while the transforms still
    // move 4× the input (the unet's 3 → 64 stem: 0.50 ms against the implicit GEMM's 0.14 on an H200).
    if (g.c < 16 || g.k < 16)
        return "the Winograd weight gradient needs 16 or more input and output channels (fewer leave its products' "
               "tiles nearly empty)";
    // On TF32 tiles the direct product is cheap enough that the transforms' traffic pays only on wide layers (the
    // unet's 128 → 128 at 64²: 0.32 ms against 0.40; its 64-channel layers: 0.55 against 0.50 and 0.243 against 0.237).
    if (g.tf32 == 1 && (g.c < 128 || g.k < 128))
        return "the Winograd weight gradient on TF32 tiles needs 128 or more input and output channels";
    const Layout l = layoutOf(g);
    constexpr long long kMax = std::numeric_limits<int>::max();
    if (static_cast<long long>(kPositions) * g.c * l.tiles > kMax
        || static_cast<long long>(kPositions) * g.k * l.tiles > kMax)
        return "the transformed tiles would exceed 2^31 elements (32-bit indexing)";
    return {};
}

ConvGeometry conv2dWinogradWgradGemm(const ConvGeometry& g)
{
    // x: V as [1, 16·C, 1, T]; dy: E as [1, 16·K, 1, T]; dW: M as [16·K, C, 1, 1]; 16 groups, one per position.
    const int t = static_cast<int>(layoutOf(g).tiles);
    ConvGeometry gemm { 1, kPositions * g.c, 1, t, kPositions * g.k, 1, t, 1, 1, 1, 1, 0, 0, 1, 1, kPositions };
    gemm.tf32 = g.tf32 == 1 ? 1 : 0; // cuda.tensor_core in tf32: the products on its TF32 tiles
    return gemm;
}

size_t conv2dWinogradWgradScratchBytes(const ConvGeometry& g)
{
    const Layout l = layoutOf(g);
    return (l.vFloats + l.eFloats + l.mFloats) * sizeof(float);
}

std::string conv2dWinogradWgradNote(const ConvGeometry& g, int sms)
{
    const Layout l = layoutOf(g);
    const std::string prefix = "backward-weights: "; // the GEMM's note names the phase; this note names it once
    std::string gemm = conv2dWgradNote(conv2dWinogradWgradGemm(g), sms);
    if (gemm.rfind(prefix, 0) == 0)
        gemm.erase(0, prefix.size());
    return prefix + "Winograd F(3x3,2x2): " + std::to_string(l.tiles) + " blocks of 2x2, 16 products "
        + std::to_string(g.k) + "x" + std::to_string(g.c) + " over them (" + gemm + "), "
        + std::to_string(conv2dWinogradWgradScratchBytes(g) >> 20) + " MiB of transformed tiles";
}

void conv2dWinogradBackwardWeights(const ConvGeometry& g, const float* x, const float* dy, float* dw, void* scratch,
    float* workspace, int sms, cudaStream_t st)
{
    const Layout l = layoutOf(g);
    auto* v = static_cast<float*>(scratch);
    float* e = v + l.vFloats;
    float* m = e + l.eFloats;
    constexpr int threads = 256;
    const int t = static_cast<int>(l.tiles);
    winograd::inputTransformKernel<2>
        <<<blocksOf(static_cast<long long>(g.c) * t, threads), threads, 0, st>>>(g, l.tilesH, l.tilesW, t, x, v);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd weight gradient: input transform");
    gradientTransformKernel<<<blocksOf(static_cast<long long>(g.k) * t, threads), threads, 0, st>>>(
        g, l.tilesH, l.tilesW, t, dy, e);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd weight gradient: output-gradient transform");
    conv2dBackwardWeights(conv2dWinogradWgradGemm(g), v, e, m, workspace, sms, st);
    weightGradientTransformKernel<<<blocksOf(static_cast<long long>(g.k) * g.c, threads), threads, 0, st>>>(
        g.k, g.c, m, dw);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd weight gradient: output transform");
}

} // namespace convscope::cuda::train
