// conv2d's weight gradient as an implicit GEMM over N·P·Q, split-K where that reduction is long.
//
// Algorithm. Per group, dW[m, n] = Σ_k A[m, k]·B[k, n] with m an output channel of the group, n = (c, r, s) a weight
// column and k = (img, p, q) an output position: A[m, k] = dy[img, m, p, q], B[k, n] the input tap x[img, c,
// p·sh − pt + r·dh, q·sw − pl + s·dw] (zero in the padding). Neither operand is materialised. The structure is the
// classic SIMT SGEMM's (CUTLASS's sgemm, the "how to optimise a CUDA SGEMM" kernels): a block of 256 threads owns a
// BM × BN tile of dW — 128×128, 128×64, 64×128 or 64×64, chosen per layer on the host (backward_index.h's
// wgradTiling: the least padded work, so a 64-channel layer does not run half-empty 128-row tiles) — and walks its
// run of the reduction in 8-deep steps. Each thread owns an (BM/16) × (BN/16) block of outputs (8×8 at 128×128),
// as runs of four 64 apart, so each of the 8 k of a step costs it BM/64 + BN/64 float4 loads from shared memory
// against (BM/16)·(BN/16) FMAs: 16 FMAs a load at 128×128 (the first version's 64×64 tile with scalar loads did 2).
// 64-channel layers (M = 64: U-Net's first stage, ResNet's stem and layer1) take the narrow 64×128 tile on 128 threads
// instead (cp.async pipeline only): 8×8 outputs a thread as at 128×128, where 256 threads on 64×128 own 4×8 each and
// spend a shared read on every 10.7 FMAs; its thread grid is 8 × 16 (two warps' rows), a thread's rows four 32 apart.
//
// Loads. Slot l of thread t fetches reduction index k0 + t % 8 of panel row / column t / 8 + 32·l: consecutive
// threads take consecutive q of one output row, so dy's loads coalesce (x's stride by the stride). The index math
// is done once where it can be: a block's A rows (a channel offset into dy's image) and B columns (c, r, s → a
// channel offset into x's image and the tap's row and column offset) are fixed for the whole run, decomposed once
// into shared tables before the k loop (in registers they pushed the 128×128 kernel past the 128 a thread that two
// blocks a multiprocessor allow); per step a thread splits its one k into (img, p, q) with two fast_divmod.h
// divisions (a multiply-high and a shift each), and each load is then a table read, two adds, a bounds test and the
// load (backward_index.h's wgradSources: the element's 32-bit offset into its image, or −1 where the operand is zero).
//
// Pipelines, two over the same tiles, loads and products (CONVSCOPE_WGRAD_PIPELINE = async, the default: cp.async
// with the narrow tile above; async-wide: cp.async on the 256-thread tiles only; registers: the register-staged one):
//   - cp.async (wgradAsyncKernel): a ring of kWgradStages = 4 shared stages; each load is a 4-byte cp.async straight
//     from global to shared memory (zero-filled where the offset is −1), the copies of the next three steps in
//     flight during a step's products, one barrier a step (after a step's wait, before the refill of the stage the
//     previous step read). No staging registers and no shared stores (at 128×128 the register-staged kernel holds 8
//     staging registers beside 64 accumulators at the 128-register cap), and three steps of latency hidden, not one.
//   - register-staged (wgradKernel, CONVSCOPE_WGRAD_PIPELINE=registers): two shared stages; the next step's loads are
//     issued into registers before the current step's products and stored to the other stage after them (one
//     barrier a step), so global latency hides behind one step's FMAs.
// The shared panels are k-major with four floats of padding a row: the transposed stores (or copies) of a warp (8 k
// × 4 lines) hit 32 banks; a warp covers 4 × 8 of the 16 × 16 thread grid, so its float4 reads of a panel row take one
// wavefront each.
//
// Split-K. The reduction (25 088 deep for a 56² layer at batch 8, 401 408 for ResNet's stem at batch 32) would
// leave a handful of blocks to walk it alone. It is cut into `splits` runs of whole 8-deep steps (backward_index.h's
// wgradSplits), chosen against the blocks the device holds at once — multiprocessors × the tile's occupancy, which
// the launcher asks the runtime for (wgradBlocksPerSm; the register caps of wgradMinBlocks make it 2 at 128×128, 3 at
// the 256-thread half tiles, 4 at 64×64 and at the narrow 64×128) — so that the grid fills whole waves: one block past
// a wave runs a second wave alone and nearly doubles the time (the U-Net encoder at batch 16 had 265 and 270 blocks for
// 264 slots under the former "about two blocks a multiprocessor" rule). Split z writes its partial tile into workspace
// slice z (the weight gradient's layout) and a second kernel sums the slices in the order z = 0, 1, … Deterministic: no
// atomics, the same sums in the same order on every run.
//
// Shapes: x [N, C, H, W], dy [N, K, P, Q], dW [K, C/G, R, S]; the grid is (column tiles, row tiles, G·splits). k and
// the offsets within one image are 32-bit (the host refuses a layer whose N·P·Q or image exceeds 2^31 − 1 elements).
// FP32 throughout (the sums of one thread in FP32 over its run; the runs' partials added in FP32).
//
// TF32 (ConvGeometry::tf32: cuda.tensor_core's training step under --math tf32): the cp.async kernel on the same
// tilings, loads and split-K, its panels unpadded and swizzled and each 8-deep step multiplied by the block's warps on
// mma.sync m16n8k8 (tf32_mma.cuh; both operands rounded to TF32 as the fragments are read, FP32 sums): 128×128 as
// 2 × 4 warps of 64 × 32, the 64×128 narrow tile as 2 × 2 of 32 × 64. The register-staged pipeline has no TF32 form.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/tf32_mma.cuh"
#include "kernels/cuda/training/backward_index.h"
#include "kernels/cuda/training/conv2d_backward_weights.cuh"

#include <algorithm>
#include <cstdlib>

namespace convscope::cuda::train {

namespace {
    WgradShape shapeOf(const ConvGeometry& g)
    {
        return { g.n, g.c, g.h, g.w, g.k, g.p, g.q, g.r, g.s, g.strideH, g.strideW, g.padTop, g.padLeft, g.dilH, g.dilW,
            g.groups };
    }

    // A layer's shape within the kernel's 32-bit index math, or a message saying which count is too large.
    void checkIndexRange(const WgradShape& s)
    {
        constexpr long long limit = 2147483647LL;
        const auto refuse = [](const std::string& what, long long count) {
            throw UnsupportedError("conv2d backward-weights on cuda: " + what + " = " + std::to_string(count)
                + " exceeds 2^31 - 1 (unsupported: the kernel's index math is 32-bit; use a smaller batch)");
        };
        if (wgradReduction(s) > limit)
            refuse("N*P*Q", wgradReduction(s));
        if ((long long)s.c * s.h * s.w > limit)
            refuse("one image of the input, C*H*W", (long long)s.c * s.h * s.w);
        if ((long long)s.k * s.p * s.q > limit)
            refuse("one image of the output gradient, K*P*Q", (long long)s.k * s.p * s.q);
    }

    // A tile's thread grid: (threads / 16) × 16 threads, each owning tm × tn outputs; a thread's rows are runs of four
    // halfM apart (wgradFragment), its columns 64 apart.
    template <int bm, int bn, int threads> struct Grid {
        static constexpr int tm = bm * 16 / threads, tn = bn / 16, halfM = threads / 4;
        static constexpr int la = bm * kWgradDepth / threads, lb = bn * kWgradDepth / threads; // loads a step
    };

    // One step's products on a shared stage: the thread's tm × tn outputs, 8 k deep.
    template <int bm, int bn, int threads, int tm = Grid<bm, bn, threads>::tm, int tn = Grid<bm, bn, threads>::tn>
    __device__ __forceinline__ void wgradProducts(const float (&as)[kWgradDepth][bm + 4],
        const float (&bs)[kWgradDepth][bn + 4], int ty, int tx, float (&acc)[tm][tn])
    {
        constexpr int halfM = Grid<bm, bn, threads>::halfM;
#pragma unroll
        for (int kk = 0; kk < kWgradDepth; ++kk) {
            float a[tm], b[tn];
#pragma unroll
            for (int i = 0; i < tm; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&as[kk][wgradFragment(ty, i, halfM)]);
                a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < tn; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&bs[kk][wgradFragment(tx, j)]);
                b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < tm; ++i)
#pragma unroll
                for (int j = 0; j < tn; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
    }

    // The block's tables of its panel rows and columns (backward_index.h), before the k loop.
    template <int bm, int bn, int threads>
    __device__ __forceinline__ void wgradTables(
        const WgradShape& g, int grp, int m0, int n0, int t, int (&rowOffset)[bm], WgradColumnTap (&tap)[bn])
    {
        for (int i = t; i < bm; i += threads)
            rowOffset[i] = wgradRowOffset(g, grp, m0 + i);
        for (int i = t; i < bn; i += threads)
            tap[i] = wgradColumnTap(g, grp, n0 + i);
        __syncthreads();
    }

    // The thread's outputs into dW (unsplit) or split z's workspace slice.
    template <int bm, int bn, int threads, int tm = Grid<bm, bn, threads>::tm, int tn = Grid<bm, bn, threads>::tn>
    __device__ __forceinline__ void wgradStore(const WgradShape& g, int grp, int z, int splits, int m0, int n0, int ty,
        int tx, const float (&acc)[tm][tn], float* out)
    {
        const int rows = wgradRows(g), cols = wgradColumns(g);
        float* dst = out + (splits > 1 ? z * wgradWeightCount(g) : 0);
#pragma unroll
        for (int i = 0; i < tm; ++i) {
            const int m = m0 + wgradFragment(ty, i, Grid<bm, bn, threads>::halfM);
            if (m >= rows)
                continue;
#pragma unroll
            for (int j = 0; j < tn; ++j) {
                const int n = n0 + wgradFragment(tx, j);
                if (n < cols)
                    dst[wgradIndex(g, grp, m, n)] = acc[i][j];
            }
        }
    }

    // The register-staged pipeline: two shared stages, the next step's loads held in registers during the products.
    template <int bm, int bn>
    __global__ void __launch_bounds__(kWgradThreads, wgradMinBlocks(bm, bn)) wgradKernel(WgradShape g, WgradDivisors d,
        const float* __restrict__ x, const float* __restrict__ dy, float* __restrict__ out, int splits)
    {
        constexpr int la = bm / 32, lb = bn / 32; // loads a thread a step, of A and of B
        __shared__ __align__(16) float as[2][kWgradDepth][bm + 4];
        __shared__ __align__(16) float bs[2][kWgradDepth][bn + 4];
        __shared__ int rowOffset[bm];
        __shared__ WgradColumnTap tap[bn];
        const int grp = int(blockIdx.z) / splits, z = int(blockIdx.z) % splits;
        const int m0 = int(blockIdx.y) * bm, n0 = int(blockIdx.x) * bn;
        const int t = int(threadIdx.x), ty = wgradThreadRow(t), tx = wgradThreadCol(t), lk = wgradLoadK(t);
        wgradTables<bm, bn, kWgradThreads>(g, grp, m0, n0, t, rowOffset, tap);
        const KRange run = wgradSplitRange(g, splits, kWgradDepth, z);

        float ra[la], rb[lb];
        const auto stage = [&](int buf) {
#pragma unroll
            for (int l = 0; l < la; ++l)
                as[buf][lk][wgradLoadLine(t, l)] = ra[l];
#pragma unroll
            for (int l = 0; l < lb; ++l)
                bs[buf][lk][wgradLoadLine(t, l)] = rb[l];
        };
        wgradFetch(g, d, x, dy, t, run.begin + lk, run.end, rowOffset, tap, ra, rb);
        stage(0);
        __syncthreads();

        float acc[bm / 16][bn / 16] = {};
        int buf = 0;
        for (long long k0 = run.begin; k0 < run.end; k0 += kWgradDepth) {
            const bool more = k0 + kWgradDepth < run.end;
            if (more) // the next step's loads in flight during this step's products
                wgradFetch(g, d, x, dy, t, k0 + kWgradDepth + lk, run.end, rowOffset, tap, ra, rb);
            wgradProducts<bm, bn, kWgradThreads>(as[buf], bs[buf], ty, tx, acc);
            if (more)
                stage(buf ^ 1);
            __syncthreads();
            buf ^= 1;
        }
        wgradStore<bm, bn, kWgradThreads>(g, grp, z, splits, m0, n0, ty, tx, acc, out);
    }

    // A 4-byte global → shared copy by cp.async (Ampere and later) of image[offset], zero-filled where offset is −1.
    __device__ __forceinline__ void copyAsync(float* dst, const float* image, int offset)
    {
        const unsigned to = unsigned(__cvta_generic_to_shared(dst));
        const bool valid = offset >= 0;
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(image + (valid ? offset : 0)),
            "r"(valid ? 4 : 0));
    }
    __device__ __forceinline__ void commitCopies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
    template <int pending> __device__ __forceinline__ void waitCopies()
    {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
    }

    // The TF32 kernel's outputs: the warp's fragments (rows from m0, columns from n0 of the group's dW) into dW or
    // split z's slice.
    template <int MT, int NT>
    __device__ __forceinline__ void wgradStoreFragments(const WgradShape& g, int grp, int z, int splits, int m0, int n0,
        int lane, const float (&acc)[MT][NT][4], float* out)
    {
        const int rows = wgradRows(g), cols = wgradColumns(g);
        float* dst = out + (splits > 1 ? z * wgradWeightCount(g) : 0);
#pragma unroll
        for (int mi = 0; mi < MT; ++mi)
#pragma unroll
            for (int ni = 0; ni < NT; ++ni)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int m = m0 + tf32::fragmentRow(lane, mi, e), n = n0 + tf32::fragmentCol(lane, ni, e);
                    if (m < rows && n < cols)
                        dst[wgradIndex(g, grp, m, n)] = acc[mi][ni][e];
                }
    }

    // The cp.async pipeline: a ring of kWgradStages shared stages, the copies of the next kWgradStages − 1 steps in
    // flight during a step's products and no staging registers (the loads go global → shared directly). Tf32: the
    // products on Tensor Cores over swizzled, unpadded panels (the top of the file).
    template <int bm, int bn, int threads, bool Tf32 = false>
    __global__ void __launch_bounds__(threads, wgradMinBlocks(bm, bn, threads)) wgradAsyncKernel(WgradShape g,
        WgradDivisors d, const float* __restrict__ x, const float* __restrict__ dy, float* __restrict__ out, int splits)
    {
        using G = Grid<bm, bn, threads>;
        using Warps = tf32::WarpGrid<bm, bn, threads>;
        constexpr int la = G::la, lb = G::lb, pad = Tf32 ? 0 : 4;
        __shared__ __align__(16) float as[kWgradStages][kWgradDepth][bm + pad];
        __shared__ __align__(16) float bs[kWgradStages][kWgradDepth][bn + pad];
        __shared__ int rowOffset[bm];
        __shared__ WgradColumnTap tap[bn];
        const int grp = int(blockIdx.z) / splits, z = int(blockIdx.z) % splits;
        const int m0 = int(blockIdx.y) * bm, n0 = int(blockIdx.x) * bn;
        const int t = int(threadIdx.x), ty = wgradThreadRow(t), tx = wgradThreadCol(t), lk = wgradLoadK(t);
        wgradTables<bm, bn, threads>(g, grp, m0, n0, t, rowOffset, tap);
        const KRange run = wgradSplitRange(g, splits, kWgradDepth, z);
        const int steps = int((run.end - run.begin + kWgradDepth - 1) / kWgradDepth);

        // Step s's copies into stage `buf`, as one commit group (an empty group past the last step keeps the count).
        const auto issue = [&](int s, int buf) {
            if (s < steps) {
                int oa[la], ob[lb];
                const WgradImages images = wgradSources<la, lb, threads>(
                    g, d, x, dy, t, run.begin + (long long)s * kWgradDepth + lk, run.end, rowOffset, tap, oa, ob);
                const auto at = [&](int line) { return Tf32 ? tf32::swizzle(lk, line) : line; };
#pragma unroll
                for (int l = 0; l < la; ++l)
                    copyAsync(&as[buf][lk][at(wgradLoadLine(t, l, threads))], images.dy, oa[l]);
#pragma unroll
                for (int l = 0; l < lb; ++l)
                    copyAsync(&bs[buf][lk][at(wgradLoadLine(t, l, threads))], images.x, ob[l]);
            }
            commitCopies();
        };
#pragma unroll
        for (int s = 0; s < kWgradStages - 1; ++s)
            issue(s, s);

        float acc[G::tm][G::tn] = {};
        float frag[Warps::mt][Warps::nt][4] = {};
        const int lane = t % 32, warp = t / 32;
        int buf = 0, next = kWgradStages - 1; // the stage step s reads; the one step s + kWgradStages − 1 fills
        for (int s = 0; s < steps; ++s) {
            waitCopies<kWgradStages - 2>(); // this thread's copies of step s landed
            __syncthreads(); // everyone's, and everyone is done with step s − 1's stage, the one refilled now
            issue(s + kWgradStages - 1, next);
            if constexpr (Tf32)
                tf32::warpSlice<Warps::mt, Warps::nt>(
                    [&](int mi, uint32_t(&af)[4]) {
                        tf32::swizzledA(&as[buf][0][0], bm, Warps::m0(warp) + mi * 16, lane, af);
                    },
                    &bs[buf][0][0], bn, Warps::n0(warp), lane, frag);
            else
                wgradProducts<bm, bn, threads>(as[buf], bs[buf], ty, tx, acc);
            buf = wgradRingNext(buf);
            next = wgradRingNext(next);
        }
        waitCopies<0>(); // no copy outlives the block (the groups past the last step are empty)
        if constexpr (Tf32)
            wgradStoreFragments(g, grp, z, splits, m0 + Warps::m0(warp), n0 + Warps::n0(warp), lane, frag, out);
        else
            wgradStore<bm, bn, threads>(g, grp, z, splits, m0, n0, ty, tx, acc, out);
    }

    // The kernel of a tiling and pipeline, for its launch and its occupancy.
    using WgradKernelFn = void (*)(WgradShape, WgradDivisors, const float*, const float*, float*, int);
    template <int bm, int bn> WgradKernelFn wgradKernelOf(WgradPipeline p)
    {
        return p == WgradPipeline::Registers ? wgradKernel<bm, bn> : wgradAsyncKernel<bm, bn, kWgradThreads>;
    }
    // The TF32 kernel of a tiling (cp.async only).
    WgradKernelFn wgradTf32KernelFor(WgradTiling t)
    {
        if (t.threads == kWgradNarrowThreads)
            return wgradAsyncKernel<64, 128, kWgradNarrowThreads, true>;
        if (t.bm == 128 && t.bn == 128)
            return wgradAsyncKernel<128, 128, kWgradThreads, true>;
        if (t.bm == 128)
            return wgradAsyncKernel<128, 64, kWgradThreads, true>;
        if (t.bn == 128)
            return wgradAsyncKernel<64, 128, kWgradThreads, true>;
        return wgradAsyncKernel<64, 64, kWgradThreads, true>;
    }
    WgradKernelFn wgradKernelFor(WgradTiling t, WgradPipeline p, bool tf32 = false)
    {
        if (tf32)
            return wgradTf32KernelFor(t);
        if (t.threads == kWgradNarrowThreads) // wgradTiling offers it with the cp.async pipeline only
            return wgradAsyncKernel<64, 128, kWgradNarrowThreads>;
        if (t.bm == 128 && t.bn == 128)
            return wgradKernelOf<128, 128>(p);
        if (t.bm == 128)
            return wgradKernelOf<128, 64>(p);
        if (t.bn == 128)
            return wgradKernelOf<64, 128>(p);
        return wgradKernelOf<64, 64>(p);
    }

    // The pipeline: cp.async with the narrow tile unless CONVSCOPE_WGRAD_PIPELINE asks for "async-wide" (cp.async on
    // the 256-thread tiles only) or "registers" (the register-staged pipeline on those tiles): the variants side by
    // side on a GPU. Any other value is refused by name.
    WgradPipeline wgradPipeline()
    {
        const char* env = std::getenv("CONVSCOPE_WGRAD_PIPELINE");
        const std::string name = env ? env : "";
        if (name.empty() || name == "async")
            return WgradPipeline::Async;
        if (name == "async-wide")
            return WgradPipeline::AsyncWide;
        if (name == "registers")
            return WgradPipeline::Registers;
        throw UnsupportedError("conv2d backward-weights on cuda: CONVSCOPE_WGRAD_PIPELINE = '" + name
            + "' (unsupported: 'async', 'async-wide' or 'registers')");
    }

    // How many blocks of the tiling's kernel a multiprocessor holds at once (the runtime's answer for this device:
    // 2 at 128×128, 3 at 128×64 and 64×128, 4 at 64×64 on sm_90 with the register caps above).
    int wgradBlocksPerSm(WgradTiling t, WgradPipeline p, bool tf32)
    {
        int blocks = 0;
        CONVSCOPE_CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, wgradKernelFor(t, p, tf32), t.threads, 0));
        return std::max(blocks, 1);
    }

    // The layer's pipeline: TF32 runs the cp.async one (its only form), FP32 the one CONVSCOPE_WGRAD_PIPELINE names.
    WgradPipeline pipelineOf(const ConvGeometry& g) { return g.tf32 ? WgradPipeline::Async : wgradPipeline(); }

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

} // namespace

int conv2dWgradSplits(const ConvGeometry& g, int sms)
{
    const WgradShape s = shapeOf(g);
    checkIndexRange(s);
    const WgradTiling t = wgradTiling(s, pipelineOf(g));
    return wgradSplits(s, t, sms, wgradBlocksPerSm(t, pipelineOf(g), g.tf32 != 0));
}

size_t conv2dWgradWorkspaceBytes(const ConvGeometry& g, int sms)
{
    const int splits = conv2dWgradSplits(g, sms);
    return splits > 1 ? size_t(splits) * size_t(wgradWeightCount(shapeOf(g))) * sizeof(float) : 0;
}

std::string conv2dWgradNote(const ConvGeometry& g, int sms)
{
    const WgradShape s = shapeOf(g);
    const WgradPipeline p = pipelineOf(g);
    const WgradTiling t = wgradTiling(s, p);
    const int splits = conv2dWgradSplits(g, sms);
    return "backward-weights: implicit GEMM " + std::to_string(t.bm) + "x" + std::to_string(t.bn) + " tiles ("
        + (g.tf32 ? "TF32 mma.sync m16n8k8, " : "") + std::to_string(t.threads) + " threads, "
        + std::to_string(wgradBlocksPerSm(t, p, g.tf32 != 0)) + " blocks a multiprocessor, 8-deep steps, "
        + (p == WgradPipeline::Registers ? std::string("register double-buffered")
                                         : std::to_string(kWgradStages) + "-stage cp.async")
        + ") over N*P*Q = " + std::to_string(wgradReduction(s))
        + (splits > 1 ? ", split-K " + std::to_string(splits) + " (partials summed in order in a second pass)"
                      : ", unsplit");
}

void conv2dBackwardWeights(
    const ConvGeometry& g, const float* x, const float* dy, float* dw, float* workspace, int sms, cudaStream_t st)
{
    const WgradShape s = shapeOf(g);
    const WgradTiling t = wgradTiling(s, pipelineOf(g));
    const int splits = conv2dWgradSplits(g, sms);
    if (splits > 1 && !workspace)
        throw Error("conv2d backward-weights: split-K " + std::to_string(splits) + " without a workspace");
    const dim3 grid(unsigned((wgradColumns(s) + t.bn - 1) / t.bn), unsigned((wgradRows(s) + t.bm - 1) / t.bm),
        unsigned(g.groups * splits));
    const WgradDivisors d = wgradDivisors(s);
    float* out = splits > 1 ? workspace : dw;
    wgradKernelFor(t, pipelineOf(g), g.tf32 != 0)<<<grid, unsigned(t.threads), 0, st>>>(s, d, x, dy, out, splits);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d backward-weights (implicit GEMM)");
    if (splits > 1) {
        const long long count = wgradWeightCount(s);
        const long long blocks = std::min<long long>((count + 255) / 256, 4096);
        sumSplitsKernel<<<unsigned(blocks), 256, 0, st>>>(workspace, count, splits, dw);
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d backward-weights (split-K sum)");
    }
}

} // namespace convscope::cuda::train
