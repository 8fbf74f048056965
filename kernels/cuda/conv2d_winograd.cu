// conv2d, cuda.winograd: Winograd's minimal filtering F(m×m, 3×3), m = 4 (default) or 2, for 3×3 convolutions
// with stride 1, dilation 1 and one group (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
//
// Algorithm. Each m×m block of outputs of one channel needs an n×n patch d (n = m + 2) of each input channel.
// With the transform matrices B^T (n×n), G (n×3) and A^T (m×n) below, the block is
//   Y = A^T [ Σ_c (G g_kc G^T) ⊙ (B^T d_c B) ] A
// — n² multiplies per channel pair instead of the 9m² of the direct form: F(2×2) saves 2.25×, F(4×4) 4×.
// The sum over channels is, for each of the n² positions ξ of the transformed tile, an ordinary matrix
// product, and that is what makes the method fast:
//   M[ξ] (K × T) = U[ξ] (K × C) · V[ξ] (C × T),   T = N·⌈P/m⌉·⌈Q/m⌉ output tiles.
// So this is the "non-fused" form, four steps on the layer's scratch:
//   1. weights → U = G g G^T, [n²][K][C] (every call: it is part of the layer's cost, as it is in cuDNN's);
//   2. input → V = B^T d B, [n²][C][T], zero outside the input (padding, and the bottom/right edge tiles);
//   3. n² GEMMs at once through cuda.implicit_gemm's kernel, posed as a 1×1 convolution with n² groups on a
//      [1, n²·C, 1, T] "image" — the same register-tiled, double-buffered code, no second GEMM to maintain;
//   4. M → Y = A^T m A, plus bias and the fused activation; outputs beyond P or Q are dropped.
// Steps 2 and 4 are memory-bound: V and M are (n/m)² times the input and output — 4× for F(2×2), 2.25× for
// F(4×4) — so the larger tile wins twice, on multiplies and on traffic. Its price is accuracy: its transforms
// scale by up to 8 and by 1/24, and in FP32 it lands ~1e-6 from exact where F(2×2) lands ~3e-7 (both add the
// GEMM's own accumulation error, which grows with C). Both stay inside the 1e-5 every algorithm is held to;
// `--option winograd_tile=2` picks the more accurate one.
#include "kernels/cuda/conv2d.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/activation_op.cuh"
#include "kernels/cuda/winograd_transforms.cuh"

#include <limits>

namespace convscope::cuda {

namespace {
    constexpr size_t kAlign = 256;
    size_t alignUp(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

    using winograd::inputTransformKernel;
    using winograd::leftMul;
    using winograd::rightMulT;
    using winograd::Winograd;

    struct WinogradLayout {
        int m, n2; // output tile m×m, transformed tile n×n with n2 = n² positions
        long long tilesH, tilesW, tiles; // T = N · tilesH · tilesW
        size_t tableBytes, uBytes, vBytes, mBytes;
    };

    WinogradLayout layoutOf(const ConvGeometry& g, int m)
    {
        WinogradLayout l {};
        l.m = m;
        l.n2 = (m + 2) * (m + 2);
        l.tilesH = (g.p + m - 1) / m;
        l.tilesW = (g.q + m - 1) / m;
        l.tiles = static_cast<long long>(g.n) * l.tilesH * l.tilesW;
        l.tableBytes = alignUp(static_cast<size_t>(g.c) * sizeof(int2));
        l.uBytes = alignUp(static_cast<size_t>(l.n2) * g.k * g.c * sizeof(float));
        l.vBytes = alignUp(static_cast<size_t>(l.n2) * g.c * l.tiles * sizeof(float));
        l.mBytes = alignUp(static_cast<size_t>(l.n2) * g.k * l.tiles * sizeof(float));
        return l;
    }

    // The batched GEMM of step 3 as a convolution the implicit GEMM kernel already runs: input V as
    // [1, n²·C, 1, T], weights U as [n²·K, C, 1, 1], n² groups, output M as [1, n²·K, 1, T].
    ConvGeometry gemmGeometry(const ConvGeometry& g, const WinogradLayout& l)
    {
        const int t = static_cast<int>(l.tiles);
        ConvGeometry gemm { 1, l.n2 * g.c, 1, t, l.n2 * g.k, 1, t, 1, 1, 1, 1, 0, 0, 1, 1, l.n2 };
        gemm.igemmTile = g.igemmTile; // a tile override reaches the batched GEMMs too
        return gemm;
    }

    template <int M>
    __global__ void weightTransformKernel(int k, int c, const float* __restrict__ w, float* __restrict__ u)
    {
        using W = Winograd<M>;
        constexpr int N = W::N;
        const int idx = blockIdx.x * blockDim.x + threadIdx.x; // (kk, cc), cc fastest: coalesced U writes
        if (idx >= k * c)
            return;
        float gk[3][3];
#pragma unroll
        for (int i = 0; i < 9; ++i)
            gk[i / 3][i % 3] = __ldg(w + static_cast<long long>(idx) * 9 + i);
        float t[N][3], r[N][N];
        leftMul<typename W::G>(gk, t);
        rightMulT<typename W::G>(t, r);
        const long long plane = static_cast<long long>(k) * c;
#pragma unroll
        for (int i = 0; i < N * N; ++i)
            u[i * plane + idx] = r[i / N][i % N];
    }

    template <int M>
    __global__ void outputTransformKernel(ConvGeometry g, int tilesH, int tilesW, int tiles,
        const float* __restrict__ m, const float* __restrict__ bias, float* __restrict__ y)
    {
        using W = Winograd<M>;
        constexpr int N = W::N;
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; // (k, tile), tile fastest
        if (idx >= static_cast<long long>(g.k) * tiles)
            return;
        const int k = static_cast<int>(idx / tiles), t = static_cast<int>(idx % tiles);
        const int n = t / (tilesH * tilesW), rem = t % (tilesH * tilesW);
        const int p0 = (rem / tilesW) * M, q0 = (rem % tilesW) * M;
        const long long plane = static_cast<long long>(g.k) * tiles;
        float a[N][N];
#pragma unroll
        for (int i = 0; i < N * N; ++i)
            a[i / N][i % N] = __ldg(m + i * plane + idx);
        float s[M][N], out[M][M];
        leftMul<typename W::AT>(a, s);
        rightMulT<typename W::AT>(s, out);
        const float b = bias ? __ldg(bias + k) : 0.0f;
        float* yp = y + (static_cast<long long>(n) * g.k + k) * g.p * g.q;
#pragma unroll
        for (int i = 0; i < M; ++i)
#pragma unroll
            for (int j = 0; j < M; ++j)
                if (p0 + i < g.p && q0 + j < g.q)
                    yp[static_cast<long long>(p0 + i) * g.q + q0 + j] = epilogue(g.act, g.actParam,
                        out[i][j] + b + skipAt(g.residual, yp - y + static_cast<long long>(p0 + i) * g.q + q0 + j));
    }

    unsigned blocksOf(long long n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

    template <int M>
    void launchTransformsAndGemm(const ConvGeometry& g, const WinogradLayout& l, const float* x, const float* w,
        const float* bias, float* y, char* base, int smCount, cudaStream_t st)
    {
        auto* table = base;
        auto* u = reinterpret_cast<float*>(base + l.tableBytes);
        auto* v = reinterpret_cast<float*>(base + l.tableBytes + l.uBytes);
        auto* mm = reinterpret_cast<float*>(base + l.tableBytes + l.uBytes + l.vBytes);
        constexpr int threads = 256;
        weightTransformKernel<M>
            <<<blocksOf(static_cast<long long>(g.k) * g.c, threads), threads, 0, st>>>(g.k, g.c, w, u);
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd weight transform");
        const int th = static_cast<int>(l.tilesH), tw = static_cast<int>(l.tilesW), t = static_cast<int>(l.tiles);
        inputTransformKernel<M>
            <<<blocksOf(static_cast<long long>(g.c) * t, threads), threads, 0, st>>>(g, th, tw, t, x, v);
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd input transform");
        conv2dImplicitGemm(gemmGeometry(g, l), v, u, nullptr, mm, table, smCount, st);
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd batched GEMM");
        outputTransformKernel<M>
            <<<blocksOf(static_cast<long long>(g.k) * t, threads), threads, 0, st>>>(g, th, tw, t, mm, bias, y);
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd output transform");
    }
} // namespace

std::string conv2dWinogradRefusal(const ConvGeometry& g, int m)
{
    if (m != 2 && m != 4)
        return "Winograd output tiles are 2x2 or 4x4, not " + std::to_string(m) + "x" + std::to_string(m);
    if (g.r != 3 || g.s != 3 || g.strideH != 1 || g.strideW != 1 || g.dilH != 1 || g.dilW != 1)
        return "Winograd F(mxm,3x3) needs a 3x3 kernel with stride 1 and dilation 1";
    if (g.groups != 1)
        return "Winograd F(mxm,3x3) is implemented for one group only";
    const WinogradLayout l = layoutOf(g, m);
    constexpr long long kMax = std::numeric_limits<int>::max();
    if (static_cast<long long>(l.n2) * g.c * l.tiles > kMax || static_cast<long long>(l.n2) * g.k * l.tiles > kMax)
        return "the transformed tiles would exceed 2^31 elements (32-bit indexing)";
    return {};
}

size_t conv2dWinogradScratchBytes(const ConvGeometry& g, int m)
{
    const WinogradLayout l = layoutOf(g, m);
    return l.tableBytes + l.uBytes + l.vBytes + l.mBytes;
}

void conv2dWinogradPrepare(const ConvGeometry& g, int m, void* scratch, cudaStream_t st)
{
    conv2dImplicitGemmBuildTable(gemmGeometry(g, layoutOf(g, m)), scratch, st);
}

std::string conv2dWinogradNote(const ConvGeometry& g, int m, int smCount)
{
    const WinogradLayout l = layoutOf(g, m);
    const std::string mm = std::to_string(m) + "x" + std::to_string(m);
    return "Winograd F(" + mm + ",3x3): " + std::to_string(l.tiles) + " tiles, " + std::to_string(l.n2) + " GEMMs "
        + std::to_string(g.k) + "x" + std::to_string(g.c) + " by " + std::to_string(g.c) + "x" + std::to_string(l.tiles)
        + " (" + conv2dImplicitGemmVariant(gemmGeometry(g, l), smCount) + "), "
        + std::to_string(conv2dWinogradScratchBytes(g, m) >> 20) + " MiB of transformed tiles";
}

void conv2dWinograd(const ConvGeometry& g, int m, const float* x, const float* w, const float* bias, float* y,
    void* scratch, int smCount, cudaStream_t st)
{
    const WinogradLayout l = layoutOf(g, m);
    auto* base = static_cast<char*>(scratch);
    if (m == 4)
        launchTransformsAndGemm<4>(g, l, x, w, bias, y, base, smCount, st);
    else
        launchTransformsAndGemm<2>(g, l, x, w, bias, y, base, smCount, st);
}

} // namespace convscope::cuda
