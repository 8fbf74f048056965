// conv2d's weight gradient as an implicit GEMM over N·P·Q, split-K where that reduction is long.
//
// Algorithm. Per group, dW[m, n] = Σ_k A[m, k]·B[k, n] with m an output channel of the group, n = (c, r, s) a weight
// column and k = (img, p, q) an output position (backward_index.h gives A and B and their index math). Neither
// operand is materialised: a block owns a 64×64 tile of dW and walks its k-run in 16-deep steps, each thread loading
// four elements of A (the output gradient) and four of B (the input taps, zero in the padding) into shared memory,
// then every thread accumulates its 4×4 outputs from the two 16×64 panels. Consecutive threads load consecutive k —
// consecutive q of one output row — so the output gradient's loads coalesce and the input's stride by the stride.
//
// Split-K. The reduction (25 088 deep for a 56² layer at batch 8, 802 816 at batch 256) would leave a handful of
// blocks — Kg·Cg·R·S / 64² tiles per group — to walk it alone. The reduction is cut into `splits` runs of whole
// 16-deep steps so that the grid has about two blocks per multiprocessor; split z writes its partial tile into
// workspace slice z (the weight gradient's layout) and a second kernel sums the slices in the order z = 0, 1, …
// Deterministic: no atomics, the same sums in the same order on every run.
//
// Shapes: x [N, C, H, W], dy [N, K, P, Q], dW [K, C/G, R, S]; the grid is (column tiles, row tiles, G·splits).
// FP32 throughout (the sums of one thread in FP32 over its run; the runs' partials added in FP32).
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/backward_index.h"
#include "kernels/cuda/training/conv2d_backward_weights.cuh"

#include <algorithm>

namespace convscope::cuda::train {

namespace {
    constexpr int kTile = 64; // rows and columns of a block's dW tile
    constexpr int kDepth = 16; // k per step
    constexpr int kThreads = 256; // 16 × 16, 4 × 4 outputs each
    constexpr long long kMinRunPerSplit = 1024; // a split walks at least this much of the reduction
    // A stem's weight gradient is one or two tiles over a reduction of N·H·W (262 144 for 128² at batch 16): it takes
    // up to 256 parts to give the device two blocks per SM. The workspace stays small — parts × tiles ≈ 2·SMs tiles of
    // 64×64 floats (≈ 4 MB on 132 SMs) — since a layer with more tiles gets fewer parts.
    constexpr long long kMaxSplits = 256;

    WgradShape shapeOf(const ConvGeometry& g)
    {
        return { g.n, g.c, g.h, g.w, g.k, g.p, g.q, g.r, g.s, g.strideH, g.strideW, g.padTop, g.padLeft, g.dilH, g.dilW,
            g.groups };
    }

    __global__ void __launch_bounds__(kThreads) wgradKernel(
        WgradShape g, const float* __restrict__ x, const float* __restrict__ dy, float* __restrict__ out, int splits)
    {
        __shared__ float as[kDepth][kTile + 4];
        __shared__ float bs[kDepth][kTile + 4];
        const int grp = int(blockIdx.z) / splits, z = int(blockIdx.z) % splits;
        const int m0 = int(blockIdx.y) * kTile, n0 = int(blockIdx.x) * kTile;
        const int t = int(threadIdx.x), ty = t / 16, tx = t % 16;
        const KRange run = wgradSplitRange(g, splits, kDepth, z);
        float acc[4][4] = {};
        for (long long k0 = run.begin; k0 < run.end; k0 += kDepth) {
            for (int l = 0; l < 4; ++l) {
                const int e = t + kThreads * l, kk = e % kDepth, mn = e / kDepth;
                const long long k = k0 + kk;
                const bool in = k < run.end;
                as[kk][mn] = in ? wgradA(g, dy, grp, m0 + mn, k) : 0.0f;
                bs[kk][mn] = in ? wgradB(g, x, grp, k, n0 + mn) : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < kDepth; ++kk) {
                float a[4], b[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    a[i] = as[kk][ty + 16 * i];
                    b[i] = bs[kk][tx + 16 * i];
                }
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
            __syncthreads();
        }
        const int rows = wgradRows(g), cols = wgradColumns(g);
        float* dst = out + (splits > 1 ? z * wgradWeightCount(g) : 0);
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
                const int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
                if (m < rows && n < cols)
                    dst[wgradIndex(g, grp, m, n)] = acc[i][j];
            }
    }

    // dW[i] = Σ_z partial[z][i], z in order.
    __global__ void sumSplitsKernel(const float* __restrict__ partial, long long count, int splits, float* dw)
    {
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
             i += (long long)gridDim.x * blockDim.x) {
            float sum = 0.0f;
            for (int z = 0; z < splits; ++z)
                sum += partial[z * count + i];
            dw[i] = sum;
        }
    }

    long long tilesOf(const WgradShape& s)
    {
        return (long long)((wgradColumns(s) + kTile - 1) / kTile) * ((wgradRows(s) + kTile - 1) / kTile) * s.groups;
    }
} // namespace

int conv2dWgradSplits(const ConvGeometry& g, int sms)
{
    const WgradShape s = shapeOf(g);
    const long long blocks = tilesOf(s), reduction = wgradReduction(s);
    const long long want = (2LL * std::max(sms, 1) + blocks - 1) / blocks; // about two blocks per multiprocessor
    long long splits
        = std::min<long long>({ want, reduction / kMinRunPerSplit, kMaxSplits, 65535 / std::max(1, g.groups) });
    return int(std::max<long long>(splits, 1));
}

size_t conv2dWgradWorkspaceBytes(const ConvGeometry& g, int sms)
{
    const int splits = conv2dWgradSplits(g, sms);
    return splits > 1 ? size_t(splits) * size_t(wgradWeightCount(shapeOf(g))) * sizeof(float) : 0;
}

std::string conv2dWgradNote(const ConvGeometry& g, int sms)
{
    const WgradShape s = shapeOf(g);
    const int splits = conv2dWgradSplits(g, sms);
    return "backward-weights: implicit GEMM 64x64 tiles over N*P*Q = " + std::to_string(wgradReduction(s))
        + (splits > 1 ? ", split-K " + std::to_string(splits) + " (partials summed in order in a second pass)"
                      : ", unsplit");
}

void conv2dBackwardWeights(
    const ConvGeometry& g, const float* x, const float* dy, float* dw, float* workspace, int sms, cudaStream_t st)
{
    const WgradShape s = shapeOf(g);
    const int splits = conv2dWgradSplits(g, sms);
    if (splits > 1 && !workspace)
        throw Error("conv2d backward-weights: split-K " + std::to_string(splits) + " without a workspace");
    const dim3 grid(unsigned((wgradColumns(s) + kTile - 1) / kTile), unsigned((wgradRows(s) + kTile - 1) / kTile),
        unsigned(g.groups * splits));
    wgradKernel<<<grid, kThreads, 0, st>>>(s, x, dy, splits > 1 ? workspace : dw, splits);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d backward-weights (implicit GEMM)");
    if (splits > 1) {
        const long long count = wgradWeightCount(s);
        const long long blocks = std::min<long long>((count + 255) / 256, 4096);
        sumSplitsKernel<<<unsigned(blocks), 256, 0, st>>>(workspace, count, splits, dw);
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d backward-weights (split-K sum)");
    }
}

} // namespace convscope::cuda::train
