// conv2d, cuda.implicit_gemm: the pipelined variants (128x128cp, 64x128cp; session 6), the default on wide
// non-pointwise layers of ≥ 32 input channels a group: the same thread tiles, but the tiles travel global → shared by
// cp.async, three stages deep and 16 taps per stage, so no registers stage the prefetch (the register-staged kernel
// spilled at BK = 16 under its 128-register cap) and two stages are in flight while one is computed. The reduction runs
// tap-major, (r, s) outer and input channel inner: for one tap a thread's column is either inside the input or not, for
// all 16 channels, so the gather needs no table and one bounds test per stage; off the input (or past the last channel)
// the cp.async copies 0 bytes and zero-fills. That order needs the weights as [group][r·s][c][k], k fastest, padded to
// 16 channels and 4 outputs with zeros: a per-layer copy built at prepare (the weights are on the device by
// then), whose rows of k are the A tile's rows as they sit in shared memory, so A moves in 16-byte copies.
// Split-K (the Split template flag) and how many parts: conv2d_implicit_gemm_split.cu.
// TF32 (ConvGeometry::tf32, the Tf32 template flag; cuda.tensor_core's training step): each 8-deep half of a stage
// multiplied by the block's warps on mma.sync m16n8k8 (tf32_mma.cuh: 128×128 as 2 × 4 warps of 64 × 32, 64×128 as
// 2 × 2 of 32 × 64). The weights are transposed straight into the order mma's A fragments are read in — per tap, per
// 8 channels, per 16 outputs, each lane's four values side by side (tf32::packedA) — and rounded to TF32 there, so a
// stage's A is two contiguous runs copied 16 bytes at a time and a lane reads its fragment in one 16-byte load; the
// gathered input goes into a swizzled panel and is rounded as its fragments are read. The epilogue stores the
// fragments (storeFragments below) with the same bias, skip and activation, or raw into split-K's slice. FP16 / BF16
// (ConvGeometry::tf32 = 2 / 3: the training session's fp16 / bf16, operands exact in that type): the same layout, each
// stage's two slices paired into one mma.sync m16n8k16 in that type (half_mma.cuh).
#include "kernels/cuda/conv2d_implicit_gemm_pipe.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/conv2d_implicit_gemm_split.cuh"
#include "kernels/cuda/conv2d_implicit_gemm_tile.cuh"
#include "kernels/cuda/half_mma.cuh"
#include "kernels/cuda/tf32_mma.cuh"

#include <algorithm>
#include <type_traits>

namespace convscope::cuda::igemm {

namespace {
    // cp.async (sm_80 and later): a copy global → shared that needs no register and completes asynchronously;
    // src-size 0 reads nothing and writes zeros (the im2col padding, the channels past the last).
    __device__ __forceinline__ unsigned smemAddr(const void* p)
    {
        return static_cast<unsigned>(__cvta_generic_to_shared(p));
    }
    __device__ __forceinline__ void cpAsync4(unsigned dst, const void* src, int srcBytes)
    {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(srcBytes) : "memory");
    }
    __device__ __forceinline__ void cpAsync16(unsigned dst, const void* src, int srcBytes)
    {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(srcBytes) : "memory");
    }
    __device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
    template <int N> __device__ __forceinline__ void cpAsyncWait()
    {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
    }

    constexpr int kPipeStages = 3; // 128x128: 3 × 16 KB = the 48 KB of static shared memory, 2 blocks per SM

    // Where split-K's workspace starts in the scratch: after the transposed weights, 256-byte aligned.
    size_t workspaceOffset(const ConvGeometry& g)
    {
        return (static_cast<size_t>(pipeWeightsOf(g).elements) * sizeof(float) + 255) / 256 * 256;
    }

    // FFMA: wt[group][r·s][cPad][kPad], k fastest. TF32: wt[group][r·s][cPad / 8][kPad / 16][lane][4], mma's A
    // fragments in order (tf32::packedA), rounded to TF32 once here rather than at every fragment read.
    __global__ void transposeWeightsKernel(
        ConvGeometry g, int kPad, int cPad, long long total, const float* __restrict__ w, float* __restrict__ wt)
    {
        const int kg = g.k / g.groups, cg = g.c / g.groups, rs = g.r * g.s;
        for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
             i += static_cast<long long>(gridDim.x) * blockDim.x) {
            int k, c;
            long long t;
            if (g.tf32) {
                const int inTile = static_cast<int>(i % 128); // lane · 4 + e within a 16 × 8 tile
                t = i / 128;
                const int mTile = static_cast<int>(t % (kPad / 16));
                t /= kPad / 16;
                const int slice = static_cast<int>(t % (cPad / 8));
                t /= cPad / 8;
                k = mTile * 16 + tf32::packedRow(inTile);
                c = slice * 8 + tf32::packedCol(inTile);
            } else {
                k = static_cast<int>(i % kPad);
                t = i / kPad;
                c = static_cast<int>(t % cPad);
                t /= cPad;
            }
            const int tap = static_cast<int>(t % rs), grp = static_cast<int>(t / rs);
            const float v = k < kg && c < cg ? w[((static_cast<long long>(grp) * kg + k) * cg + c) * rs + tap] : 0.0f;
            wt[i] = g.tf32 ? tf32::roundedFloat(v) : v;
        }
    }

    // The TF32 kernel's epilogue: the warp's MT × NT fragments (tf32_mma.cuh's layout) into y, whose rows start at
    // output channel m0 of the group and columns at output pixel c0, with bias, skip and activation as storeTile's —
    // or (Raw, a split-K part) the sums as they are into the part's slice, shaped like y. A lane's two columns of a
    // fragment are adjacent pixels, so a warp's store covers eight rows of 32 consecutive bytes each.
    template <int MT, int NT, bool Raw>
    __device__ __forceinline__ void storeFragments(const ConvGeometry& g, const float (&acc)[MT][NT][4],
        const float* __restrict__ bias, float* __restrict__ y, int m0, int c0, int grp, int lane)
    {
        const int kg = g.k / g.groups, pq = g.p * g.q, npqTotal = g.n * pq;
#pragma unroll
        for (int ni = 0; ni < NT; ++ni)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = c0 + tf32::fragmentCol(lane, ni, e);
                if (col >= npqTotal)
                    continue;
                float* plane = y + (static_cast<long long>(col / pq) * g.k + grp * kg) * pq + col % pq;
#pragma unroll
                for (int mi = 0; mi < MT; ++mi)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int m = m0 + tf32::fragmentRow(lane, mi, h * 2);
                        if (m >= kg)
                            continue;
                        float* at = plane + static_cast<long long>(m) * pq;
                        const float v = acc[mi][ni][h * 2 + e];
                        if constexpr (Raw)
                            *at = v;
                        else
                            *at = epilogue(g.act, g.actParam,
                                v + (bias ? __ldg(&bias[grp * kg + m]) : 0.0f) + skipAt(g.residual, size_t(at - y)));
                    }
            }
    }

    // The pipelined implicit GEMM (see the top of the file). Same thread tile and epilogue as conv2dIgemmKernel
    // (conv2d_implicit_gemm.cu); what differs is how the tiles reach shared memory. 128-register cap as there (2
    // blocks of 256 threads or 4 of 128 per SM). Split (split-K, conv2d_implicit_gemm_split.cu; one group only): grid z
    // is the part; part z runs steps [z·stepsPerPart, (z + 1)·stepsPerPart) of the reduction and writes its raw sums to
    // slice z of `partial`. A template flag, so the unsplit kernel's code (and register count) is exactly what it was.
    // One group, because a group index kept as blockIdx.z % groups next to the part's stays live through the loop and
    // spilled (32 bytes); grouped layers' reductions are short anyway.
    // Mma: 0 FP32 FFMA; 1 TF32 mma.sync m16n8k8 (the Tensor Core layout: packed A, swizzled B, fragments); 2 and 3
    // the same layout multiplied in FP16 or BF16 on m16n8k16 (half_mma.cuh: operands exact in that type).
    template <int BM, int BN, int TM, int TN, bool Split, int Mma>
    __global__ void __launch_bounds__((BM / TM) * (BN / TN), 65536 / ((BM / TM) * (BN / TN) * 128))
        conv2dIgemmPipeKernel(ConvGeometry g, const float* __restrict__ x, const float* __restrict__ wt,
            const float* __restrict__ bias, float* __restrict__ y, int stepsPerPart, float* __restrict__ partial)
    {
        constexpr bool Tf32 = Mma != 0; // the Tensor Core layout, whichever type multiplies
        constexpr int BK = kPipeBK, STAGES = kPipeStages;
        constexpr int T = (BM / TM) * (BN / TN);
        static_assert(T % BN == 0, "each thread gathers one column of B");
        constexpr int BRowsPerPass = T / BN;
        static_assert(BK % BRowsPerPass == 0, "B tile rows divide among the threads");
        constexpr int BLoads = BK / BRowsPerPass;
        constexpr int AVecs = BM * BK / 4;
        static_assert(AVecs % T == 0, "the A tile's 16-byte groups divide among the threads");
        constexpr int AVecLoads = AVecs / T;

        __shared__ __align__(16) float As[STAGES][BK][BM];
        __shared__ __align__(16) float Bs[STAGES][BK][BN];

        const int tid = threadIdx.x;
        const int grp = Split ? 0 : blockIdx.z;
        const int kg = g.k / g.groups, cg = g.c / g.groups;
        const int kPad = Tf32 ? (kg + 15) / 16 * 16 : (kg + 3) / 4 * 4, cPad = (cg + BK - 1) / BK * BK;
        const int hw = g.h * g.w;
        const int pq = g.p * g.q;
        const int npqTotal = g.n * pq;
        const int mBase = blockIdx.y * BM;
        const int colBase = blockIdx.x * BN;
        const float* xg = x + static_cast<long long>(grp) * cg * hw;
        const float* wg = wt + static_cast<long long>(grp) * g.r * g.s * cPad * kPad;

        // This thread's B column (one output pixel) and its first B row, fixed for the whole loop.
        const int bCol = tid % BN, bRow0 = tid / BN;
        const GatherColumn col = gatherColumn(g, colBase + bCol, pq, npqTotal);
        const bool colValid = col.valid;
        const int ihBase = col.ihBase, iwBase = col.iwBase, colOff = colValid ? col.offset + bRow0 * hw : 0;
        const unsigned bDst0 = smemAddr(&Bs[0][0][0]);
        // Row i·BRowsPerPass + bRow0's element of this thread's column: its place in a stage (swizzled under TF32).
        const auto bAt = [&](int i) {
            const int row = bRow0 + i * BRowsPerPass;
            return unsigned(row * BN + (Tf32 ? tf32::swizzle(row, bCol) : bCol)) * 4u;
        };

        // The next stage to load: tap (lr, ls), number lrs, channels lc0 … lc0 + BK − 1. Stages are loaded in order,
        // so the position advances by counting, with no division (a split-K part divides once, for its first step).
        int lr = 0, ls = 0, lrs = 0, lc0 = 0;
        int steps = g.r * g.s * (cPad / BK);
        if constexpr (Split) {
            const int first = static_cast<int>(blockIdx.z) * stepsPerPart;
            steps = min(steps - first, stepsPerPart);
            lrs = first / (cPad / BK);
            lc0 = (first - lrs * (cPad / BK)) * BK;
            lr = lrs / g.s;
            ls = lrs - lr * g.s;
        }
        auto loadStage = [&](int stage) {
            const int rd = lr * g.dilH, sd = ls * g.dilW;
            const int ih = ihBase + rd, iw = iwBase + sd;
            const bool inside = colValid && static_cast<unsigned>(ih) < static_cast<unsigned>(g.h)
                && static_cast<unsigned>(iw) < static_cast<unsigned>(g.w);
            const int rowsLeft = inside ? cg - lc0 - bRow0 : 0; // this thread's rows i·BRowsPerPass < rowsLeft are real
            const int off = colOff + rd * g.w + sd + lc0 * hw;
            const unsigned bDst = bDst0 + stage * (BK * BN * 4);
#pragma unroll
            for (int i = 0; i < BLoads; ++i) {
                const bool ok = i * BRowsPerPass < rowsLeft;
                cpAsync4(bDst + bAt(i), ok ? xg + off + i * BRowsPerPass * hw : xg, ok ? 4 : 0);
            }
            if constexpr (Tf32) {
                // Two runs of BM·8 packed floats (this stage's two 8-channel slices, the block's 16-row tiles), each
                // into its half of the stage; a tile past kPad (the last block's rows past the padded outputs) is 0.
                const float* aSrc = wg + (static_cast<long long>(lrs) * (cPad / 8) + lc0 / 8) * (kPad * 8) + mBase * 8;
#pragma unroll
                for (int i = 0; i < AVecLoads; ++i) {
                    const int idx = tid + i * T;
                    const int half = idx / (BM * 2), at = (idx % (BM * 2)) * 4;
                    const bool ok = mBase + at / 8 < kPad;
                    cpAsync16(smemAddr(&As[stage][0][0] + half * BM * 8 + at), ok ? aSrc + half * (kPad * 8) + at : wg,
                        ok ? 16 : 0);
                }
            } else {
                const float* aSrc = wg + (lrs * cPad + lc0) * kPad + mBase;
#pragma unroll
                for (int i = 0; i < AVecLoads; ++i) {
                    const int idx = tid + i * T;
                    const int row = idx / (BM / 4), col = (idx % (BM / 4)) * 4;
                    const bool ok = mBase + col < kPad; // kPad is a multiple of 4: a group is all in or all out
                    cpAsync16(smemAddr(&As[stage][row][col]), ok ? aSrc + row * kPad + col : wg, ok ? 16 : 0);
                }
            }
            lc0 += BK;
            if (lc0 == cPad) {
                lc0 = 0;
                ++lrs;
                if (++ls == g.s)
                    ls = 0, ++lr;
            }
        };

        const int tx = tid % (BN / TN), ty = tid / (BN / TN);
        // FFMA: the thread's TM × TN outputs; TF32: its warp's fragments (the same count of registers).
        using Warps = tf32::WarpGrid<BM, BN, T>;
        constexpr int MT = Warps::mt, NT = Warps::nt;
        const int lane = tid % 32, warp = tid / 32;
        float acc[TM][TN];
        float frag[MT][NT][4];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j)
                acc[i][j] = 0.0f;
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    frag[i][j][e] = 0.0f;

#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < steps)
                loadStage(s);
            cpAsyncCommit(); // one group per stage, empty or not, so wait_group counts stages
        }
        int readStage = 0, writeStage = STAGES - 1;
        for (int step = 0; step < steps; ++step) {
            cpAsyncWait<STAGES - 2>(); // this thread's copies of stage `step` have landed …
            __syncthreads(); // … everyone's have, and everyone has finished computing the stage overwritten next
            if (step + STAGES - 1 < steps)
                loadStage(writeStage);
            cpAsyncCommit();
            const float* aS = &As[readStage][0][0];
            const float* bS = &Bs[readStage][0][0];
            if constexpr (Mma >= 2) { // both 8-deep slices in one m16n8k16 a tile
                using H = std::conditional_t<Mma == 2, __half, __nv_bfloat16>;
                static_assert(BK == 16, "a stage is one m16n8k16 step");
                const int tile0 = Warps::m0(warp) / 16;
                halfmma::warpStage<H, MT, NT>(
                    [&](int mi, int slice, uint32_t(&af)[4]) {
                        tf32::packedA(aS + slice * 8 * BM, tile0 + mi, lane, af);
                    },
                    bS, bS + 8 * BN, BN, Warps::n0(warp), lane, frag);
            } else if constexpr (Tf32) {
#pragma unroll
                for (int kk = 0; kk < BK; kk += 8) { // A packed (and rounded) when the weights were transposed
                    const float* a = aS + kk * BM;
                    const int tile0 = Warps::m0(warp) / 16;
                    tf32::warpSlice<MT, NT>([&](int mi, uint32_t(&af)[4]) { tf32::packedA(a, tile0 + mi, lane, af); },
                        bS + kk * BN, BN, Warps::n0(warp), lane, frag);
                }
            } else {
#pragma unroll
                for (int kk = 0; kk < BK; ++kk)
                    outerProductStep<BM, BN>(aS + kk * BM, bS + kk * BN, tx, ty, acc);
            }
            readStage = readStage == STAGES - 1 ? 0 : readStage + 1;
            writeStage = writeStage == STAGES - 1 ? 0 : writeStage + 1;
        }
        float* const slice = Split ? partial + static_cast<long long>(blockIdx.z) * g.n * g.k * pq : nullptr;
        if constexpr (Tf32)
            storeFragments<MT, NT, Split>(g, frag, Split ? nullptr : bias, Split ? slice : y, mBase + Warps::m0(warp),
                colBase + Warps::n0(warp), grp, lane);
        else if constexpr (Split)
            storeTile<BM, BN, TM, TN, true>(g, acc, nullptr, slice, mBase, colBase, grp, tx, ty);
        else
            storeTile<BM, BN, TM, TN>(g, acc, bias, y, mBase, colBase, grp, tx, ty);
    }

    // `scratch` holds the transposed weights, then (split-K) the parts' workspace.
    template <int BM, int BN, int TM, int TN>
    void launchPipe(
        const ConvGeometry& g, int splits, const float* x, void* scratch, const float* bias, float* y, cudaStream_t st)
    {
        const long long cols = static_cast<long long>(g.n) * g.p * g.q;
        const dim3 grid(static_cast<unsigned>((cols + BN - 1) / BN),
            static_cast<unsigned>((g.k / g.groups + BM - 1) / BM), static_cast<unsigned>(g.groups * splits));
        const auto* wt = static_cast<const float*>(scratch);
        constexpr int threads = (BM / TM) * (BN / TN);
        // The kernel of g's multiply (ConvGeometry::tf32: 0 FFMA, 1 TF32, 2 FP16, 3 BF16) and split flag.
        const auto launch = [&](auto split, const float* b, float* out, int perPart, float* parts) {
            constexpr bool S = decltype(split)::value;
            switch (g.tf32) {
            case 0:
                conv2dIgemmPipeKernel<BM, BN, TM, TN, S, 0><<<grid, threads, 0, st>>>(g, x, wt, b, out, perPart, parts);
                break;
            case 2:
                conv2dIgemmPipeKernel<BM, BN, TM, TN, S, 2><<<grid, threads, 0, st>>>(g, x, wt, b, out, perPart, parts);
                break;
            case 3:
                conv2dIgemmPipeKernel<BM, BN, TM, TN, S, 3><<<grid, threads, 0, st>>>(g, x, wt, b, out, perPart, parts);
                break;
            default:
                conv2dIgemmPipeKernel<BM, BN, TM, TN, S, 1><<<grid, threads, 0, st>>>(g, x, wt, b, out, perPart, parts);
            }
        };
        if (splits <= 1) {
            launch(std::false_type {}, bias, y, 0, nullptr);
            return;
        }
        auto* partial = reinterpret_cast<float*>(static_cast<char*>(scratch) + workspaceOffset(g));
        const int perPart = igemm::stepsPerSplit(pipeSteps(g), splits);
        launch(std::true_type {}, nullptr, nullptr, perPart, partial);
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d implicit GEMM split-K parts");
        igemm::splitKReduce(g, splits, partial, bias, y, st);
    }
} // namespace

PipeWeights pipeWeightsOf(const ConvGeometry& g)
{
    const int kg = g.k / g.groups, cg = g.c / g.groups;
    // TF32: whole 16-row tiles of mma's A fragments (transposeWeightsKernel).
    const int kPad = g.tf32 ? (kg + 15) / 16 * 16 : (kg + 3) / 4 * 4, cPad = (cg + kPipeBK - 1) / kPipeBK * kPipeBK;
    return { kPad, cPad, static_cast<long long>(g.groups) * g.r * g.s * cPad * kPad };
}

int pipeSteps(const ConvGeometry& g) { return g.r * g.s * (pipeWeightsOf(g).cPad / kPipeBK); }

size_t pipeScratchBytes(const ConvGeometry& g, int splits)
{
    return workspaceOffset(g) + splitKWorkspaceBytes(g, splits);
}

void pipeTransposeWeights(const ConvGeometry& g, const float* w, void* scratch, cudaStream_t st)
{
    const PipeWeights pw = pipeWeightsOf(g);
    const long long blocks = std::min<long long>((pw.elements + 255) / 256, 65535);
    transposeWeightsKernel<<<static_cast<unsigned>(blocks), 256, 0, st>>>(
        g, pw.kPad, pw.cPad, pw.elements, w, static_cast<float*>(scratch));
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d implicit GEMM weight transpose");
}

void pipeLaunch(bool big, const ConvGeometry& g, int splits, const float* x, void* scratch, const float* bias, float* y,
    cudaStream_t st)
{
    if (big)
        launchPipe<128, 128, 8, 8>(g, splits, x, scratch, bias, y, st);
    else
        launchPipe<64, 128, 8, 8>(g, splits, x, scratch, bias, y, st);
}

} // namespace convscope::cuda::igemm
