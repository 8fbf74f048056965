// cuda.tensor_core on Hopper: the implicit GEMM of conv2d_tensor_core.cu with warpgroup MMA (wgmma, sm_90a) in place of
// mma.sync. Compiled for sm_90a only, and only where the build targets sm_90 (kernels/CMakeLists.txt); the launcher
// (conv2d_tensor_core.cu) runs it on compute capability 9.0 devices, mma.sync everywhere else.
//
// Why: mma.sync takes its operands from registers, so every operand byte goes shared → registers by ldmatrix, and at
// the warp tiles that fit the register file that traffic caps the kernel near half of the Tensor Core peak
// (docs/PERFORMANCE.md, "Tensor Core implicit GEMM"). wgmma reads both operands straight from shared memory through
// descriptors, for a 64 × N × 32-byte product per instruction issued by a whole warpgroup, asynchronously: the
// warpgroup issues the next k-tile's copies while the Tensor Cores work.
//
// The block: 128 pixels (two warpgroups of 64) × BlockN output channels (64, 128 or 256), the reduction in k-tiles of
// 128 bytes (64 halves, 32 floats), the operands in shared memory K-major in the 128-byte swizzle (the layout of
// conv2d_tensor_core_kernel.cuh's swizzled<8>, which is what wgmma's 128-byte swizzle mode reads; the descriptor is in
// conv2d_tensor_core_wgmma_ops.cuh). The same im2col gather by cp.async as the mma.sync kernel (16-byte pieces,
// zero-filled off the input and past the last tap), the same packed weights, epilogue and split-K.
//
// The pipeline (Stages deep, every thread both copies and multiplies; no producer warpgroup):
//   iteration t:  wait for this thread's copies of k-tile t → (tf32: round its own A pieces to TF32 in place) →
//                 fence.proxy.async (cp.async wrote through the generic proxy, wgmma reads through the async one) →
//                 barrier → wgmma × 4 on stage t, commit → cp.async of k-tile t + Stages − 2 into stage (t − 2) →
//                 wait until at most one wgmma group (t's) is in flight.
//   Stage (t − 2) is free at iteration t: each warpgroup retired its wgmma of t − 2 (the wait at the end of t − 1)
//   before the barrier of t. So Stages − 2 k-tiles are in flight while one is multiplied and one may still be read.
// TF32: wgmma reads FP32 bit patterns and ignores the low 13 bits (truncation); the session's TF32 rounds to
// nearest even (roundTf32, as the mma.sync kernel does on its fragments), so each thread rounds the activation pieces
// it copied before the barrier. The weights were rounded when packed.
#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"
#include "kernels/cuda/conv2d_tensor_core_wgmma_ops.cuh"

namespace convscope::cuda::tc {

template <typename Element, int BlockN, int Stages, int RowPieces>
__global__ void __launch_bounds__(256, wgmmaMinBlocks(BlockN, RowPieces))
    wgmmaConvKernel(Params prm, const Element* __restrict__ x, const Element* __restrict__ wp,
        const float* __restrict__ bias, Element* __restrict__ y, float* __restrict__ partial)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int BlockM = 128, THREADS = 256, ROW_BYTES = 16 * RowPieces;
    constexpr int A_ROWS = BlockM * RowPieces / THREADS, B_ROWS = BlockN * RowPieces / THREADS;
    constexpr uint32_t A_BYTES = BlockM * ROW_BYTES, STAGE_BYTES = (BlockM + BlockN) * ROW_BYTES;
    static_assert(STAGE_BYTES % (8 * ROW_BYTES) == 0, "every tile starts on a swizzle atom");
    extern __shared__ __align__(1024) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7;
    const int mBase = blockIdx.x * BlockM, nBase = blockIdx.y * BlockN;
    const int ktBegin = blockIdx.z * prm.tilesPerSplit;
    const int nk = min(prm.kTiles, ktBegin + prm.tilesPerSplit) - ktBegin;
    // The 128-byte swizzle is a function of the address bits: the stages start 1024-aligned (1 KB extra allocated).
    const uint32_t smemBase = (sharedAddress(smem) + 1023u) & ~1023u;

    // The copy a thread does each k-tile: piece `myPiece` of A_ROWS pixel rows and B_ROWS channel rows.
    const int myPiece = tid % RowPieces, rowStep = THREADS / RowPieces;
    const GatherRows<A_ROWS> rows(prm, mBase + tid / RowPieces, rowStep);
    TapCursor at(prm, ktBegin * RowPieces + myPiece);

    auto loadTile = [&](int local, int stage) {
        const uint32_t aStage = smemBase + stage * STAGE_BYTES, bStage = aStage + A_BYTES;
        copyPixelRows<Element, RowPieces, A_ROWS, true>(aStage, prm, x, rows, at, tid / RowPieces, rowStep, myPiece);
        copyWeightRows<Element, RowPieces, B_ROWS>(
            bStage, prm, wp, nBase, tid / RowPieces, rowStep, myPiece, ktBegin + local);
        at.advance<RowPieces>(prm);
    };

    float acc[BlockN / 2];
#pragma unroll
    for (int i = 0; i < BlockN / 2; ++i)
        acc[i] = 0.0f;

#pragma unroll
    for (int st = 0; st < Stages - 2; ++st) {
        if (st < nk)
            loadTile(st, st);
        commitCopies();
    }

    for (int t = 0; t < nk; ++t) {
        const int stage = t % Stages;
        const uint32_t aStage = smemBase + stage * STAGE_BYTES, bStage = aStage + A_BYTES;
        waitCopies<Stages - 3>();
        if constexpr (std::is_same_v<Element, float>) {
#pragma unroll
            for (int i = 0; i < A_ROWS; ++i) {
                roundPieceTf32(aStage + swizzled<RowPieces>(tid / RowPieces + i * rowStep, myPiece));
            }
        }
        fenceProxyAsync();
        __syncthreads();

        const uint64_t da = wgmmaDescriptor<RowPieces>(aStage + wg * 64 * ROW_BYTES),
                       db = wgmmaDescriptor<RowPieces>(bStage);
        fenceAccumulators(acc);
        wgmmaFence();
#pragma unroll
        for (int k = 0; k < RowPieces / 2; ++k) // 32 bytes of reduction each: +2 in the descriptor's address field
            Wgmma<Element, BlockN>::run(acc, da + 2 * k, db + 2 * k);
        wgmmaCommit();
        fenceAccumulators(acc);

        const int next = t + Stages - 2;
        if (next < nk)
            loadTile(next, next % Stages);
        commitCopies();
        wgmmaWait<1>();
        fenceAccumulators(acc);
    }
    wgmmaWait<0>();
    fenceAccumulators(acc);
    waitCopies<0>();

    // Accumulator 4·j + e of a warpgroup: pixel row 16·(warp in the warpgroup) + lane / 4 + 8·(e / 2), channel
    // 8·j + 2·(lane % 4) + e % 2 (the m16n8 layout of mma.sync, n8 block j).
    const int rowBase = mBase + wg * 64 + ((tid & 127) >> 5) * 16 + (lane >> 2);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int m = rowBase + h * 8;
        if (m >= prm.m)
            continue;
        storeOutputRow<Element, BlockN / 8>(
            prm, blockIdx.z, m, nBase + 2 * (lane & 3),
            [&](int j) { return make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]); }, bias, y, partial);
    }
#endif
}

template <typename Element, int BlockN, int RowPieces = 8>
void launchWgmma(const Plan& p, const Params& prm, const Element* x, const Element* wp, const float* bias, Element* y,
    float* partial, cudaStream_t st)
{
    constexpr int Stages = wgmmaStages(BlockN, RowPieces);
    constexpr size_t smemBytes = size_t(Stages) * (128 + BlockN) * 16 * RowPieces + 1024;
    auto* kernel = wgmmaConvKernel<Element, BlockN, Stages, RowPieces>;
    if (!y) { // prepare: opt in to the shared memory (launch() in conv2d_tensor_core_kernel.cuh says why)
        CONVSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smemBytes)));
        return;
    }
    kernel<<<dim3(p.mTiles, p.nTiles, p.splits), 256, smemBytes, st>>>(prm, x, wp, bias, y, partial);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core (wgmma)");
}

template <typename Element>
void runWgmmaTyped(
    const ConvGeometry& g, const Plan& p, const void* xv, const float* bias, void* yv, void* scratch, cudaStream_t st)
{
    const LaunchArgs<Element> a(g, p, xv, yv, scratch);
    const Params& prm = a.prm;
    const Element *x = a.x, *wp = a.wp;
    Element* y = a.y;
    float* partial = a.partial;
    if (kTiles[p.tile].kernel == TileKernel::WarpSpecialized)
        return runSpecializedTyped<Element>(g, p, xv, bias, yv, scratch, st);
    if (kTiles[p.tile].rowPieces == 4) {
        if (kTiles[p.tile].bn() == 128)
            launchWgmma<Element, 128, 4>(p, prm, x, wp, bias, y, partial, st);
        else
            launchWgmma<Element, 256, 4>(p, prm, x, wp, bias, y, partial, st);
    } else
        switch (kTiles[p.tile].bn()) {
        case 64:
            launchWgmma<Element, 64>(p, prm, x, wp, bias, y, partial, st);
            break;
        case 128:
            launchWgmma<Element, 128>(p, prm, x, wp, bias, y, partial, st);
            break;
        default:
            launchWgmma<Element, 256>(p, prm, x, wp, bias, y, partial, st);
        }
    reduceSplits(g, p, a, bias, st, "conv2d tensor core (wgmma)");
}

template void runWgmmaTyped<float>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runWgmmaTyped<__half>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runWgmmaTyped<__nv_bfloat16>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);

} // namespace convscope::cuda::tc
