// conv2d, cuda.winograd: Winograd's minimal filtering F(2×2, 3×3) for 3×3 convolutions with stride 1, dilation 1
// and one group (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
//
// Algorithm. Each 2×2 block of outputs of one channel needs a 4×4 patch d of each input channel. With the
// transforms
//   B^T = | 1  0 -1  0 |     G = | 1    0    0   |     A^T = | 1  1  1  0 |
//         | 0  1  1  0 |         | 1/2  1/2  1/2 |           | 0  1 -1 -1 |
//         | 0 -1  1  0 |         | 1/2 -1/2  1/2 |
//         | 0  1  0 -1 |         | 0    0    1   |
// the 2×2 outputs are Y = A^T [ Σ_c (G g_kc G^T) ⊙ (B^T d_c B) ] A: 16 multiplies per channel pair instead of
// the 36 of the direct form, 2.25× fewer. The sum over channels is, for each of the 16 positions ξ of the 4×4
// tile, an ordinary matrix product, and that is what makes the method fast:
//   M[ξ] (K × T) = U[ξ] (K × C) · V[ξ] (C × T),   T = N·⌈P/2⌉·⌈Q/2⌉ output tiles.
// So this is the "non-fused" form, four steps on the layer's scratch:
//   1. weights → U = G g G^T, [16][K][C] (every call: it is part of the layer's cost, as it is in cuDNN's);
//   2. input → V = B^T d B, [16][C][T], zero outside the input (padding, and the bottom/right edge tiles);
//   3. 16 GEMMs at once through cuda.implicit_gemm's kernel, posed as a 1×1 convolution with 16 groups on a
//      [1, 16·C, 1, T] "image" — the same register-tiled, double-buffered code, no second GEMM to maintain;
//   4. M → Y = A^T m A, plus bias and the fused activation; outputs beyond P or Q are dropped.
// Steps 2 and 4 are memory-bound (V and M are 4× the input and output), so the method pays where the channel
// count is high enough for the GEMMs' 2.25× saving to outweigh that traffic — the deeper U-Net layers.
// Accuracy: the transforms only add, subtract and halve, so FP32 results stay within ~1e-7 relative of direct.
#include "kernels/cuda/conv2d.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/activation_op.cuh"

#include <limits>

namespace convscope::cuda {

namespace {
    constexpr int kTile = 16; // positions of the 4×4 transformed tile
    constexpr size_t kAlign = 256;

    size_t alignUp(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

    struct WinogradLayout {
        long long tilesH, tilesW, tiles; // T = N · tilesH · tilesW
        size_t tableBytes, uBytes, vBytes, mBytes;
    };

    WinogradLayout layoutOf(const ConvGeometry& g)
    {
        WinogradLayout l {};
        l.tilesH = (g.p + 1) / 2;
        l.tilesW = (g.q + 1) / 2;
        l.tiles = static_cast<long long>(g.n) * l.tilesH * l.tilesW;
        l.tableBytes = alignUp(static_cast<size_t>(g.c) * sizeof(int2));
        l.uBytes = alignUp(static_cast<size_t>(kTile) * g.k * g.c * sizeof(float));
        l.vBytes = alignUp(static_cast<size_t>(kTile) * g.c * l.tiles * sizeof(float));
        l.mBytes = alignUp(static_cast<size_t>(kTile) * g.k * l.tiles * sizeof(float));
        return l;
    }

    // The batched GEMM of step 3 as a convolution the implicit GEMM kernel already runs: input V as
    // [1, 16·C, 1, T], weights U as [16·K, C, 1, 1], 16 groups, output M as [1, 16·K, 1, T].
    ConvGeometry gemmGeometry(const ConvGeometry& g, const WinogradLayout& l)
    {
        const int t = static_cast<int>(l.tiles);
        return { 1, kTile * g.c, 1, t, kTile * g.k, 1, t, 1, 1, 1, 1, 0, 0, 1, 1, kTile };
    }

    __global__ void weightTransformKernel(int k, int c, const float* __restrict__ w, float* __restrict__ u)
    {
        const int idx = blockIdx.x * blockDim.x + threadIdx.x; // (kk, cc), cc fastest: coalesced U writes
        if (idx >= k * c)
            return;
        const float* gp = w + static_cast<long long>(idx) * 9;
        float gk[3][3];
#pragma unroll
        for (int i = 0; i < 9; ++i)
            gk[i / 3][i % 3] = __ldg(gp + i);
        float t[4][3]; // G g
#pragma unroll
        for (int j = 0; j < 3; ++j) {
            t[0][j] = gk[0][j];
            t[1][j] = 0.5f * (gk[0][j] + gk[1][j] + gk[2][j]);
            t[2][j] = 0.5f * (gk[0][j] - gk[1][j] + gk[2][j]);
            t[3][j] = gk[2][j];
        }
        const long long plane = static_cast<long long>(k) * c;
#pragma unroll
        for (int i = 0; i < 4; ++i) { // (G g) G^T
            const float v[4] = { t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]), 0.5f * (t[i][0] - t[i][1] + t[i][2]),
                t[i][2] };
#pragma unroll
            for (int j = 0; j < 4; ++j)
                u[(4 * i + j) * plane + idx] = v[j];
        }
    }

    __global__ void inputTransformKernel(ConvGeometry g, int tilesH, int tilesW, int tiles, const float* __restrict__ x,
        float* __restrict__ v)
    {
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; // (c, tile), tile fastest
        if (idx >= static_cast<long long>(g.c) * tiles)
            return;
        const int c = static_cast<int>(idx / tiles), t = static_cast<int>(idx % tiles);
        const int n = t / (tilesH * tilesW), rem = t % (tilesH * tilesW);
        const int h0 = (rem / tilesW) * 2 - g.padTop, w0 = (rem % tilesW) * 2 - g.padLeft;
        const float* xp = x + (static_cast<long long>(n) * g.c + c) * g.h * g.w;
        float d[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int ih = h0 + i, iw = w0 + j;
                d[i][j] = static_cast<unsigned>(ih) < static_cast<unsigned>(g.h)
                        && static_cast<unsigned>(iw) < static_cast<unsigned>(g.w)
                    ? __ldg(xp + static_cast<long long>(ih) * g.w + iw)
                    : 0.0f;
            }
        float b[4][4]; // B^T d
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            b[0][j] = d[0][j] - d[2][j];
            b[1][j] = d[1][j] + d[2][j];
            b[2][j] = d[2][j] - d[1][j];
            b[3][j] = d[1][j] - d[3][j];
        }
        const long long plane = static_cast<long long>(g.c) * tiles;
#pragma unroll
        for (int i = 0; i < 4; ++i) { // (B^T d) B
            const float r[4] = { b[i][0] - b[i][2], b[i][1] + b[i][2], b[i][2] - b[i][1], b[i][1] - b[i][3] };
#pragma unroll
            for (int j = 0; j < 4; ++j)
                v[(4 * i + j) * plane + idx] = r[j];
        }
    }

    __global__ void outputTransformKernel(ConvGeometry g, int tilesH, int tilesW, int tiles, const float* __restrict__ m,
        const float* __restrict__ bias, float* __restrict__ y)
    {
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; // (k, tile), tile fastest
        if (idx >= static_cast<long long>(g.k) * tiles)
            return;
        const int k = static_cast<int>(idx / tiles), t = static_cast<int>(idx % tiles);
        const int n = t / (tilesH * tilesW), rem = t % (tilesH * tilesW);
        const int p0 = (rem / tilesW) * 2, q0 = (rem % tilesW) * 2;
        const long long plane = static_cast<long long>(g.k) * tiles;
        float a[4][4];
#pragma unroll
        for (int i = 0; i < 16; ++i)
            a[i / 4][i % 4] = __ldg(m + i * plane + idx);
        float s[2][4]; // A^T m
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            s[0][j] = a[0][j] + a[1][j] + a[2][j];
            s[1][j] = a[1][j] - a[2][j] - a[3][j];
        }
        const float b = bias ? __ldg(bias + k) : 0.0f;
        float* yp = y + (static_cast<long long>(n) * g.k + k) * g.p * g.q;
#pragma unroll
        for (int i = 0; i < 2; ++i) { // (A^T m) A
            const float out[2] = { s[i][0] + s[i][1] + s[i][2], s[i][1] - s[i][2] - s[i][3] };
#pragma unroll
            for (int j = 0; j < 2; ++j)
                if (p0 + i < g.p && q0 + j < g.q)
                    yp[static_cast<long long>(p0 + i) * g.q + q0 + j] = epilogue(g.act, g.actParam, out[j] + b);
        }
    }

    unsigned blocksOf(long long n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }
} // namespace

std::string conv2dWinogradRefusal(const ConvGeometry& g)
{
    if (g.r != 3 || g.s != 3 || g.strideH != 1 || g.strideW != 1 || g.dilH != 1 || g.dilW != 1)
        return "Winograd F(2x2,3x3) needs a 3x3 kernel with stride 1 and dilation 1";
    if (g.groups != 1)
        return "Winograd F(2x2,3x3) is implemented for one group only";
    const WinogradLayout l = layoutOf(g);
    constexpr long long kMax = std::numeric_limits<int>::max();
    if (static_cast<long long>(kTile) * g.c * l.tiles > kMax || static_cast<long long>(kTile) * g.k * l.tiles > kMax)
        return "the transformed tiles would exceed 2^31 elements (32-bit indexing); use cuda.implicit_gemm";
    return {};
}

size_t conv2dWinogradScratchBytes(const ConvGeometry& g)
{
    const WinogradLayout l = layoutOf(g);
    return l.tableBytes + l.uBytes + l.vBytes + l.mBytes;
}

void conv2dWinogradPrepare(const ConvGeometry& g, void* scratch, cudaStream_t st)
{
    conv2dImplicitGemmBuildTable(gemmGeometry(g, layoutOf(g)), scratch, st);
}

std::string conv2dWinogradNote(const ConvGeometry& g, int smCount)
{
    const WinogradLayout l = layoutOf(g);
    return "Winograd F(2x2,3x3): " + std::to_string(l.tiles) + " tiles, 16 GEMMs " + std::to_string(g.k) + "x"
        + std::to_string(g.c) + " by " + std::to_string(g.c) + "x" + std::to_string(l.tiles) + " ("
        + conv2dImplicitGemmVariant(gemmGeometry(g, l), smCount) + "), "
        + std::to_string(conv2dWinogradScratchBytes(g) >> 20) + " MiB of transformed tiles";
}

void conv2dWinograd(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, void* scratch,
    int smCount, cudaStream_t st)
{
    const WinogradLayout l = layoutOf(g);
    auto* base = static_cast<char*>(scratch);
    const auto* table = base;
    auto* u = reinterpret_cast<float*>(base + l.tableBytes);
    auto* v = reinterpret_cast<float*>(base + l.tableBytes + l.uBytes);
    auto* m = reinterpret_cast<float*>(base + l.tableBytes + l.uBytes + l.vBytes);
    constexpr int threads = 256;
    weightTransformKernel<<<blocksOf(static_cast<long long>(g.k) * g.c, threads), threads, 0, st>>>(g.k, g.c, w, u);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd weight transform");
    const int th = static_cast<int>(l.tilesH), tw = static_cast<int>(l.tilesW), t = static_cast<int>(l.tiles);
    inputTransformKernel<<<blocksOf(static_cast<long long>(g.c) * t, threads), threads, 0, st>>>(g, th, tw, t, x, v);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd input transform");
    conv2dImplicitGemm(gemmGeometry(g, l), v, u, nullptr, m, table, smCount, st);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd batched GEMM");
    outputTransformKernel<<<blocksOf(static_cast<long long>(g.k) * t, threads), threads, 0, st>>>(
        g, th, tw, t, m, bias, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d Winograd output transform");
}

} // namespace convscope::cuda
