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
// (tileW the power of two ≥ Q up to 128, tileH = 128 / tileW: conv2d_tensor_core_plan.h, tmaPixelTile) × BN output
// channels. For tap (r, s) and a run of channels c0 … c0 + row − 1, the A rows those pixels need are the input's
// rectangle at (p0·sh − top + r·dh, q0·sw − left + s·dw), every sh-th row and sw-th column: one tiled TMA box of the
// NHWC input, {row channels, tileW·sw, tileH·sh, 1} with traversal strides {1, sw, sh, 1}. The copy engine fills what
// lies off the input with zeros, which is the padding, on any side; so a k-tile is one (tap, channel run) and C must
// be a multiple of the row (128 bytes; 64 for the r64 tiles). The box lands as 128 rows of 128 (64) bytes, pixel-major,
// in the 128-byte (64-byte) swizzle: the K-major layout wgmma's descriptors read (conv2d_tensor_core_wgmma_ops.cuh).
// B is a 2-D box {row, BN} of the weights packed as before ([K][R·S·C], rows past K zero-filled by the engine).
//
// The pipeline (STAGES deep, two mbarriers a stage) and the roles: a block is two wgmma warpgroups and one more warp,
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
#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"
#include "kernels/cuda/conv2d_tensor_core_wgmma_ops.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <bit>
#include <utility>

namespace convscope::cuda::tc {

namespace {

    struct TmaParams {
        Params base; // the geometry, N·P·Q and the split (storeOutputPair's)
        int tileShift; // log2 tileW
        int tilesP, tilesQ;
        int chunksPerTap; // C / the row's channels
        int mTiles, nTiles, items; // work items: mTiles · nTiles · splits
        int probe; // bits: 1 copies only, 2 products only, 4 no epilogue (TensorCoreOptions::probe)
        int spin; // wait by test_wait (TensorCoreOptions::spin)
        int early; // give a stage back once its products retired (TensorCoreOptions::release)
        int windowBytes; // window tiles: the bytes of a slot's boxes, (128 + (S − 1)·dilW) rows of 128 bytes (+ 128
                         // rows for the transposed tile's)
    };

    // A work item: the pixel block (n, p0, q0), the output channels from nBase, split z's k-tiles. Pixel blocks
    // fastest (q, then p, then n), so the blocks running at once share a weight tile. `bm`: a block's pixels, tileW ·
    // tileH (128; 256 for the transposed tile).
    struct TmaItem {
        int n, p0, q0, nBase, ktBegin, nk, z;
    };
    __device__ __forceinline__ TmaItem tmaItemOf(const TmaParams& tp, int w, int bm, int bn)
    {
        const int tiles = tp.mTiles * tp.nTiles, z = w / tiles, rest = w - z * tiles;
        const int mt = rest % tp.mTiles, nt = rest / tp.mTiles;
        const int tq = mt % tp.tilesQ, pn = mt / tp.tilesQ;
        const int ktBegin = z * tp.base.tilesPerSplit;
        return { pn / tp.tilesP, (pn % tp.tilesP) * (bm >> tp.tileShift), tq << tp.tileShift, nt * bn, ktBegin,
            min(tp.base.kTiles, ktBegin + tp.base.tilesPerSplit) - ktBegin, z };
    }
    // Pixel i of an item's block, (p0 + i / tileW, q0 + i % tileW): its index in the output's N·P·Q, and whether it is
    // on the map (pixels past P or Q were computed on whatever the box held there and are not stored).
    __device__ __forceinline__ int blockPixel(
        const ConvGeometry& g, const TmaItem& it, int tileShift, int i, bool& valid)
    {
        const int p = it.p0 + (i >> tileShift), q = it.q0 + (i & ((1 << tileShift) - 1));
        valid = p < g.p && q < g.q;
        return (it.n * g.p + p) * g.q + q;
    }

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

    // Two outputs rounded to the 16-bit type T, the first in the low half (the lower address).
    template <typename T> __device__ __forceinline__ uint32_t packPair(float v0, float v1)
    {
        if constexpr (std::is_same_v<T, __half>) {
            const __half2 h = __floats2half2_rn(v0, v1);
            return *reinterpret_cast<const uint32_t*>(&h);
        } else {
            const __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
            return *reinterpret_cast<const uint32_t*>(&h);
        }
    }

    // The bias of a work item's BN output channels, copied global → shared by cp.async at the item's start into the
    // warp's own area (zero past K), so the epilogue reads it from shared memory: read from global memory there,
    // each load's latency stood between the accumulators and their stores (ncu: the epilogue's largest stalls,
    // docs/PERFORMANCE.md "Version 7"). Waited for by biasReady.
    template <int BN>
    __device__ __forceinline__ void stageBias(const float* __restrict__ bias, int nBase, int kTotal, uint32_t area)
    {
        const int lane = threadIdx.x & 31;
        if ((reinterpret_cast<uintptr_t>(bias + nBase) & 15) == 0) {
#pragma unroll
            for (int i = 4 * lane; i < BN; i += 128) {
                const int n = max(0, min(4, kTotal - (nBase + i))); // channels inside K; the rest zero-filled
                asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(area + 4 * i),
                             "l"(n > 0 ? bias + nBase + i : bias), "r"(4 * n)
                             : "memory");
            }
            return;
        }
#pragma unroll
        for (int i = lane; i < BN; i += 32) {
            const bool in = nBase + i < kTotal;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(area + 4 * i),
                         "l"(in ? bias + nBase + i : bias), "r"(in ? 4 : 0)
                         : "memory");
        }
    }
    // The warp's staged bias is there to read (every lane's copies landed).
    __device__ __forceinline__ void biasReady()
    {
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        __syncwarp();
    }
    // The staged bias of the item's channels c, c + 1 (zero without a bias).
    __device__ __forceinline__ float2 biasPair(bool hasBias, uint32_t area, int c)
    {
        float2 b = make_float2(0.0f, 0.0f);
        if (hasBias)
            asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(b.x), "=f"(b.y) : "r"(area + 4 * c) : "memory");
        return b;
    }

    // The staged bias of the item's channel c (zero without a bias).
    __device__ __forceinline__ float biasOne(bool hasBias, uint32_t area, int c)
    {
        float b = 0.0f;
        if (hasBias)
            asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(b) : "r"(area + 4 * c) : "memory");
        return b;
    }

    // The staging area (512 bytes a warp) is 16 rows of 32 bytes, 16 channels of 16 pixels; row r's two 16-byte
    // halves swapped where r mod 8 ≥ 4, so that neither an stmatrix (8 rows of one half a matrix) nor the read back
    // (two halves of 16 rows) has a bank conflict.
    __device__ __forceinline__ uint32_t stagingAt(uint32_t staging, int row, int half)
    {
        return staging + uint32_t(row * 32 + ((half ^ ((row >> 2) & 1)) << 4));
    }
    // One round through the staging area: the warp's four packed 8 × 8 blocks x written by stmatrix (TRANS: each
    // block transposed), then this lane's 16 bytes read back.
    template <bool TRANS>
    __device__ __forceinline__ uint4 stagingRound(uint32_t writeAt, uint32_t readAt, const uint32_t (&x)[4])
    {
        __syncwarp(); // the last round's reads are done before the area is written again
        if constexpr (TRANS)
            asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(writeAt),
                         "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3])
                         : "memory");
        else
            asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(writeAt), "r"(x[0]),
                         "r"(x[1]), "r"(x[2]), "r"(x[3])
                         : "memory");
        __syncwarp();
        uint4 v;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(readAt)
                     : "memory");
        return v;
    }

    // The epilogue of a 16-bit output (no split, K a multiple of 8): bias, activation and rounding as storeOutputPair,
    // through a 512-byte staging area of the warp's own. A warp's accumulators are 16 pixel rows × BN channels, each
    // lane holding channel pairs 2·(lane % 4) of every n8 block in rows lane / 4 and lane / 4 + 8: exactly the
    // fragments of stmatrix. For each 16 channels, one stmatrix.x4 writes the 16 × 16 block (stagingAt's layout);
    // lane l reads half l % 2 of row l / 2 back and stores it, 16 bytes, so a warp's store is 16 whole
    // 32-byte sectors. ~6 instructions for 8 outputs where the quad exchange of shuffles and selects took ~16
    // (docs/PERFORMANCE.md "Version 7": the epilogue was 42% of the time of 64→128 @256², fp16). `storeRow`:
    // the pixel index of row lane / 2 of the warp's 16, `storeValid` whether it is on the output map.
    template <typename T, int BN>
    __device__ __forceinline__ void storeTile16(const ConvGeometry& g, int nBase, int storeRow, bool storeValid,
        const float (&acc)[BN / 2], bool hasBias, T* __restrict__ y, uint32_t staging)
    {
        const int lane = threadIdx.x & 31, quad = lane & 3;
        // stmatrix: lane l gives the address of row l % 8 of matrix l / 8 (matrix i: rows 8·(i % 2) …, channels
        // 8·(i / 2) …); the read back: row l / 2, half l % 2.
        const uint32_t writeAt = stagingAt(staging, ((lane >> 3) & 1) * 8 + (lane & 7), lane >> 4);
        const int rHalf = lane & 1;
        const uint32_t readAt = stagingAt(staging, lane >> 1, rHalf);
        T* const out = y + size_t(storeRow) * g.k + nBase + 8 * rHalf;
#pragma unroll
        for (int j = 0; j < BN / 8; j += 2) {
            uint32_t x[4];
#pragma unroll
            for (int b = 0; b < 2; ++b) {
                const float2 bp = biasPair(hasBias, staging + 512, 8 * (j + b) + 2 * quad);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int a = 4 * (j + b) + 2 * h;
                    x[2 * b + h] = packPair<T>(
                        epilogue(g.act, g.actParam, acc[a] + bp.x), epilogue(g.act, g.actParam, acc[a + 1] + bp.y));
                }
            }
            const uint4 v = stagingRound<false>(writeAt, readAt, x);
            if (storeValid && nBase + 8 * (j + rHalf) < g.k)
                *reinterpret_cast<uint4*>(out + 8 * j) = v;
        }
    }

    // The epilogue of an FP32 output (tf32; no split, K even): the pair stores of storeOutputPair, a warp's store 8
    // whole 32-byte sectors, with the row pointers and each block's bias pair computed once instead of per value.
    template <int BN>
    __device__ __forceinline__ void storeTile32(const ConvGeometry& g, int nBase, const int (&m)[2],
        const bool (&valid)[2], const float (&acc)[BN / 2], bool hasBias, float* __restrict__ y, uint32_t staging)
    {
        const int quad = threadIdx.x & 3;
        float* const row0 = y + size_t(m[0]) * g.k + nBase + 2 * quad;
        float* const row1 = y + size_t(m[1]) * g.k + nBase + 2 * quad;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            if (nBase + 8 * j + 2 * quad >= g.k)
                continue;
            const float2 bp = biasPair(hasBias, staging + 512, 8 * j + 2 * quad);
            if (valid[0])
                *reinterpret_cast<float2*>(row0 + 8 * j) = make_float2(
                    epilogue(g.act, g.actParam, acc[4 * j] + bp.x), epilogue(g.act, g.actParam, acc[4 * j + 1] + bp.y));
            if (valid[1])
                *reinterpret_cast<float2*>(row1 + 8 * j)
                    = make_float2(epilogue(g.act, g.actParam, acc[4 * j + 2] + bp.x),
                        epilogue(g.act, g.actParam, acc[4 * j + 3] + bp.y));
        }
    }

    // The transposed tile's epilogue (Yᵀ = W·Xᵀ): a warp's accumulators are 16 of the item's output channels
    // (c0 = 16·(warp in the warpgroup) + lane / 4, and c0 + 8) × the warpgroup's 128 pixels (pairs 2·(lane % 4) of
    // each n8 block): accumulator 4·j + 2·h + e is channel c0 + 8·h of pixel 8·j + 2·(lane % 4) + e. A 16-bit output
    // with K a multiple of 8: for each 16 pixels, stmatrix.trans turns the four 8 × 8 blocks (channels × pixels) into
    // pixel rows of 8 channels, written as storeTile16's staging rows (16 pixels × 16 channels) and stored 16 bytes a
    // lane. Otherwise one value a store (a warp's store is 4 pixels × 8 consecutive channels). `pixelBase`: the
    // warpgroup's first pixel in the block.
    template <typename T>
    __device__ __forceinline__ void storeTileT(const ConvGeometry& g, const TmaItem& it, int tileShift, int pixelBase,
        const float (&acc)[64], bool hasBias, T* __restrict__ y, uint32_t staging)
    {
        const int lane = threadIdx.x & 31, quad = lane & 3, warp = (threadIdx.x >> 5) & 3;
        const int c0 = 16 * warp + (lane >> 2);
        const float bias0 = biasOne(hasBias, staging + 512, c0), bias1 = biasOne(hasBias, staging + 512, c0 + 8);
        if constexpr (!std::is_same_v<T, float>) {
            if (g.k % 8 == 0) {
                // stmatrix.trans: lane l gives row l % 8 of matrix l / 8, matrix (h, b) = (m % 2, m / 2) being
                // channels 8·h … × pixels 8·b … of the 16; stored transposed, its row r is pixel 8·b + r: staging row
                // 8·b + r, half h (stagingAt).
                const uint32_t writeAt = stagingAt(staging, (lane >> 4) * 8 + (lane & 7), (lane >> 3) & 1);
                const int rRow = lane >> 1, rHalf = lane & 1;
                const uint32_t readAt = stagingAt(staging, rRow, rHalf);
                const int channel = it.nBase + 16 * warp + 8 * rHalf;
#pragma unroll
                for (int j = 0; j < 16; j += 2) {
                    uint32_t x[4];
#pragma unroll
                    for (int b = 0; b < 2; ++b)
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int a = 4 * (j + b) + 2 * h;
                            const float bh = h ? bias1 : bias0;
                            x[2 * b + h] = packPair<T>(
                                epilogue(g.act, g.actParam, acc[a] + bh), epilogue(g.act, g.actParam, acc[a + 1] + bh));
                        }
                    const uint4 v = stagingRound<true>(writeAt, readAt, x);
                    bool valid;
                    const int m = blockPixel(g, it, tileShift, pixelBase + 8 * j + rRow, valid);
                    if (valid && channel < g.k)
                        *reinterpret_cast<uint4*>(y + size_t(m) * g.k + channel) = v;
                }
                return;
            }
        }
#pragma unroll
        for (int j = 0; j < 16; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                bool valid;
                const int m = blockPixel(g, it, tileShift, pixelBase + 8 * j + 2 * quad + e, valid);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int c = it.nBase + c0 + 8 * h;
                    if (valid && c < g.k)
                        y[size_t(m) * g.k + c] = gpu::fromFloat<T>(
                            epilogue(g.act, g.actParam, acc[4 * j + 2 * h + e] + (h ? bias1 : bias0)));
                }
            }
    }
} // namespace

// A window tile's products for one work item, by one consumer warpgroup (rows 64·wg … of the block). For each kernel
// row and run of channels it waits for the input slot, then for each tap s for its weight tile, and multiplies the
// slot's rows s·dilW … s·dilW + 127 (tap s's A operand: the block's pixels shifted by s·dilW; a descriptor may start
// on any 128-byte row, the hardware swizzling by the address it forms) by the tile. A weight stage goes back as the
// TMA kernel's stages do (early or late, TmaParams::early); a slot once its last tap's products retired. `t` and `ja`
// count the weight tiles and the boxes taken, over the block's items.
template <typename T, int BN, int STAGES, int WA, bool TR, int ACC>
__device__ __forceinline__ void windowProducts(const ConvGeometry& g, const TmaParams& tp, uint32_t slotBase,
    uint32_t weightBase, uint32_t fullBar, uint32_t emptyBar, uint32_t slotFull, uint32_t slotEmpty, int wg, int lane,
    float (&acc)[ACC], int& t, int& ja)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int ROW_BYTES = 128;
    const int groups = g.r * tp.chunksPerTap;
    for (int gi = 0; gi < groups; ++gi, ++ja) {
        const int slot = ja % WA;
        barrierWait(slotFull + 8 * slot, (ja / WA) & 1, tp.spin);
        for (int s = 0; s < g.s; ++s, ++t) {
            const int stage = t % STAGES;
            barrierWait(fullBar + 8 * stage, (t / STAGES) & 1, tp.spin);
            const uint32_t xRows = slotBase + uint32_t(slot * tmaSlotBytes(TR))
                + uint32_t(wg * (TR ? 128 : 64) + s * g.dilW) * ROW_BYTES;
            const uint64_t dx = wgmmaDescriptor<8>(xRows), dw = wgmmaDescriptor<8>(weightBase + stage * BN * ROW_BYTES);
            fenceAccumulators(acc);
            wgmmaFence();
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                if constexpr (TR) // Yᵀ = W·Xᵀ: the weights (BN = 64 rows) are the m64 operand, the 128 pixels the n128
                    Wgmma<T, 128>::run(acc, dw + 2 * k, dx + 2 * k);
                else
                    Wgmma<T, BN>::run(acc, dx + 2 * k, dw + 2 * k);
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
                barrierArrive(emptyBar + 8 * ((t - 1) % STAGES));
                if (s == 0)
                    barrierArrive(slotEmpty + 8 * ((ja - 1) % WA));
            }
        }
    }
    wgmmaWait<0>();
    fenceAccumulators(acc);
    if (!tp.early && lane == 0 && groups > 0) {
        barrierArrive(emptyBar + 8 * ((t - 1) % STAGES));
        barrierArrive(slotEmpty + 8 * ((ja - 1) % WA));
    }
#endif
}

template <typename T, int BN, int STAGES, int RP, bool PP, int WA, bool TR>
__global__ void __launch_bounds__(kTmaThreads, PP ? 1 : tmaMinBlocks(BN, RP, STAGES, WA, TR))
    tmaConvKernel(const __grid_constant__ CUtensorMap xMap, const __grid_constant__ CUtensorMap xHeadMap,
        const __grid_constant__ CUtensorMap wMap, TmaParams tp, const float* __restrict__ bias, T* __restrict__ y,
        float* __restrict__ partial)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int BM = TR ? 256 : 128, ROW_BYTES = 16 * RP, ROW_ELEMS = ROW_BYTES / int(sizeof(T));
    constexpr uint32_t A_BYTES = BM * ROW_BYTES, STAGE_BYTES = (BM + BN) * ROW_BYTES;
    static_assert(STAGE_BYTES % 1024 == 0, "every stage starts on a swizzle atom");
    extern __shared__ __align__(1024) unsigned char smem[];
    // full[0..STAGES), empty[STAGES..2·STAGES); window tiles: the slots' full and empty after them
    __shared__ __align__(8) uint64_t bars[2 * STAGES + 2 * WA];
    static_assert(WA == 0 || (RP == 8 && !PP), "the window tiles: 128-byte rows, cooperative");
    static_assert(!TR || (WA > 0 && BN == 64), "the transposed tile: a window tile of 64 channels");
    constexpr uint32_t SLOT_BYTES = tmaSlotBytes(TR);
    const ConvGeometry& g = tp.base.g;
    // The warpgroup through a shuffle, as CUTLASS does: the compiler then knows it is the same in every lane of a warp
    // and keeps it, the stage addresses and the wgmma descriptors in uniform registers (fewer instructions a k-tile).
    const int tid = threadIdx.x, lane = tid & 31, wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
    const uint32_t smemBase = (sharedAddress(smem) + 1023u) & ~1023u;
    const uint32_t fullBar = sharedAddress(bars), emptyBar = fullBar + 8 * STAGES;
    // Window tiles: WA input slots first, then the weight stages (BN rows each).
    const uint32_t slotFull = emptyBar + 8 * STAGES, slotEmpty = slotFull + 8 * WA;
    const uint32_t weightBase = smemBase + uint32_t(WA * SLOT_BYTES);
    // Each consumer warp's epilogue area, after the stages: 512 bytes for storeTile16's transposition, then the
    // item's bias (stageBias).
    const uint32_t staging = smemBase + uint32_t(tmaSmemBytes(BN, RP, STAGES, WA, TR) - tmaEpilogueBytes(BN))
        + uint32_t(tid >> 5) * uint32_t(tmaEpilogueBytes(BN) / 8);
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrierInit(fullBar + 8 * s, 1);
            barrierInit(emptyBar + 8 * s, PP ? 4 : 8); // the warps that read a stage
        }
        for (int s = 0; s < WA; ++s) {
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
        if constexpr (WA > 0) {
            // Window tiles: for each kernel row r and run of channels, one box of the input row (the block's 128
            // pixels and the taps' reach) into a slot, then the weight tile of each of the row's S taps into the ring.
            int ja = 0, jb = 0; // boxes and weight tiles issued, over all this block's work items
            for (int w = blockIdx.x; w < tp.items; w += gridDim.x) {
                const TmaItem it = tmaItemOf(tp, w, BM, BN);
                for (int gi = 0; gi < g.r * tp.chunksPerTap; ++gi, ++ja) {
                    const int r = gi / tp.chunksPerTap, chunk = gi - r * tp.chunksPerTap, slot = ja % WA;
                    if (ja >= WA)
                        barrierWait(slotEmpty + 8 * slot, ((ja / WA) - 1) & 1, tp.spin);
                    barrierExpectBytes(slotFull + 8 * slot, tp.windowBytes);
                    const uint32_t slotAt = smemBase + uint32_t(slot * SLOT_BYTES);
                    const int h = it.p0 * g.strideH - g.padTop + r * g.dilH;
                    if constexpr (TR) { // the first 128 pixels, then 128 + reach from row 128 on
                        tmaLoad4d(
                            slotAt, &xHeadMap, chunk * ROW_ELEMS, it.q0 - g.padLeft, h, it.n, slotFull + 8 * slot);
                        tmaLoad4d(slotAt + 128 * ROW_BYTES, &xMap, chunk * ROW_ELEMS, it.q0 + 128 - g.padLeft, h, it.n,
                            slotFull + 8 * slot);
                    } else
                        tmaLoad4d(slotAt, &xMap, chunk * ROW_ELEMS, it.q0 - g.padLeft, h, it.n, slotFull + 8 * slot);
                    for (int s = 0; s < g.s; ++s, ++jb) {
                        const int stage = jb % STAGES;
                        if (jb >= STAGES)
                            barrierWait(emptyBar + 8 * stage, ((jb / STAGES) - 1) & 1, tp.spin);
                        barrierExpectBytes(fullBar + 8 * stage, BN * ROW_BYTES);
                        tmaLoad2d(weightBase + stage * BN * ROW_BYTES, &wMap,
                            ((r * g.s + s) * tp.chunksPerTap + chunk) * ROW_ELEMS, it.nBase, fullBar + 8 * stage);
                    }
                }
            }
            return;
        }
        int j = 0; // k-tiles issued, over all this block's work items
        for (int w = blockIdx.x; w < tp.items; w += gridDim.x) {
            const TmaItem it = tmaItemOf(tp, w, BM, BN);
            for (int lt = 0; lt < it.nk; ++lt, ++j) {
                const int stage = j % STAGES;
                if (j >= STAGES) // the consumers released this stage's previous k-tile
                    barrierWait(emptyBar + 8 * stage, ((j / STAGES) - 1) & 1, tp.spin);
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
        }
        return;
    }

    // ---- the consumers. Cooperative (PP false): warpgroups 0 and 1 multiply rows 64·wg … 64·wg + 63 of every work
    // item. Ping-pong (PP): warpgroup wg takes every other work item of the block (the ring holds them in order, so
    // one multiplies while the other runs its epilogue) and multiplies all 128 rows, as two m64 halves.
    constexpr int MH = PP ? 2 : 1; // m64 halves a warpgroup multiplies
    constexpr int ACC = TR ? 64 : BN / 2; // accumulators a thread: m64 × n(BN), or (transposed) m64 × n128
    float acc[MH][ACC];
    const int itemStep = PP ? 2 * gridDim.x : gridDim.x;
    int w = blockIdx.x + (PP ? wg * gridDim.x : 0);
    int t = PP && wg == 1 ? tmaItemOf(tp, blockIdx.x, BM, BN).nk : 0; // the ring's k-tile (the producer's j)
    int ja = 0; // window tiles: the input boxes taken (the producer's ja)
    // Ping-pong turns (named barriers 4: warpgroup 0 → 1, 3: 1 → 0; 128 threads arrive, 128 wait): a warpgroup
    // starts an item's products only once the other has waited for every k-tile of the item before it. So the
    // multiplications alternate, and a warpgroup never waits on a stage more than one pass round the ring ahead of
    // the copies (an mbarrier's parity tells only this pass from the last one).
    const int turnWait = 3 + wg, turnGive = 4 - wg;
    for (bool first = true; w < tp.items; w += itemStep, first = false) {
        const TmaItem it = tmaItemOf(tp, w, BM, BN);
        if (PP && (wg == 1 || !first))
            asm volatile("bar.sync %0, 256;\n" ::"r"(turnWait) : "memory");
#pragma unroll
        for (int mh = 0; mh < MH; ++mh)
#pragma unroll
            for (int i = 0; i < ACC; ++i)
                acc[mh][i] = 0.0f;
        // The lean epilogues' (storeTile16, storeTile32, storeTileT; a window tile never splits the reduction)
        const bool stagedBias = bias && !partial && (TR || g.k % 2 == 0);
        if (stagedBias)
            stageBias<BN>(bias, it.nBase, g.k, staging + 512);
        if constexpr (WA > 0)
            windowProducts<T, BN, STAGES, WA, TR, ACC>(
                g, tp, smemBase, weightBase, fullBar, emptyBar, slotFull, slotEmpty, wg, lane, acc[0], t, ja);
        else
            for (int lt = 0; lt < it.nk; ++lt, ++t) {
                const int stage = t % STAGES;
                const uint32_t aStage = smemBase + stage * STAGE_BYTES, aRows = aStage + (PP ? 0 : wg) * 64 * ROW_BYTES;
                barrierWait(fullBar + 8 * stage, (t / STAGES) & 1, tp.spin);
                const uint64_t db = wgmmaDescriptor<RP>(aStage + A_BYTES);
#pragma unroll
                for (int mh = 0; mh < MH; ++mh)
                    fenceAccumulators(acc[mh]);
                wgmmaFence();
                // One branch round the whole batch: a branch between two wgmma makes ptxas put a wgmma.fence
                // (WARPGROUP. ARRIVE) before each, which waits for the one before and so serialises the batch (45% of
                // the tensor pipe with the probe test inside this loop, ncu).
                if (!(tp.probe & 1)) {
#pragma unroll
                    for (int k = 0; k < RP / 2; ++k) // 32 bytes of reduction each: +2 in the descriptor's address field
#pragma unroll
                        for (int mh = 0; mh < MH; ++mh)
                            Wgmma<T, BN>::run(
                                acc[mh], wgmmaDescriptor<RP>(aRows + mh * 64 * ROW_BYTES) + 2 * k, db + 2 * k);
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
                    barrierArrive(emptyBar + 8 * ((t - 1) % STAGES));
            }
        const int lastStage = WA > 0 ? 0 : (t - 1) % STAGES; // this item's last k-tile's
        if (PP && w + gridDim.x < tp.items) { // the other warpgroup's item is next in the ring: its turn
            asm volatile("bar.arrive %0, 256;\n" ::"r"(turnGive) : "memory");
            t += tmaItemOf(tp, w + gridDim.x, BM, BN).nk;
        }
        wgmmaWait<0>();
#pragma unroll
        for (int mh = 0; mh < MH; ++mh)
            fenceAccumulators(acc[mh]);
        // The last stage goes back before the epilogue: the next item's copies overlap it (windowProducts gave its
        // own back).
        if (WA == 0 && it.nk > 0 && lane == 0 && !tp.early)
            barrierArrive(emptyBar + 8 * lastStage);
        if (tp.probe & 4)
            continue; // the probe without the epilogue
        if (stagedBias)
            biasReady();

        // Accumulator 4·j + e of an m64 half: pixel row 16·(warp in the warpgroup) + lane / 4 + 8·(e / 2) of its 64,
        // channel 8·j + 2·(lane % 4) + e % 2 (conv2d_tensor_core_wgmma.cu); row i of the block is pixel
        // (p0 + i / tileW, q0 + i % tileW). The transposed tile's: storeTileT.
        if constexpr (TR)
            storeTileT<T>(g, it, tp.tileShift, wg * 128, acc[0], stagedBias, y, staging);
        else {
#pragma unroll
            for (int mh = 0; mh < MH; ++mh) {
                const int warpRow = (PP ? mh : wg) * 64 + ((tid & 127) >> 5) * 16; // the warp's 16 rows of the block
                int m[2];
                bool valid[2];
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    m[h] = blockPixel(g, it, tp.tileShift, warpRow + (lane >> 2) + h * 8, valid[h]);
                if constexpr (!std::is_same_v<T, float>) {
                    if (!partial && g.k % 8 == 0) {
                        bool storeValid; // storeTile16 stores row lane / 2 of the warp's 16
                        const int storeRow = blockPixel(g, it, tp.tileShift, warpRow + (lane >> 1), storeValid);
                        storeTile16<T, BN>(g, it.nBase, storeRow, storeValid, acc[mh], bias != nullptr, y, staging);
                        continue;
                    }
                } else {
                    if (!partial && g.k % 2 == 0) {
                        storeTile32<BN>(g, it.nBase, m, valid, acc[mh], bias != nullptr, y, staging);
                        continue;
                    }
                }
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    if (!valid[h])
                        continue;
#pragma unroll
                    for (int jn = 0; jn < BN / 8; ++jn) {
                        const int k = it.nBase + jn * 8 + 2 * (lane & 3);
                        if (k < g.k)
                            storeOutputPair(tp.base, it.z, m[h], k, acc[mh][4 * jn + 2 * h],
                                acc[mh][4 * jn + 2 * h + 1], bias, y, partial);
                    }
                }
            }
        }
    }
#endif
}

namespace {

    // cuTensorMapEncodeTiled is a driver entry point: looked up at run time through the runtime, so the module links
    // no libcuda of its own (and loads where there is no driver, e.g. CI).
    PFN_cuTensorMapEncodeTiled_v12000 encodeTiled()
    {
        static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
            void* p = nullptr;
            cudaDriverEntryPointQueryResult found {};
            CONVSCOPE_CUDA_CHECK(
                cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
            if (found != cudaDriverEntryPointSuccess || !p)
                throw Error("cuda.tensor_core: the CUDA driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12+)");
            return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
        }();
        return fn;
    }

    template <typename T> CUtensorMapDataType tmaType()
    {
        if constexpr (std::is_same_v<T, float>)
            return CU_TENSOR_MAP_DATA_TYPE_TFLOAT32; // the copy rounds to TF32 (to nearest, ties to even: roundTf32)
        else if constexpr (std::is_same_v<T, __half>)
            return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
        else
            return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    }

    template <typename T>
    CUtensorMap encode(const char* what, const void* base, int rank, const cuuint64_t* dims, const cuuint64_t* strides,
        const cuuint32_t* box, const cuuint32_t* steps, int rowPieces)
    {
        CUtensorMap map;
        const CUresult rc
            = encodeTiled()(&map, tmaType<T>(), cuuint32_t(rank), const_cast<void*>(base), dims, strides, box, steps,
                CU_TENSOR_MAP_INTERLEAVE_NONE, rowPieces == 8 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (rc != CUDA_SUCCESS)
            throw Error(std::string("cuda.tensor_core: cuTensorMapEncodeTiled refused the ") + what + " (CUresult "
                + std::to_string(int(rc)) + ")");
        return map;
    }

} // namespace

template <typename T, int BN, int STAGES, int RP, bool PP, int WA, bool TR>
void launchTma(const ConvGeometry& g, const Plan& p, const TmaParams& tp, const T* x, const T* wp, const float* bias,
    T* y, float* partial, cudaStream_t st)
{
    constexpr size_t smemBytes = tmaSmemBytes(BN, RP, STAGES, WA, TR) + 1024;
    auto* kernel = tmaConvKernel<T, BN, STAGES, RP, PP, WA, TR>;
    if (!y) { // prepare: opt in to the shared memory (launch() in conv2d_tensor_core_kernel.cuh says why)
        CONVSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smemBytes)));
        return;
    }
    constexpr cuuint64_t e = sizeof(T);
    constexpr cuuint32_t rowElems = 16 * RP / sizeof(T);
    // The input, NHWC, innermost first; its box: one k-tile row of channels × the block's pixels, stride-spaced.
    const cuuint64_t xDims[4] = { cuuint64_t(g.c), cuuint64_t(g.w), cuuint64_t(g.h), cuuint64_t(g.n) };
    const cuuint64_t xStrides[3] = { g.c * e, cuuint64_t(g.w) * g.c * e, cuuint64_t(g.h) * g.w * g.c * e };
    // Window tiles: one row of the block's pixels and the taps' reach (stride 1), read by every tap of a kernel row.
    const cuuint32_t xBox[4]
        = { rowElems, cuuint32_t(WA ? tmaWindowRows(g) : p.tileW * g.strideW), cuuint32_t(p.tileH * g.strideH), 1 };
    const cuuint32_t xSteps[4] = { 1, cuuint32_t(g.strideW), cuuint32_t(g.strideH), 1 };
    const CUtensorMap xMap = encode<T>("input's box", x, 4, xDims, xStrides, xBox, xSteps, RP);
    // The transposed tile's slot is two boxes: this one (the first 128 pixels), then xMap's.
    const cuuint32_t xHeadBox[4] = { rowElems, 128, 1, 1 };
    const CUtensorMap xHeadMap
        = TR ? encode<T>("input's first box", x, 4, xDims, xStrides, xHeadBox, xSteps, RP) : xMap;
    // The packed weights [K][ldw]; the box: one k-tile row × BN output channels.
    const cuuint64_t wDims[2] = { cuuint64_t(p.ldw), cuuint64_t(g.k) };
    const cuuint64_t wStrides[1] = { cuuint64_t(p.ldw) * e };
    const cuuint32_t wBox[2] = { rowElems, BN }, wSteps[2] = { 1, 1 };
    const CUtensorMap wMap = encode<T>("weights' box", wp, 2, wDims, wStrides, wBox, wSteps, RP);
    kernel<<<p.ctas, kTmaThreads, smemBytes, st>>>(xMap, xHeadMap, wMap, tp, bias, y, partial);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core (wgmma, TMA)");
}

template <typename T>
void runTmaTyped(
    const ConvGeometry& g, const Plan& p, const void* xv, const float* bias, void* yv, void* scratch, cudaStream_t st)
{
    const LaunchArgs<T> a(g, p, xv, yv, scratch);
    const int rowElems = 16 * p.rowPieces / int(sizeof(T));
    const TmaParams tp { a.prm, std::countr_zero(unsigned(p.tileW)), p.tilesP, p.tilesQ, g.c / rowElems, p.mTiles,
        p.nTiles, p.mTiles * p.nTiles * p.splits, p.probe, p.spin, p.early,
        (tmaWindowRows(g) + (kTiles[p.tile].transposed ? 128 : 0)) * 128 };
    // One instantiation a tma… tile of kTiles (block width, stages, row and windows from the table): the one p.tile
    // names, found among the last kTileCount − kTmaTile64 entries (the tma… tiles).
    auto run = [&](auto tile) {
        constexpr TileShape t = kTiles[decltype(tile)::value];
        launchTma<T, t.bn(), t.stages, t.rowPieces, t.pingpong, t.windows, t.transposed>(
            g, p, tp, a.x, a.wp, bias, a.y, a.partial, st);
    };
    static_assert(kTiles[kTmaTile64].tma && !kTiles[kTmaTile64 - 1].tma && kTiles[kTileCount - 1].tma,
        "the tma… tiles are the last entries of kTiles");
    const bool ran = [&]<int... I>(std::integer_sequence<int, I...>)
    {
        return ((p.tile == kTmaTile64 + I ? (run(std::integral_constant<int, kTmaTile64 + I>()), true) : false) || ...);
    }
    (std::make_integer_sequence<int, kTileCount - kTmaTile64>());
    if (!ran)
        throw Error("internal error: cuda.tensor_core: tile " + std::to_string(p.tile) + " is not a TMA tile");
    reduceSplits(g, p, a, bias, st, "conv2d tensor core (wgmma, TMA)");
}

template void runTmaTyped<float>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runTmaTyped<__half>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runTmaTyped<__nv_bfloat16>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);

} // namespace convscope::cuda::tc
