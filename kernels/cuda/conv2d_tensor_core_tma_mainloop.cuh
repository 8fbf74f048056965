// The TMA kernel's mainloop (tmaConvKernel): the copy warp, the consumer warpgroups and the pipeline between them.
// cuda.tensor_core on Hopper, fed by the Tensor Memory Accelerator (the tma… tiles, the default where it takes the
// layer): the wgmma implicit GEMM of conv2d_tensor_core_wgmma.cu with its operands copied global → shared by TMA
// instead of by every thread's cp.async. sm_90a only (kernels/CMakeLists.txt).
//
// Why: in the cp.async kernels each of 256 threads computes the addresses, bounds and zero-fill of its im2col pieces
// every k-tile (GatherRows, TapCursor): instructions and registers the warpgroups that multiply must also spend, and a
// block-wide barrier each k-tile (docs/PERFORMANCE.md "Version 4": 24–63% of the GEMM rate). One TMA instruction
// copies a whole tile, and the copy engine does the addressing, the bounds and the swizzle.
//
// The im2col without im2col: a block computes 128 output pixels that are a tileH × tileW rectangle of one image
// (tileW the power of two ≥ Q up to 128, tileH = 128 / tileW: conv2d_tensor_core_plan.h, tmaPixelTile) × BlockN output
// channels. For tap (r, s) and a run of channels c0 … c0 + row − 1, the A rows those pixels need are the input's
// rectangle at (p0·sh − top + r·dh, q0·sw − left + s·dw), every sh-th row and sw-th column: one tiled TMA box of the
// NHWC input, {row channels, tileW·sw, tileH·sh, 1} with traversal strides {1, sw, sh, 1}. The copy engine fills what
// lies off the input with zeros, which is the padding, on any side; so a k-tile is one (tap, channel run) and C must
// be a multiple of the row (128 bytes; 64 for the r64 tiles). The box lands as 128 rows of 128 (64) bytes, pixel-major,
// in the 128-byte (64-byte) swizzle: the K-major layout wgmma's descriptors read (conv2d_tensor_core_wgmma_ops.cuh).
// B is a 2-D box {row, BlockN} of the weights packed as before ([K][R·S·C], rows past K zero-filled by the engine).
//
// The pipeline (Stages deep, two mbarriers a stage) and the roles: a block is two wgmma warpgroups and one more warp,
// whose lane 0 issues every copy. For each k-tile it waits until the stage is "empty", arms the stage's "full"
// barrier with the stage's bytes and issues the two copies; the hardware completes the barrier's phase once the bytes
// have landed. Each warpgroup waits on "full", issues its wgmma on its 64 rows, and once wgmma.wait_group says k-tile
// t − 1 retired, each of its 4 warps arrives on that stage's "empty" (8 arrivals free a stage). Where two blocks share
// a multiprocessor it waits for k-tile t itself to retire and frees t's stage at once (wait_group 0): one stage more in
// flight, and the other block's products fill the tensor pipe meanwhile (7% faster on 1024→1024, docs/PERFORMANCE.md
// "Version 6"; a lone block keeps wait_group 1, which queues t + 1's products behind t's). No block-wide barrier
// in the loop, and the copying costs the multiplying warps nothing. Persistent: as many blocks as fit at once (two a
// multiprocessor where the stages fit in 113 KB, tmaMinBlocks), each looping over work items (pixel block, channel
// block, split), the ring running on across them, so the next item's copies are in flight during an item's epilogue.
// TF32: wgmma would truncate FP32 operands to TF32. Both maps copy FP32 data as CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, and
// the copy engine rounds each value to nearest, ties to even: the session's TF32 (roundTf32). So no thread touches a
// stage between its copy and its wgmma (the cp.async kernels round their A tiles in shared memory).
// Window tiles (tma128x64w, tma128x128w; conv2d_tensor_core_plan.h's tmaWindowRefusal says where): a block of one
// row of 128 output pixels, stride 1 along W, reads for tap (r, s) the input row's pixels q0 − left + s·dilW … + 127.
// So one box of 128 + (S − 1)·dilW pixels (a "window", ≤ 136 rows) holds the A operand of all S taps of kernel row r:
// tap s's is the window from row s·dilW on. The copy warp fills a window slot once per (r, channel run) and the
// weight ring once per tap; a consumer gives the slot back after its S-th tap. A wgmma descriptor may start on any
// 128-byte row of the slot: the hardware forms each row's address and swizzles by its bits, as the TMA wrote it
// (checked by tensor_core_conv_test against the host reference). The input bytes copied fall by ~S×.
// The epilogue and split-K are the cp.async kernels' (storeOutputPair), with the pixel's (p, q) from its place in the
// rectangle; pixels past P or Q were computed on whatever the box held there and are not stored.
// A fused residual add's skip through the ring (TmaParams::skipRing; the one-box-a-k-tile tiles with 128-byte rows,
// no split): after an item's k-tiles the copy warp copies the item's skip tile, 128 pixels × BlockN channels of the
// NHWC skip in boxes of 128 bytes of channels, into the ring's next entries (SKIP_ENTRIES, as many boxes an entry as
// its stage holds), and the consumers read it from there in the epilogue and give the entries back after it. So the
// skip arrives during the mainloop instead of each epilogue round waiting on its global loads (latency-bound: ncu,
// docs/PERFORMANCE.md, session 29), in shared memory the stages already have.
// Files: this one (the kernel), conv2d_tensor_core_tma.cuh (its parameters and work items),
// conv2d_tensor_core_tma_epilogue.cuh (the stores) and conv2d_tensor_core_tma_wgmma.cu (the host launcher, the one
// translation unit that includes them).
#pragma once

#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"
#include "kernels/cuda/conv2d_tensor_core_tma.cuh"
#include "kernels/cuda/conv2d_tensor_core_tma_epilogue.cuh"
#include "kernels/cuda/conv2d_tensor_core_wgmma_ops.cuh"

#include <cuda.h>

namespace convscope::cuda::tc {

namespace {

    // Arms the barrier's current phase with `bytes` of copies to come (and arrives: the barrier counts 1).
    __device__ __forceinline__ void barrierExpectBytes(uint32_t bar, uint32_t bytes)
    {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
    }
    __device__ __forceinline__ void tmaLoad4d(
        uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3, uint32_t bar)
    {
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                     "%3, %4, %5}], [%6];\n" ::"r"(dst),
                     "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                     : "memory");
    }
    __device__ __forceinline__ void tmaLoad2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar)
    {
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                     "%3}], [%4];\n" ::"r"(dst),
                     "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
                     : "memory");
    }

} // namespace

// A window tile's products for one work item, by one consumer warpgroup (rows 64·wg … of the block). For each kernel
// row and run of channels it waits for the input slot, then for each tap s for its weight tile, and multiplies the
// slot's rows s·dilW … s·dilW + 127 (tap s's A operand: the block's pixels shifted by s·dilW; a descriptor may start
// on any 128-byte row, the hardware swizzling by the address it forms) by the tile. A weight stage goes back as the
// TMA kernel's stages do (early or late, TmaParams::early); a slot once its last tap's products retired. `t` and `ja`
// count the weight tiles and the boxes taken, over the block's items.
template <typename Element, int BlockN, int Stages, int WindowSlots, bool Transposed, int AccumulatorCount>
__device__ __forceinline__ void windowProducts(const ConvGeometry& g, const TmaParams& tp, uint32_t slotBase,
    uint32_t weightBase, uint32_t fullBar, uint32_t emptyBar, uint32_t slotFull, uint32_t slotEmpty, int wg, int lane,
    float (&acc)[AccumulatorCount], int& t, int& ja)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int ROW_BYTES = 128;
    const int groups = g.r * tp.chunksPerTap;
    for (int gi = 0; gi < groups; ++gi, ++ja) {
        const int slot = ja % WindowSlots;
        barrierWait(slotFull + 8 * slot, (ja / WindowSlots) & 1, tp.spin);
        for (int s = 0; s < g.s; ++s, ++t) {
            const int stage = t % Stages;
            barrierWait(fullBar + 8 * stage, (t / Stages) & 1, tp.spin);
            const uint32_t xRows = slotBase + uint32_t(slot * tmaSlotBytes(Transposed))
                + uint32_t(wg * (Transposed ? 128 : 64) + s * g.dilW) * ROW_BYTES;
            const uint64_t dx = wgmmaDescriptor<8>(xRows),
                           dw = wgmmaDescriptor<8>(weightBase + stage * BlockN * ROW_BYTES);
            fenceAccumulators(acc);
            wgmmaFence();
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                if constexpr (Transposed) // Yᵀ = W·Xᵀ: the weights (BlockN = 64 rows) are the m64 operand, the 128
                                          // pixels the n128
                    Wgmma<Element, 128>::run(acc, dw + 2 * k, dx + 2 * k);
                else
                    Wgmma<Element, BlockN>::run(acc, dx + 2 * k, dw + 2 * k);
            }
            wgmmaCommit();
            fenceAccumulators(acc);
            if (tp.early) {
                wgmmaWait<0>();
                fenceAccumulators(acc);
                if (lane == 0) {
                    barrierArrive(emptyBar + 8 * stage);
                    if (s == g.s - 1)
                        barrierArrive(slotEmpty + 8 * slot);
                }
                continue;
            }
            wgmmaWait<1>(); // the k-tile before this one retired: its weight stage (and, s = 0, its slot) go back
            fenceAccumulators(acc);
            if (lane == 0 && (gi > 0 || s > 0)) {
                barrierArrive(emptyBar + 8 * ((t - 1) % Stages));
                if (s == 0)
                    barrierArrive(slotEmpty + 8 * ((ja - 1) % WindowSlots));
            }
        }
    }
    wgmmaWait<0>();
    fenceAccumulators(acc);
    if (!tp.early && lane == 0 && groups > 0) {
        barrierArrive(emptyBar + 8 * ((t - 1) % Stages));
        barrierArrive(slotEmpty + 8 * ((ja - 1) % WindowSlots));
    }
#endif
}

template <typename Element, int BlockN, int Stages, int RowPieces, bool PingPong, int WindowSlots, bool Transposed>
__global__ void __launch_bounds__(
    kTmaThreads, PingPong ? 1 : tmaMinBlocks(BlockN, RowPieces, Stages, WindowSlots, Transposed))
    tmaConvKernel(const __grid_constant__ CUtensorMap xMap, const __grid_constant__ CUtensorMap xHeadMap,
        const __grid_constant__ CUtensorMap wMap, const __grid_constant__ CUtensorMap skipMap, TmaParams tp,
        const float* __restrict__ bias, Element* __restrict__ y, float* __restrict__ partial)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int BlockM = Transposed ? 256 : 128, ROW_BYTES = 16 * RowPieces,
                  ROW_ELEMS = ROW_BYTES / int(sizeof(Element));
    constexpr uint32_t A_BYTES = BlockM * ROW_BYTES, STAGE_BYTES = (BlockM + BlockN) * ROW_BYTES;
    static_assert(STAGE_BYTES % 1024 == 0, "every stage starts on a swizzle atom");
    extern __shared__ __align__(1024) unsigned char smem[];
    // full[0..Stages), empty[Stages..2·Stages); window tiles: the slots' full and empty after them
    __shared__ __align__(8) uint64_t bars[2 * Stages + 2 * WindowSlots];
    static_assert(WindowSlots == 0 || (RowPieces == 8 && !PingPong), "the window tiles: 128-byte rows, cooperative");
    static_assert(
        !Transposed || (WindowSlots > 0 && BlockN == 64), "the transposed tile: a window tile of 64 channels");
    constexpr uint32_t SLOT_BYTES = tmaSlotBytes(Transposed);
    // The skip tile's boxes (128 pixels × 128 bytes), how many a stage holds, and the ring entries they take.
    constexpr int SKIP_BOX_BYTES = 128 * 128, SKIP_BOXES = BlockN * int(sizeof(Element)) / 128,
                  SKIP_PER_ENTRY = int(STAGE_BYTES) >= SKIP_BOX_BYTES ? int(STAGE_BYTES) / SKIP_BOX_BYTES : 1,
                  SKIP_ENTRIES = (SKIP_BOXES + SKIP_PER_ENTRY - 1) / SKIP_PER_ENTRY;
    constexpr bool SKIP_TILE = tmaSkipRingTile(PingPong, WindowSlots, Transposed, RowPieces);
    static_assert(!SKIP_TILE || (SKIP_ENTRIES <= Stages && SKIP_ENTRIES <= SkipTile::kMaxEntries),
        "a skip tile takes at most the ring's stages");
    const bool skipRing = SKIP_TILE && tp.skipRing;
    const ConvGeometry& g = tp.base.g;
    // The warpgroup through a shuffle, as CUTLASS does: the compiler then knows it is the same in every lane of a warp
    // and keeps it, the stage addresses and the wgmma descriptors in uniform registers (fewer instructions a k-tile).
    const int tid = threadIdx.x, lane = tid & 31, wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
    const uint32_t smemBase = (sharedAddress(smem) + 1023u) & ~1023u;
    const uint32_t fullBar = sharedAddress(bars), emptyBar = fullBar + 8 * Stages;
    // Window tiles: WindowSlots input slots first, then the weight stages (BlockN rows each).
    const uint32_t slotFull = emptyBar + 8 * Stages, slotEmpty = slotFull + 8 * WindowSlots;
    const uint32_t weightBase = smemBase + uint32_t(WindowSlots * SLOT_BYTES);
    // Each consumer warp's epilogue area, after the stages: 512 bytes for storeTile16's transposition, then the
    // item's bias (stageBias).
    const uint32_t staging = smemBase
        + uint32_t(tmaSmemBytes(BlockN, RowPieces, Stages, WindowSlots, Transposed) - tmaEpilogueBytes(BlockN))
        + uint32_t(tid >> 5) * uint32_t(tmaEpilogueBytes(BlockN) / 8);
    if (tid == 0) {
        for (int s = 0; s < Stages; ++s) {
            barrierInit(fullBar + 8 * s, 1);
            barrierInit(emptyBar + 8 * s, PingPong ? 4 : 8); // the warps that read a stage
        }
        for (int s = 0; s < WindowSlots; ++s) {
            barrierInit(slotFull + 8 * s, 1);
            barrierInit(slotEmpty + 8 * s, 8);
        }
        // The barriers' initialisation, visible to the copy engine (async proxy) before the first copy signals them.
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        fenceProxyAsync();
    }
    __syncthreads(); // the only block-wide barrier: the roles part here

    if (wg == 2) { // ---- the producer warp: its lane 0 issues every copy, k-tile after k-tile over the work items
        if (lane != 0)
            return;
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&xMap)) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&wMap)) : "memory");
        if constexpr (WindowSlots > 0) {
            // Window tiles: for each kernel row r and run of channels, one box of the input row (the block's 128
            // pixels and the taps' reach) into a slot, then the weight tile of each of the row's S taps into the ring.
            int ja = 0, jb = 0; // boxes and weight tiles issued, over all this block's work items
            for (int w = blockIdx.x; w < tp.items; w += gridDim.x) {
                const TmaItem it = tmaItemOf(tp, w, BlockM, BlockN);
                for (int gi = 0; gi < g.r * tp.chunksPerTap; ++gi, ++ja) {
                    const int r = gi / tp.chunksPerTap, chunk = gi - r * tp.chunksPerTap, slot = ja % WindowSlots;
                    if (ja >= WindowSlots)
                        barrierWait(slotEmpty + 8 * slot, ((ja / WindowSlots) - 1) & 1, tp.spin);
                    barrierExpectBytes(slotFull + 8 * slot, tp.windowBytes);
                    const uint32_t slotAt = smemBase + uint32_t(slot * SLOT_BYTES);
                    const int h = it.p0 * g.strideH - g.padTop + r * g.dilH;
                    if constexpr (Transposed) { // the first 128 pixels, then 128 + reach from row 128 on
                        tmaLoad4d(
                            slotAt, &xHeadMap, chunk * ROW_ELEMS, it.q0 - g.padLeft, h, it.n, slotFull + 8 * slot);
                        tmaLoad4d(slotAt + 128 * ROW_BYTES, &xMap, chunk * ROW_ELEMS, it.q0 + 128 - g.padLeft, h, it.n,
                            slotFull + 8 * slot);
                    } else
                        tmaLoad4d(slotAt, &xMap, chunk * ROW_ELEMS, it.q0 - g.padLeft, h, it.n, slotFull + 8 * slot);
                    for (int s = 0; s < g.s; ++s, ++jb) {
                        const int stage = jb % Stages;
                        if (jb >= Stages)
                            barrierWait(emptyBar + 8 * stage, ((jb / Stages) - 1) & 1, tp.spin);
                        barrierExpectBytes(fullBar + 8 * stage, BlockN * ROW_BYTES);
                        tmaLoad2d(weightBase + stage * BlockN * ROW_BYTES, &wMap,
                            ((r * g.s + s) * tp.chunksPerTap + chunk) * ROW_ELEMS, it.nBase, fullBar + 8 * stage);
                    }
                }
            }
            return;
        }
        int j = 0; // k-tiles issued, over all this block's work items
        for (int w = blockIdx.x; w < tp.items; w += gridDim.x) {
            const TmaItem it = tmaItemOf(tp, w, BlockM, BlockN);
            for (int lt = 0; lt < it.nk; ++lt, ++j) {
                const int stage = j % Stages;
                if (j >= Stages) // the consumers released this stage's previous k-tile
                    barrierWait(emptyBar + 8 * stage, ((j / Stages) - 1) & 1, tp.spin);
                const int kt = it.ktBegin + lt;
                const int tap = kt / tp.chunksPerTap, c0 = (kt - tap * tp.chunksPerTap) * ROW_ELEMS;
                const int r = tap / g.s, s = tap - r * g.s;
                const int h = it.p0 * g.strideH - g.padTop + r * g.dilH;
                const int wc = it.q0 * g.strideW - g.padLeft + s * g.dilW;
                const uint32_t aStage = smemBase + stage * STAGE_BYTES, bar = fullBar + 8 * stage;
                if (tp.probe & 2) { // products only: the stage is "full" at once
                    barrierArrive(bar);
                    continue;
                }
                barrierExpectBytes(bar, STAGE_BYTES);
                tmaLoad4d(aStage, &xMap, c0, wc, h, it.n, bar);
                tmaLoad2d(aStage + A_BYTES, &wMap, kt * ROW_ELEMS, it.nBase, bar);
            }
            // The item's skip tile into the next entries: box b is channels nBase + b·ROW_ELEMS …, the block's
            // tileW × tileH pixels (the engine fills what lies off the map or past K with zeros).
            if constexpr (SKIP_TILE)
                for (int e = 0; e < (skipRing ? SKIP_ENTRIES : 0); ++e, ++j) {
                    const int stage = j % Stages, first = e * SKIP_PER_ENTRY;
                    const int boxes = min(SKIP_PER_ENTRY, SKIP_BOXES - first);
                    if (j >= Stages)
                        barrierWait(emptyBar + 8 * stage, ((j / Stages) - 1) & 1, tp.spin);
                    const uint32_t at = smemBase + stage * STAGE_BYTES, bar = fullBar + 8 * stage;
                    barrierExpectBytes(bar, uint32_t(boxes * SKIP_BOX_BYTES));
                    for (int b = 0; b < boxes; ++b)
                        tmaLoad4d(at + b * SKIP_BOX_BYTES, &skipMap, it.nBase + (first + b) * ROW_ELEMS, it.q0, it.p0,
                            it.n, bar);
                }
        }
        return;
    }

    // ---- the consumers. Cooperative (PingPong false): warpgroups 0 and 1 multiply rows 64·wg … 64·wg + 63 of every
    // work item. Ping-pong (PingPong): warpgroup wg takes every other work item of the block (the ring holds them in
    // order, so one multiplies while the other runs its epilogue) and multiplies all 128 rows, as two m64 halves.
    constexpr int MH = PingPong ? 2 : 1; // m64 halves a warpgroup multiplies
    constexpr int AccumulatorCount
        = Transposed ? 64 : BlockN / 2; // accumulators a thread: m64 × n(BlockN), or (transposed) m64 × n128
    float acc[MH][AccumulatorCount];
    const int itemStep = PingPong ? 2 * gridDim.x : gridDim.x;
    int w = blockIdx.x + (PingPong ? wg * gridDim.x : 0);
    int t = PingPong && wg == 1 ? tmaItemOf(tp, blockIdx.x, BlockM, BlockN).nk
                                : 0; // the ring's k-tile (the producer's j)
    int ja = 0; // window tiles: the input boxes taken (the producer's ja)
    // Ping-pong turns (named barriers 4: warpgroup 0 → 1, 3: 1 → 0; 128 threads arrive, 128 wait): a warpgroup
    // starts an item's products only once the other has waited for every k-tile of the item before it. So the
    // multiplications alternate, and a warpgroup never waits on a stage more than one pass round the ring ahead of
    // the copies (an mbarrier's parity tells only this pass from the last one).
    const int turnWait = 3 + wg, turnGive = 4 - wg;
    for (bool first = true; w < tp.items; w += itemStep, first = false) {
        const TmaItem it = tmaItemOf(tp, w, BlockM, BlockN);
        if (PingPong && (wg == 1 || !first))
            asm volatile("bar.sync %0, 256;\n" ::"r"(turnWait) : "memory");
#pragma unroll
        for (int mh = 0; mh < MH; ++mh)
#pragma unroll
            for (int i = 0; i < AccumulatorCount; ++i)
                acc[mh][i] = 0.0f;
        // The lean epilogues' (storeTile16, storeTile32, storeTileT; a window tile never splits the reduction)
        const bool stagedBias = bias && !partial && (Transposed || g.k % 2 == 0);
        if (stagedBias)
            stageBias<BlockN>(bias, it.nBase, g.k, staging + 512);
        if constexpr (WindowSlots > 0)
            windowProducts<Element, BlockN, Stages, WindowSlots, Transposed, AccumulatorCount>(
                g, tp, smemBase, weightBase, fullBar, emptyBar, slotFull, slotEmpty, wg, lane, acc[0], t, ja);
        else
            for (int lt = 0; lt < it.nk; ++lt, ++t) {
                const int stage = t % Stages;
                const uint32_t aStage = smemBase + stage * STAGE_BYTES,
                               aRows = aStage + (PingPong ? 0 : wg) * 64 * ROW_BYTES;
                barrierWait(fullBar + 8 * stage, (t / Stages) & 1, tp.spin);
                const uint64_t db = wgmmaDescriptor<RowPieces>(aStage + A_BYTES);
#pragma unroll
                for (int mh = 0; mh < MH; ++mh)
                    fenceAccumulators(acc[mh]);
                wgmmaFence();
                // One branch round the whole batch: a branch between two wgmma makes ptxas put a wgmma.fence
                // (WARPGROUP. ARRIVE) before each, which waits for the one before and so serialises the batch (45% of
                // the tensor pipe with the probe test inside this loop, ncu).
                if (!(tp.probe & 1)) {
#pragma unroll
                    for (int k = 0; k < RowPieces / 2;
                         ++k) // 32 bytes of reduction each: +2 in the descriptor's address field
#pragma unroll
                        for (int mh = 0; mh < MH; ++mh)
                            Wgmma<Element, BlockN>::run(
                                acc[mh], wgmmaDescriptor<RowPieces>(aRows + mh * 64 * ROW_BYTES) + 2 * k, db + 2 * k);
                    wgmmaCommit(); // in the branch too: outside, ptxas commits an empty batch through a dummy wgmma
                }
#pragma unroll
                for (int mh = 0; mh < MH; ++mh)
                    fenceAccumulators(acc[mh]);
                if (tp.early) {
                    wgmmaWait<0>(); // k-tile t's wgmma retired: its stage goes back at once
#pragma unroll
                    for (int mh = 0; mh < MH; ++mh)
                        fenceAccumulators(acc[mh]);
                    if (lane == 0)
                        barrierArrive(emptyBar + 8 * stage);
                    continue;
                }
                wgmmaWait<1>(); // k-tile t − 1's wgmma retired: its stage goes back to the producer
#pragma unroll
                for (int mh = 0; mh < MH; ++mh)
                    fenceAccumulators(acc[mh]);
                if (lt > 0 && lane == 0)
                    barrierArrive(emptyBar + 8 * ((t - 1) % Stages));
            }
        const int lastStage = WindowSlots > 0 ? 0 : (t - 1) % Stages; // this item's last k-tile's
        if (PingPong && w + gridDim.x < tp.items) { // the other warpgroup's item is next in the ring: its turn
            asm volatile("bar.arrive %0, 256;\n" ::"r"(turnGive) : "memory");
            t += tmaItemOf(tp, w + gridDim.x, BlockM, BlockN).nk;
        }
        wgmmaWait<0>();
#pragma unroll
        for (int mh = 0; mh < MH; ++mh)
            fenceAccumulators(acc[mh]);
        // The last stage goes back before the epilogue: the next item's copies overlap it (windowProducts gave its
        // own back).
        if (WindowSlots == 0 && it.nk > 0 && lane == 0 && !tp.early)
            barrierArrive(emptyBar + 8 * lastStage);
        // The skip tile's entries (after the item's k-tiles), once landed.
        SkipTile skipTile {};
        if (skipRing) {
            skipTile.perEntry = SKIP_PER_ENTRY;
#pragma unroll
            for (int e = 0; e < SKIP_ENTRIES; ++e, ++t) {
                barrierWait(fullBar + 8 * (t % Stages), (t / Stages) & 1, tp.spin);
                skipTile.entry[e] = smemBase + uint32_t(t % Stages) * STAGE_BYTES;
            }
        }
        // Each warp gives the skip tile's entries back once its epilogue has read them.
        const auto releaseSkip = [&] {
            if (!skipRing)
                return;
            __syncwarp();
            if (lane == 0)
#pragma unroll
                for (int e = 0; e < SKIP_ENTRIES; ++e)
                    barrierArrive(emptyBar + 8 * ((t - SKIP_ENTRIES + e) % Stages));
        };
        if (tp.probe & 4) {
            releaseSkip();
            continue; // the probe without the epilogue
        }
        if (stagedBias)
            biasReady();

        // Accumulator 4·j + e of an m64 half: pixel row 16·(warp in the warpgroup) + lane / 4 + 8·(e / 2) of its 64,
        // channel 8·j + 2·(lane % 4) + e % 2 (conv2d_tensor_core_wgmma.cu); row i of the block is pixel
        // (p0 + i / tileW, q0 + i % tileW). The transposed tile's: storeTileT.
        // The lean epilogues take the activation chosen once (withTileActivation); storeOutputRow (split-K, odd K)
        // keeps its per-output test.
        if constexpr (Transposed)
            withTileActivation(g.act, g.actParam, [&](const auto& act) {
                storeTileT<Element>(g, act, it, tp.tileShift, wg * 128, acc[0], stagedBias, y, staging);
            });
        else {
            constexpr bool Wide = !std::is_same_v<Element, float>;
            const bool lean = !partial && g.k % (Wide ? 8 : 2) == 0; // storeTile16's or storeTile32's
#pragma unroll
            for (int mh = 0; mh < MH; ++mh) {
                const int warpRow
                    = (PingPong ? mh : wg) * 64 + ((tid & 127) >> 5) * 16; // the warp's 16 rows of the block
                int m[2], tileRow[2];
                bool valid[2];
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    tileRow[h] = warpRow + (lane >> 2) + h * 8;
                    m[h] = blockPixel(g, it, tp.tileShift, tileRow[h], valid[h]);
                }
                if (lean) {
                    withTileActivation(g.act, g.actParam, [&](const auto& act) {
                        if constexpr (Wide) {
                            bool storeValid; // storeTile16 stores row lane / 2 of the warp's 16
                            const int storeRow = blockPixel(g, it, tp.tileShift, warpRow + (lane >> 1), storeValid);
                            storeTile16<Element, BlockN>(g, act, it.nBase, storeRow, storeValid, warpRow + (lane >> 1),
                                skipTile, acc[mh], bias != nullptr, y, staging);
                        } else
                            storeTile32<BlockN>(
                                g, act, it.nBase, m, valid, tileRow, skipTile, acc[mh], bias != nullptr, y, staging);
                    });
                    continue;
                }
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    if (valid[h])
                        storeOutputRow<Element, BlockN / 8, 2>(
                            tp.base, it.z, m[h], it.nBase + 2 * (lane & 3),
                            [&](int jn) { return make_float2(acc[mh][4 * jn + 2 * h], acc[mh][4 * jn + 2 * h + 1]); },
                            bias, y, partial);
                }
            }
        }
        releaseSkip();
    }
#endif
}

} // namespace convscope::cuda::tc
