// cuda.tensor_core on Hopper, warp-specialized and persistent (the ws… tiles): the wgmma implicit GEMM of
// conv2d_tensor_core_wgmma.cu with its two jobs split between warpgroups. sm_90a only (kernels/CMakeLists.txt).
//
// Why: in conv2d_tensor_core_wgmma.cu every thread copies and multiplies, with a block-wide barrier each k-tile, so
// only Stages − 2 k-tiles can be in flight, and a block's pipeline fill and epilogue leave the Tensor Cores idle (one
// block a multiprocessor at these tile sizes). Here
//   - warpgroup 0 (the producer) only copies: the im2col gather of A and the packed weights B by cp.async into a ring
//     of Stages stages, k-tile after k-tile, across all the work items of its block;
//   - warpgroups 1 and 2 (the consumers, 64 pixels each) only multiply: wgmma m64nBN on a full stage, and hand the
//     stage back once the wgmma that read it retired;
//   - the hand-over is two mbarriers a stage: "full" (the producer's 128 threads arrive once their copies of the
//     k-tile landed and, tf32, were rounded; fence.proxy.async first, as cp.async writes through the generic proxy and
//     wgmma reads through the async one) and "empty" (lane 0 of each of the 8 consumer warps arrives once its
//     wgmma.wait_group says the stage is no longer read). Phases alternate each pass round the ring (parity waits);
//   - the grid is one block a multiprocessor, each looping over work items (output tile, split): while the consumers
//     run one tile's epilogue the producer already fills the stages with the next tile's operands.
// FP16/BF16: each producer thread's cp.async.mbarrier.arrive.noinc makes the hardware arrive on "full" once that
// thread's copies landed, so the producer never waits for its copies and all Stages stages can be in flight; the
// consumers then fence.proxy.async after the wait. TF32: the producer must round A in place first, so it keeps LAG
// k-tiles of copies in flight, waits for the oldest (cp.async.wait_group LAG), rounds, fences, and arrives itself.
// Registers: m64n256 needs 128 FP32 accumulators a consumer thread, so with 384 threads the producer gives registers
// back (setmaxnreg.dec 96) and the consumers take them (setmaxnreg.inc 200): 128·96 + 256·200 ≤ 384·168, the launch
// allocation (ptxas: no spills either side).
#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"
#include "kernels/cuda/conv2d_tensor_core_wgmma_ops.cuh"

namespace convscope::cuda::tc {

namespace {

    // A work item: output tile (mt, nt) of split z; m fastest, so the blocks running at once share weight tiles.
    struct Item {
        int mBase, nBase, ktBegin, nk, z;
    };
    __device__ __forceinline__ Item itemOf(const Params& prm, int w, int mTiles, int nTiles, int bn)
    {
        const int tiles = mTiles * nTiles, z = w / tiles, rest = w % tiles;
        const int ktBegin = z * prm.tilesPerSplit;
        return { (rest % mTiles) * 128, (rest / mTiles) * bn, ktBegin,
            min(prm.kTiles, ktBegin + prm.tilesPerSplit) - ktBegin, z };
    }

} // namespace

template <typename Element, int BlockN, int Stages>
__global__ void __launch_bounds__(384, 1) specializedConvKernel(Params prm, int mTiles, int nTiles, int items,
    const Element* __restrict__ x, const Element* __restrict__ wp, const float* __restrict__ bias,
    Element* __restrict__ y, float* __restrict__ partial)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int BlockM = 128, PT = 128, RowPieces = 8, ROW_BYTES = 16 * RowPieces, LAG = 2;
    constexpr bool kRounds = std::is_same_v<Element, float>; // tf32: the producer rounds A before marking a stage full
    constexpr int A_ROWS = BlockM * RowPieces / PT, B_ROWS = BlockN * RowPieces / PT, ROW_STEP = PT / RowPieces;
    constexpr uint32_t A_BYTES = BlockM * ROW_BYTES, STAGE_BYTES = (BlockM + BlockN) * ROW_BYTES;
    static_assert(STAGE_BYTES % 1024 == 0 && LAG <= Stages - 2, "swizzle atoms; the ring cannot deadlock");
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) uint64_t bars[2 * Stages]; // full[0..Stages), empty[Stages..2·Stages)
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7;
    const uint32_t smemBase = (sharedAddress(smem) + 1023u) & ~1023u;
    const uint32_t fullBar = sharedAddress(bars), emptyBar = fullBar + 8 * Stages;
    if (tid == 0)
        for (int s = 0; s < Stages; ++s) {
            barrierInit(fullBar + 8 * s, PT);
            barrierInit(emptyBar + 8 * s, 8);
        }
    __syncthreads(); // the only block-wide barrier: the roles part here

    if (wg == 0) { // ---- producer
        if constexpr (BlockN == 256)
            asm volatile("setmaxnreg.dec.sync.aligned.u32 96;\n");
        const int myPiece = tid % RowPieces;
        int j = 0, marked = 0; // k-tiles copied / marked full, counted over all this block's work items
        auto markFull = [&](int i) { // k-tile i's copies by this thread have landed
            const uint32_t aStage = smemBase + (i % Stages) * STAGE_BYTES;
            if constexpr (std::is_same_v<Element, float>) {
#pragma unroll
                for (int r = 0; r < A_ROWS; ++r) {
                    roundPieceTf32(aStage + swizzled<RowPieces>(tid / RowPieces + r * ROW_STEP, myPiece));
                }
            }
            fenceProxyAsync();
            barrierArrive(fullBar + 8 * (i % Stages));
        };
        for (int w = blockIdx.x; w < items; w += gridDim.x) {
            const Item it = itemOf(prm, w, mTiles, nTiles, BlockN);
            const GatherRows<A_ROWS> rows(prm, it.mBase + tid / RowPieces, ROW_STEP);
            TapCursor at(prm, it.ktBegin * RowPieces + myPiece);
            for (int lt = 0; lt < it.nk; ++lt, ++j) {
                const int stage = j % Stages;
                if (j >= Stages) // the consumers released this stage's previous k-tile
                    barrierWait(emptyBar + 8 * stage, ((j / Stages) - 1) & 1);
                const uint32_t aStage = smemBase + stage * STAGE_BYTES, bStage = aStage + A_BYTES;
                copyPixelRows<Element, RowPieces, A_ROWS, true>(
                    aStage, prm, x, rows, at, tid / RowPieces, ROW_STEP, myPiece);
                copyWeightRows<Element, RowPieces, B_ROWS>(
                    bStage, prm, wp, it.nBase, tid / RowPieces, ROW_STEP, myPiece, it.ktBegin + lt);
                commitCopies();
                at.advance<RowPieces>(prm);
                if constexpr (kRounds) {
                    if (j - marked >= LAG) { // LAG groups committed after k-tile `marked`: it has landed
                        waitCopies<LAG>();
                        markFull(marked++);
                    }
                } else { // the hardware arrives once this thread's copies so far have landed; no wait here
                    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(fullBar + 8 * stage)
                                 : "memory");
                }
            }
        }
        waitCopies<0>();
        if constexpr (kRounds)
            while (marked < j)
                markFull(marked++);
        return;
    }

    // ---- consumers: warpgroups 1 and 2, pixels 64·(wg − 1) … of each tile
    if constexpr (BlockN == 256)
        asm volatile("setmaxnreg.inc.sync.aligned.u32 200;\n");
    const int cw = wg - 1;
    float acc[BlockN / 2];
    int t = 0; // k-tiles consumed over all work items (the producer's j)
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
        const Item it = itemOf(prm, w, mTiles, nTiles, BlockN);
#pragma unroll
        for (int i = 0; i < BlockN / 2; ++i)
            acc[i] = 0.0f;
        for (int lt = 0; lt < it.nk; ++lt, ++t) {
            const int stage = t % Stages;
            barrierWait(fullBar + 8 * stage, (t / Stages) & 1);
            if constexpr (!kRounds) // the copies wrote through the generic proxy; wgmma reads through the async one
                fenceProxyAsync();
            const uint32_t aStage = smemBase + stage * STAGE_BYTES;
            const uint64_t da = wgmmaDescriptor(aStage + cw * 64 * ROW_BYTES), db = wgmmaDescriptor(aStage + A_BYTES);
            fenceAccumulators(acc);
            wgmmaFence();
#pragma unroll
            for (int k = 0; k < RowPieces / 2; ++k)
                Wgmma<Element, BlockN>::run(acc, da + 2 * k, db + 2 * k);
            wgmmaCommit();
            fenceAccumulators(acc);
            wgmmaWait<1>(); // the previous k-tile's wgmma retired: its stage goes back to the producer
            fenceAccumulators(acc);
            if (lt > 0 && lane == 0)
                barrierArrive(emptyBar + 8 * ((t - 1) % Stages));
        }
        wgmmaWait<0>();
        fenceAccumulators(acc);
        if (it.nk > 0 && lane == 0)
            barrierArrive(emptyBar + 8 * ((t - 1) % Stages));

        // The epilogue of conv2d_tensor_core_wgmma.cu (accumulator layout there).
        const int rowBase = it.mBase + cw * 64 + ((tid & 127) >> 5) * 16 + (lane >> 2);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = rowBase + h * 8;
            if (m >= prm.m)
                continue;
            storeOutputRow<Element, BlockN / 8>(
                prm, it.z, m, it.nBase + 2 * (lane & 3),
                [&](int jn) { return make_float2(acc[4 * jn + 2 * h], acc[4 * jn + 2 * h + 1]); }, bias, y, partial);
        }
    }
#endif
}

template <typename Element, int BlockN>
void launchSpecialized(const Plan& p, const Params& prm, const Element* x, const Element* wp, const float* bias,
    Element* y, float* partial, cudaStream_t st)
{
    constexpr int Stages = wgmmaStages(BlockN);
    constexpr size_t smemBytes = size_t(Stages) * (128 + BlockN) * 128 + 1024;
    auto* kernel = specializedConvKernel<Element, BlockN, Stages>;
    if (!y) { // prepare: opt in to the shared memory
        CONVSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smemBytes)));
        return;
    }
    kernel<<<p.ctas, 384, smemBytes, st>>>(
        prm, p.mTiles, p.nTiles, p.mTiles * p.nTiles * p.splits, x, wp, bias, y, partial);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core (wgmma, warp-specialized)");
}

template <typename Element>
void runSpecializedTyped(
    const ConvGeometry& g, const Plan& p, const void* xv, const float* bias, void* yv, void* scratch, cudaStream_t st)
{
    const LaunchArgs<Element> a(g, p, xv, yv, scratch);
    const Params& prm = a.prm;
    const Element *x = a.x, *wp = a.wp;
    Element* y = a.y;
    float* partial = a.partial;
    if (kTiles[p.tile].bn() == 128)
        launchSpecialized<Element, 128>(p, prm, x, wp, bias, y, partial, st);
    else
        launchSpecialized<Element, 256>(p, prm, x, wp, bias, y, partial, st);
    reduceSplits(g, p, a, bias, st, "conv2d tensor core (wgmma, warp-specialized)");
}

template void runSpecializedTyped<float>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runSpecializedTyped<__half>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runSpecializedTyped<__nv_bfloat16>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);

} // namespace convscope::cuda::tc
