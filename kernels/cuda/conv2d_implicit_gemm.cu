// conv2d, cuda.implicit_gemm: the fast path.
//
// Algorithm. A convolution is a matrix product in disguise. Per group, with M = K/groups output channels,
// Ncols = N·P·Q output pixels and Kdim = (C/groups)·R·S taps:
//   Y[m, col] = Σ_kd A[m, kd] · B[kd, col]
//   A = the weights, [K, C/g·R·S] row-major exactly as stored: no transform at all;
//   B = the im2col matrix, B[(c, r, s), (n, p, q)] = x[n, c, p·sh − top + r·dh, q·sw − left + s·dw] (0 off the input).
// cpu.im2col_gemm writes B to memory first; here B is never materialised ("implicit"): each block gathers the
// BK×BN slice it needs straight from x into shared memory. The gather's index arithmetic is taken off the
// inner loop by a small per-layer table, one int2 per (c, r, s): the offset c·H·W + r·dh·W + s·dw and the
// packed (r·dh, s·dw) for the bounds test; each thread fixes its column (n, p, q) once. Asymmetric padding,
// stride, dilation and groups (grid z) thus cost nothing extra in the inner loop.
//
// Blocking (the SGEMM recipe of siboehm/SGEMM_CUDA and CUTLASS's SIMT kernels):
//   - a block computes a BM×BN tile of Y with T = (BM/TM)·(BN/TN) threads, each a TM×TN register tile: per
//     BK step a thread does TM·TN FMAs for TM + TN shared-memory reads, which is what lifts the kernel from
//     memory-bound to FMA-bound;
//   - the thread's TM rows are two groups of TM/2 at ty·TM/2 and BM/2 + ty·TM/2 (columns likewise), read as
//     float4: a warp's reads of B are 16-byte, consecutive and conflict-free, its reads of A are broadcasts;
//   - A is loaded with float4 (16-byte) global loads when C/g·R·S is a multiple of 4 (rows then stay aligned;
//     the arena aligns every tensor to 256 bytes), B with coalesced scalar loads (a warp reads 32 consecutive
//     output pixels, i.e. mostly consecutive input columns);
//   - double-buffered shared memory with a register prefetch: the global loads of step k+1 are issued before
//     the FMAs of step k and land in the other buffer after them, so memory latency hides behind arithmetic and
//     one __syncthreads per step suffices.
// Variants: 128×128 tiles (8×8 per thread, 256 threads) for wide layers; 64×128 (128 threads) when a group has
// ≤ 64 output channels, so half a tile is not wasted on channels that do not exist; 64×64 (64 threads) when
// 64×128 tiles would leave multiprocessors idle; 32×64 (4×4 per thread) for narrow or small layers (LeNet,
// depthwise) where bigger tiles would leave most multiprocessors idle.
// Pipelined variants (128x128cp, 64x128cp; session 6), the default on wide non-pointwise layers of ≥ 32 input
// channels a group: the same thread tiles, loaded by cp.async in a 3-stage pipeline (conv2d_implicit_gemm_pipe.cu),
// and, where the tiles would leave multiprocessors idle, with the reduction split over grid z (split-K,
// conv2d_implicit_gemm_split.cu). The thread tile's inner step and epilogue, shared by both kernels, are in
// conv2d_implicit_gemm_tile.cuh.
// Everything is FP32 FFMA (no tensor cores), so results match cpu.direct to ~1e-7 — unless the caller sets
// ConvGeometry::tf32 (cuda.tensor_core's training step under --math tf32): then the pipelined tiles take every layer
// they can and multiply on TF32 Tensor Cores (conv2d_implicit_gemm_pipe.cu, tf32_mma.cuh).
#include "kernels/cuda/conv2d.cuh"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/conv2d_implicit_gemm_pipe.cuh"
#include "kernels/cuda/conv2d_implicit_gemm_split.cuh"
#include "kernels/cuda/conv2d_implicit_gemm_tile.cuh"
#include "kernels/cuda/cuda_options.h"

#include <algorithm>
#include <string>

namespace convscope::cuda {

using igemm::gatherColumn;
using igemm::GatherColumn;
using igemm::kPipeBK;
using igemm::outerProductStep;
using igemm::pipeSteps;
using igemm::PipeWeights;
using igemm::pipeWeightsOf;
using igemm::storeTile;

namespace {
    __global__ void buildTableKernel(ConvGeometry g, int2* table)
    {
        const int rs = g.r * g.s;
        const int crs = blockIdx.x * blockDim.x + threadIdx.x;
        if (crs >= (g.c / g.groups) * rs)
            return;
        const int c = crs / rs, t = crs % rs;
        const int rd = (t / g.s) * g.dilH, sd = (t % g.s) * g.dilW;
        table[crs] = make_int2(c * g.h * g.w + rd * g.w + sd, (rd << 16) | sd);
    }

    constexpr int igemmMinBlocks(int threads, bool vecA)
    {
        return threads == 256 || (threads == 128 && vecA) ? 65536 / (threads * 128) : 1;
    }

    // VecB: a 1×1, stride-1, unpadded convolution whose planes are a multiple of 4 pixels (a pointwise layer, and
    // every batched GEMM of cuda.winograd): B is then x itself, [C][N·P·Q] row by row, so B's tile is loaded as
    // aligned float4s, 4 consecutive pixels of one input plane, with no table and no bounds test.
    template <int BM, int BN, int BK, int TM, int TN, bool VecA, bool VecB>
    // Tiles are capped at 128 registers a thread, so 16 warps fit on a multiprocessor (2 blocks of 256 threads,
    // 4 of 128). Without the cap ptxas took 143 on the 128×128 tile, halving its occupancy (unet layers 0.56× cuDNN
    // instead of 0.73×, H200). With 64-bit index arithmetic the cap made the 128-thread tiles spill (3×3 64→64 @56²
    // b8 0.52× instead of 0.80×), so they ran uncapped at 147–167 registers, 3 blocks; 32-bit indices (session 5)
    // fit the float4-weight variants in 127–128 registers without spilling (unet 128-thread layers 27.8 TFLOP/s
    // → see PERFORMANCE.md). The scalar-weight 128-thread tiles still spill under the cap (ResNet conv1, 147 taps:
    // 0.110 → 0.141 ms), so they stay uncapped.
    __global__ void __launch_bounds__((BM / TM) * (BN / TN), igemmMinBlocks((BM / TM) * (BN / TN), VecA))
        conv2dIgemmKernel(ConvGeometry g, const float* __restrict__ x, const float* __restrict__ w,
            const float* __restrict__ bias, float* __restrict__ y, const int2* __restrict__ table)
    {
        constexpr int T = (BM / TM) * (BN / TN);
        static_assert(T % BN == 0, "each thread gathers one column of B");
        constexpr int BRowsPerPass = T / BN;
        static_assert(BK % BRowsPerPass == 0, "B tile rows divide among the threads");
        constexpr int BLoads = BK / BRowsPerPass;
        constexpr int AVecs = BM * BK / 4; // float4 groups of the A tile
        constexpr int AVecLoads = (AVecs + T - 1) / T;
        constexpr int AScalarLoads = (BM * BK + T - 1) / T;

        __shared__ __align__(16) float As[2][BK][BM];
        __shared__ __align__(16) float Bs[2][BK][BN];

        const int tid = threadIdx.x;
        const int grp = blockIdx.z;
        const int kg = g.k / g.groups, cg = g.c / g.groups;
        const int crsTotal = cg * g.r * g.s;
        // 32-bit indices in the loop: supports() keeps every tensor, weights included, under 2^31 elements, and
        // 64-bit address arithmetic had cost the 128×128 tile its last registers (spills under the 128 cap).
        const int pq = g.p * g.q;
        const int npqTotal = g.n * pq;
        const int mBase = blockIdx.y * BM;
        const int colBase = blockIdx.x * BN;
        const float* wg = w + static_cast<long long>(grp) * kg * crsTotal;
        const float* xg = x + static_cast<long long>(grp) * cg * g.h * g.w;

        // This thread's B column: one output pixel, fixed for the whole K loop.
        const int bCol = tid % BN, bRow0 = tid / BN;
        const GatherColumn col = gatherColumn(g, colBase + bCol, pq, npqTotal);
        const bool colValid = col.valid;
        const int ihBase = col.ihBase, iwBase = col.iwBase, colOff = col.offset;

        constexpr int BVecs = BK * BN / 4; // float4 groups of the B tile (VecB)
        static_assert(!VecB || BVecs % T == 0, "the B tile's float4 groups divide among the threads");
        constexpr int BVecLoads = BVecs / T;
        float aReg[VecA ? AVecLoads * 4 : AScalarLoads];
        float bReg[VecB ? BVecLoads * 4 : BLoads];

        auto loadTiles = [&](int k0) {
            if constexpr (VecB) {
#pragma unroll
                for (int i = 0; i < BVecLoads; ++i) {
                    const int idx = tid + i * T;
                    const int row = idx / (BN / 4), col = (idx % (BN / 4)) * 4;
                    const int c0 = colBase + col; // 4 pixels of one image: pq % 4 == 0, c0 % 4 == 0
                    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (k0 + row < crsTotal && c0 < npqTotal) {
                        const int nn = c0 / pq, pix = c0 - nn * pq;
                        v = __ldg(reinterpret_cast<const float4*>(xg + (nn * g.c + k0 + row) * pq + pix));
                    }
                    bReg[4 * i + 0] = v.x, bReg[4 * i + 1] = v.y, bReg[4 * i + 2] = v.z, bReg[4 * i + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < BLoads; ++i) {
                    const int crs = k0 + bRow0 + i * BRowsPerPass;
                    float v = 0.0f;
                    if (colValid && crs < crsTotal) {
                        const int2 t = __ldg(&table[crs]);
                        const int ih = ihBase + (t.y >> 16), iw = iwBase + (t.y & 0xFFFF);
                        if (static_cast<unsigned>(ih) < static_cast<unsigned>(g.h)
                            && static_cast<unsigned>(iw) < static_cast<unsigned>(g.w))
                            v = __ldg(xg + colOff + t.x);
                    }
                    bReg[i] = v;
                }
            }
            if constexpr (VecA) {
#pragma unroll
                for (int i = 0; i < AVecLoads; ++i) {
                    const int idx = tid + i * T;
                    const int row = idx / (BK / 4), col = (idx % (BK / 4)) * 4;
                    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                    if (idx < AVecs && mBase + row < kg && k0 + col < crsTotal)
                        v = __ldg(reinterpret_cast<const float4*>(wg + (mBase + row) * crsTotal + k0 + col));
                    aReg[4 * i + 0] = v.x, aReg[4 * i + 1] = v.y, aReg[4 * i + 2] = v.z, aReg[4 * i + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < AScalarLoads; ++i) {
                    const int idx = tid + i * T;
                    const int row = idx / BK, col = idx % BK;
                    float v = 0.0f;
                    if (idx < BM * BK && mBase + row < kg && k0 + col < crsTotal)
                        v = __ldg(wg + (mBase + row) * crsTotal + k0 + col);
                    aReg[i] = v;
                }
            }
        };
        auto storeTiles = [&](int buf) {
            if constexpr (VecB) {
#pragma unroll
                for (int i = 0; i < BVecLoads; ++i) {
                    const int idx = tid + i * T;
                    const int row = idx / (BN / 4), col = (idx % (BN / 4)) * 4;
                    *reinterpret_cast<float4*>(&Bs[buf][row][col])
                        = make_float4(bReg[4 * i], bReg[4 * i + 1], bReg[4 * i + 2], bReg[4 * i + 3]);
                }
            } else {
#pragma unroll
                for (int i = 0; i < BLoads; ++i)
                    Bs[buf][bRow0 + i * BRowsPerPass][bCol] = bReg[i];
            }
            if constexpr (VecA) {
#pragma unroll
                for (int i = 0; i < AVecLoads; ++i) {
                    const int idx = tid + i * T;
                    if (idx < AVecs) {
                        const int row = idx / (BK / 4), col = (idx % (BK / 4)) * 4;
#pragma unroll
                        for (int e = 0; e < 4; ++e)
                            As[buf][col + e][row] = aReg[4 * i + e];
                    }
                }
            } else {
#pragma unroll
                for (int i = 0; i < AScalarLoads; ++i) {
                    const int idx = tid + i * T;
                    if (idx < BM * BK)
                        As[buf][idx % BK][idx / BK] = aReg[i];
                }
            }
        };

        const int tx = tid % (BN / TN), ty = tid / (BN / TN);
        float acc[TM][TN];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j)
                acc[i][j] = 0.0f;

        const int steps = (crsTotal + BK - 1) / BK;
        loadTiles(0);
        storeTiles(0);
        __syncthreads();
        int cur = 0;
        for (int step = 0; step < steps; ++step) {
            const bool more = step + 1 < steps;
            if (more)
                loadTiles((step + 1) * BK); // in flight while we compute
#pragma unroll
            for (int kk = 0; kk < BK; ++kk)
                outerProductStep<BM, BN>(As[cur][kk], Bs[cur][kk], tx, ty, acc);
            if (more)
                storeTiles(cur ^ 1); // the other buffer: everyone finished reading it before the last barrier
            __syncthreads();
            cur ^= 1;
        }

        storeTile<BM, BN, TM, TN>(g, acc, bias, y, mBase, colBase, grp, tx, ty);
    }

    // The order matches ConvGeometry::igemmTile (1-4).
    bool pointwiseVecB(const ConvGeometry& g)
    {
        return g.r == 1 && g.s == 1 && g.strideH == 1 && g.strideW == 1 && g.padTop == 0 && g.padLeft == 0 && g.p == g.h
            && g.q == g.w && (static_cast<long long>(g.p) * g.q) % 4 == 0;
    }

    enum class Variant { Big = 1, Mid, Mid64, Small, PipeBig, PipeMid };
    bool pipelined(Variant v) { return v == Variant::PipeBig || v == Variant::PipeMid; }

    // The pipelined kernel can run: the caller built its transposed weights (ConvGeometry::igemmPipe), the layer
    // is not a pointwise one with the float4 input path (under TF32 it is: the Tensor Cores are only there), and its
    // indices stay in 32 bits (padding included).
    bool pipeApplies(const ConvGeometry& g)
    {
        if (!g.igemmPipe || (pointwiseVecB(g) && !g.tf32))
            return false;
        const PipeWeights pw = pipeWeightsOf(g);
        const long long hw = static_cast<long long>(g.h) * g.w;
        const long long reach = (static_cast<long long>(g.n) * g.c + pw.cPad + kPipeBK) * hw
            + (static_cast<long long>(g.r) * g.dilH + 1) * g.w + static_cast<long long>(g.s) * g.dilW;
        return pw.elements < (1LL << 31) && reach < (1LL << 31);
    }

    long long blocksFor(const ConvGeometry& g, int bm, int bn)
    {
        const long long cols = static_cast<long long>(g.n) * g.p * g.q;
        const int kg = g.k / g.groups;
        return ((cols + bn - 1) / bn) * ((kg + bm - 1) / bm) * g.groups;
    }

    // What runs: the tiles, and for the pipelined tiles the split-K parts (1: none).
    struct Plan {
        Variant variant;
        int splits = 1;
    };

    // A pipelined plan with the parts that balance the device best (or igemm_splits' forced count).
    Plan pipePlan(const ConvGeometry& g, Variant v, int smCount)
    {
        const long long tiles = v == Variant::PipeBig ? blocksFor(g, 128, 128) : blocksFor(g, 64, 128);
        if (g.groups != 1) // the split kernel takes one group (see conv2dIgemmPipeKernel)
            return { v };
        return { v, igemm::splitKParts(tiles, smCount, pipeSteps(g), g.igemmSplits) };
    }

    Variant pickUnsplit(const ConvGeometry& g, int smCount, bool pipe);

    Plan planOf(const ConvGeometry& g, int smCount)
    {
        const bool pipe = pipeApplies(g);
        if (g.igemmTile >= 5 && g.igemmTile <= 6) { // forced pipelined tiles; where they cannot run, the same shape
            if (!pipe)
                return { g.igemmTile == 5 ? Variant::Big : Variant::Mid };
            const Plan p = pipePlan(g, static_cast<Variant>(g.igemmTile), smCount);
            return g.igemmSplits > 0 ? p : Plan { p.variant }; // forcing a tile alone keeps it unsplit
        }
        if (g.igemmTile >= 1 && g.igemmTile <= 4)
            return { static_cast<Variant>(g.igemmTile) };
        // TF32 multiplies in the pipelined tiles only, so they take every layer they can, split where the grid is
        // short (a stem's 16 padded channels a tap cost less there than FFMA on the exact three).
        if (g.tf32 && pipe)
            return pipePlan(g, g.k / g.groups > 64 ? Variant::PipeBig : Variant::PipeMid, smCount);
        const Variant v = pickUnsplit(g, smCount, pipe);
        // A full grid, which split-K may still balance better (H100, igemm_splits=1 against the model's choice):
        // VGG's 28×28 layers at batch 8, 196 tiles of 128×128 for 132 SMs, 2 parts 0.876 → 0.671 ms; 3×3 64→64 @56²
        // b8, 196 tiles of 64×128, 2 parts 0.076 → 0.057 ms.
        if (pipelined(v))
            return g.igemmSplits != 1 ? pipePlan(g, v, smCount) : Plan { v };
        // Too few tiles for the big and mid tiles to fill the device. With a long reduction, the pipelined tiles
        // split it (split-K) rather than fall back to the small tiles (VGG-16's 512→512 layers on 14×14: 52 tiles
        // of 128×128 on 132 multiprocessors, 0.61 ms on 32×64 tiles against cuDNN's 0.185). igemm_splits=1 keeps
        // the small tiles, as before split-K.
        // Few output channels on a tiny grid split too: DCGAN's last discriminator layer (512→1, 4×4 on 4×4, batch
        // 64: one 32×64 tile walking 8192 taps alone, 1.07 ms against cuDNN's 0.04) runs its reduction in parts
        // across the device; most of the 64×128 tile's rows are padding there, which costs nothing next to that.
        const int kg = g.k / g.groups;
        const bool tinyGrid = blocksFor(g, 64, 128) * 8 <= smCount;
        if (pipe && g.c / g.groups >= 32 && g.igemmSplits != 1 && (kg > 32 || tinyGrid)) {
            const Plan p = pipePlan(g, kg > 64 ? Variant::PipeBig : Variant::PipeMid, smCount);
            if (p.splits > 1)
                return p;
        }
        return { v };
    }

    Variant pickUnsplit(const ConvGeometry& g, int smCount, bool pipe)
    {
        const int kg = g.k / g.groups;
        // The pipelined tiles pad each tap's channels to 16: with ≥ 32 channels a group that wastes at most a third.
        const bool pipeAuto = pipe && g.c / g.groups >= 32;
        if (kg > 64 && blocksFor(g, 128, 128) >= smCount)
            return pipeAuto ? Variant::PipeBig : Variant::Big;
        // A short reduction (≤ 256 taps) on a small problem (< 4 blocks of 64×128 per multiprocessor) gives each
        // block few steps to hide its loads behind: the small tiles' many blocks hide them better (H200:
        // 1×1 256→64 @56² 0.42× → 0.64× of cuDNN; Winograd's 64-deep GEMMs at 56² batch 8 0.91× → 1.20×), while a
        // long one (3×3 64→64, 576 taps) keeps the 64×128 tiles (0.59× against 0.48×).
        const bool shortAndSmall = (g.c / g.groups) * g.r * g.s <= 256 && blocksFor(g, 64, 128) < 4LL * smCount;
        if (kg > 32 && blocksFor(g, 64, 128) >= smCount && !shortAndSmall)
            return pipeAuto ? Variant::PipeMid : Variant::Mid;
        return Variant::Small; // 64×64 tiles (Mid64) measured no better than either: only by igemm_tile
    }

    template <int BM, int BN, int BK, int TM, int TN>
    void launch(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, const int2* table,
        cudaStream_t st)
    {
        const long long cols = static_cast<long long>(g.n) * g.p * g.q;
        const dim3 grid(static_cast<unsigned>((cols + BN - 1) / BN),
            static_cast<unsigned>((g.k / g.groups + BM - 1) / BM), static_cast<unsigned>(g.groups));
        const int threads = (BM / TM) * (BN / TN);
        const bool vecA = ((g.c / g.groups) * g.r * g.s) % 4 == 0;
        if (pointwiseVecB(g)) {
            if (vecA)
                conv2dIgemmKernel<BM, BN, BK, TM, TN, true, true><<<grid, threads, 0, st>>>(g, x, w, bias, y, table);
            else
                conv2dIgemmKernel<BM, BN, BK, TM, TN, false, true><<<grid, threads, 0, st>>>(g, x, w, bias, y, table);
        } else if (vecA) {
            conv2dIgemmKernel<BM, BN, BK, TM, TN, true, false><<<grid, threads, 0, st>>>(g, x, w, bias, y, table);
        } else {
            conv2dIgemmKernel<BM, BN, BK, TM, TN, false, false><<<grid, threads, 0, st>>>(g, x, w, bias, y, table);
        }
    }

} // namespace

int parseImplicitGemmTile(const std::string& text)
{
    const char* names[] = { "128x128", "64x128", "64x64", "32x64", "128x128cp", "64x128cp" };
    for (int i = 0; i < 6; ++i)
        if (text == names[i])
            return i + 1;
    throw InputError("igemm_tile=" + text
        + ": the implicit GEMM tiles are 128x128, 64x128, 64x64 and 32x64, and the pipelined 128x128cp and 64x128cp");
}

int parseImplicitGemmSplits(const std::string& text)
{
    const int n = wholeNumberIn(text, 1, 64);
    if (n == 0)
        throw InputError(
            "igemm_splits=" + text + ": the implicit GEMM's split-K parts are a whole number from 1 (no split) to 64");
    return n;
}

size_t conv2dImplicitGemmTableBytes(const ConvGeometry& g)
{
    return static_cast<size_t>(g.c / g.groups) * g.r * g.s * sizeof(int2);
}

void conv2dImplicitGemmBuildTable(const ConvGeometry& g, void* table, cudaStream_t st)
{
    const int n = (g.c / g.groups) * g.r * g.s;
    buildTableKernel<<<(n + 255) / 256, 256, 0, st>>>(g, static_cast<int2*>(table));
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d implicit GEMM table");
}

size_t conv2dImplicitGemmScratchBytes(const ConvGeometry& g, int smCount)
{
    const Plan p = planOf(g, smCount);
    if (pipelined(p.variant))
        return igemm::pipeScratchBytes(g, p.splits);
    return conv2dImplicitGemmTableBytes(g);
}

void conv2dImplicitGemmPrepare(const ConvGeometry& g, const float* w, void* scratch, int smCount, cudaStream_t st)
{
    if (!pipelined(planOf(g, smCount).variant)) {
        conv2dImplicitGemmBuildTable(g, scratch, st);
        return;
    }
    igemm::pipeTransposeWeights(g, w, scratch, st);
}

bool conv2dImplicitGemmPreparesWeights(const ConvGeometry& g, int smCount)
{
    return pipelined(planOf(g, smCount).variant);
}

std::string conv2dImplicitGemmVariant(const ConvGeometry& g, int smCount)
{
    const bool vecA = ((g.c / g.groups) * g.r * g.s) % 4 == 0;
    const Plan plan = planOf(g, smCount);
    const std::string pipeDetail = std::string(!g.tf32 || !pipelined(plan.variant) ? ", 8x8 per thread"
                                           : g.tf32 == 1 ? ", TF32 mma.sync m16n8k8 (operands rounded to nearest)"
                                                         : std::string(", ") + (g.tf32 == 2 ? "FP16" : "BF16")
                                               + " mma.sync m16n8k16 (operands exact in that type, FP32 sums)")
        + ", 16-deep steps in a 3-stage cp.async pipeline, weights transposed at prepare";
    const std::string split = plan.splits > 1 ? ", split-K " + std::to_string(plan.splits) + " ("
            + std::to_string(blocksFor(g, plan.variant == Variant::PipeBig ? 128 : 64, 128)) + " tiles on "
            + std::to_string(smCount) + " multiprocessors; the parts summed in a second pass)"
                                              : "";
    std::string v;
    switch (plan.variant) {
    case Variant::PipeBig:
        return "implicit GEMM 128x128cp tiles" + pipeDetail + split;
    case Variant::PipeMid:
        return "implicit GEMM 64x128cp tiles" + pipeDetail + split;
    case Variant::Big:
        v = "128x128 tiles, 8x8 per thread";
        break;
    case Variant::Mid:
        v = "64x128 tiles, 8x8 per thread";
        break;
    case Variant::Mid64:
        v = "64x64 tiles, 8x8 per thread";
        break;
    case Variant::Small:
        v = "32x64 tiles, 4x4 per thread, 16-deep steps";
        break;
    }
    return "implicit GEMM " + v + (vecA ? ", float4 weight loads" : ", scalar weight loads")
        + (pointwiseVecB(g) ? ", float4 input loads (pointwise)" : "")
        + (g.tf32 ? ", FP32 FFMA (the TF32 tiles do not take this layer)" : "");
}

void conv2dImplicitGemm(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
    void* scratch, int smCount, cudaStream_t st)
{
    const auto* t = static_cast<const int2*>(scratch);
    const Plan plan = planOf(g, smCount);
    switch (plan.variant) {
    case Variant::PipeBig: // the scratch holds the transposed weights (conv2dImplicitGemmPrepare), then split-K's parts
        igemm::pipeLaunch(true, g, plan.splits, x, scratch, bias, y, st);
        break;
    case Variant::PipeMid:
        igemm::pipeLaunch(false, g, plan.splits, x, scratch, bias, y, st);
        break;
    case Variant::Big:
        launch<128, 128, 8, 8, 8>(g, x, w, bias, y, t, st);
        break;
    case Variant::Mid:
        launch<64, 128, 8, 8, 8>(g, x, w, bias, y, t, st);
        break;
    case Variant::Mid64:
        launch<64, 64, 8, 8, 8>(g, x, w, bias, y, t, st);
        break;
    case Variant::Small:
        launch<32, 64, 16, 4, 4>(g, x, w, bias, y, t, st);
        break;
    }
}

} // namespace convscope::cuda
