// The TMA kernel's epilogues: the item's bias staged in shared memory, and the stores of a warp's accumulators
// (storeTile16 for a 16-bit output through a staging area, storeTile32 for FP32, storeTileT for the transposed
// tile). Included by conv2d_tensor_core_tma_mainloop.cuh only; the kernel and its pipeline are described there.
#pragma once

#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"
#include "kernels/cuda/conv2d_tensor_core_tma.cuh"
#include "kernels/cuda/conv2d_tensor_core_wgmma_ops.cuh"

namespace convscope::cuda::tc {

namespace {

    // Two outputs rounded to the 16-bit type Element, the first in the low half (the lower address).
    template <typename Element> __device__ __forceinline__ uint32_t packPair(float v0, float v1)
    {
        if constexpr (std::is_same_v<Element, __half>) {
            const __half2 h = __floats2half2_rn(v0, v1);
            return *reinterpret_cast<const uint32_t*>(&h);
        } else {
            const __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
            return *reinterpret_cast<const uint32_t*>(&h);
        }
    }

    // 16 bytes, and two floats, from shared memory at `addr` (the staging area, the staged bias, the skip tile).
    __device__ __forceinline__ uint4 sharedLoad16(uint32_t addr)
    {
        uint4 v;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(addr)
                     : "memory");
        return v;
    }
    __device__ __forceinline__ float2 sharedLoadFloat2(uint32_t addr)
    {
        float2 v;
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
        return v;
    }

    // packPair with ReLU on the way (NaN kept): one conversion for two outputs. ReLU commutes with rounding to nearest.
    template <typename Element> __device__ __forceinline__ uint32_t packPairReLU(float v0, float v1)
    {
        uint32_t r;
        if constexpr (std::is_same_v<Element, __half>)
            asm("cvt.rn.relu.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(v1), "f"(v0));
        else
            asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(v1), "f"(v0));
        return r;
    }

    // Two outputs of a 16-bit lean epilogue's staging round, packed: with the activation `act`, or without where a
    // fused residual add comes first (`skip`; its activation follows the add, addSkip8).
    template <typename Element, typename Act>
    __device__ __forceinline__ uint32_t stagedPair(const Act& act, bool skip, float v0, float v1)
    {
        if constexpr (Act::kNone)
            return packPair<Element>(v0, v1);
        else if constexpr (Act::kReLU)
            return skip ? packPair<Element>(v0, v1) : packPairReLU<Element>(v0, v1);
        else
            return skip ? packPair<Element>(v0, v1) : packPair<Element>(act(v0), act(v1));
    }

    // The bias of a work item's BlockN output channels, copied global → shared by cp.async at the item's start into the
    // warp's own area (zero past K), so the epilogue reads it from shared memory: read from global memory there,
    // each load's latency stood between the accumulators and their stores (ncu: the epilogue's largest stalls,
    // docs/PERFORMANCE.md "Version 7"). Waited for by biasReady.
    template <int BlockN>
    __device__ __forceinline__ void stageBias(const float* __restrict__ bias, int nBase, int kTotal, uint32_t area)
    {
        const int lane = threadIdx.x & 31;
        if ((reinterpret_cast<uintptr_t>(bias + nBase) & 15) == 0) {
#pragma unroll
            for (int i = 4 * lane; i < BlockN; i += 128) {
                const int n = max(0, min(4, kTotal - (nBase + i))); // channels inside K; the rest zero-filled
                asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(area + 4 * i),
                             "l"(n > 0 ? bias + nBase + i : bias), "r"(4 * n)
                             : "memory");
            }
            return;
        }
#pragma unroll
        for (int i = lane; i < BlockN; i += 32) {
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
        return hasBias ? sharedLoadFloat2(area + 4 * c) : make_float2(0.0f, 0.0f);
    }

    // The staged bias of the item's channel c (zero without a bias).
    __device__ __forceinline__ float biasOne(bool hasBias, uint32_t area, int c)
    {
        float b = 0.0f;
        if (hasBias)
            asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(b) : "r"(area + 4 * c) : "memory");
        return b;
    }

    // A fused residual add's 8 skip values from `skip` (16 bytes where aligned). The epilogues load a batch of them
    // before the batch's staging rounds, so their latencies overlap (storeOutputRow says why).
    template <typename Element> __device__ __forceinline__ uint4 loadSkip8(const Element* __restrict__ skip)
    {
        if ((reinterpret_cast<uintptr_t>(skip) & 15) == 0)
            return *reinterpret_cast<const uint4*>(skip);
        uint4 r;
        Element* s = reinterpret_cast<Element*>(&r);
#pragma unroll
        for (int e = 0; e < 8; ++e)
            s[e] = skip[e];
        return r;
    }
    // Rounds of 16 channels (storeTile16) or 16 pixels (storeTileT) whose skips are loaded together (more spilled
    // registers in the two-blocks-a-multiprocessor kernels).
    constexpr int kSkipBatch = 2;

    // A fused residual add's skip tile where the copy warp brought it into the ring (tmaConvKernel's skip entries):
    // the item's 128 pixels × BlockN channels, as TMA boxes of 128 pixel rows × 128 bytes of channels in the 128-byte
    // swizzle, `perEntry` boxes in each entry's stage. entry[0] == 0: the epilogue loads the skip from global memory.
    struct SkipTile {
        static constexpr int kMaxEntries = 4;
        uint32_t entry[kMaxEntries];
        int perEntry;
        __device__ __forceinline__ bool inRing() const { return entry[0] != 0; }
        // The shared address of the item's block row `row`, byte `byte` of its BlockN channels: box byte / 128, its
        // 16-byte chunk (byte / 16) mod 8 swizzled by the row (the stages start on 1024-byte swizzle atoms).
        __device__ __forceinline__ uint32_t at(int row, int byte) const
        {
            const int box = byte >> 7, e = box / perEntry, chunk = (byte >> 4) & 7;
            return entry[e]
                + uint32_t((box - e * perEntry) * 128 * 128 + row * 128 + ((chunk ^ (row & 7)) << 4) + (byte & 15));
        }
    };

    // A fused residual add (ConvGeometry::residual) on 8 outputs read back from the staging area, staged without the
    // activation: each rounded sum (as the unfused conv stores it) plus the skip's element at the same place (`skip8`,
    // from loadSkip8), then the activation `act`, rounded again (as the unfused add and activation store it). Without
    // an activation or with ReLU, in pairs of the 16-bit type: its add rounds the exact sum once, which is what the sum
    // in FP32 rounded to it gives (FP32 holds over twice the bits, so the second rounding changes nothing), and ReLU
    // (NaN kept) is exact in any type.
    template <typename Element, typename Act>
    __device__ __forceinline__ uint4 addSkip8(const Act& act, uint4 v, uint4 skip8)
    {
        uint4 r;
        uint32_t* o = reinterpret_cast<uint32_t*>(&r);
        if constexpr (Act::kNone || Act::kReLU) {
            using Pair = std::conditional_t<std::is_same_v<Element, __half>, __half2, __nv_bfloat162>;
            const Pair* a = reinterpret_cast<const Pair*>(&v);
            const Pair* s = reinterpret_cast<const Pair*>(&skip8);
            Pair* out = reinterpret_cast<Pair*>(&r);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                out[e] = __hadd2(a[e], s[e]);
                if constexpr (Act::kReLU)
                    out[e] = __hmax2_nan(out[e], Pair {});
            }
            return r;
        }
        const Element* s = reinterpret_cast<const Element*>(&skip8);
        const Element* a = reinterpret_cast<const Element*>(&v);
#pragma unroll
        for (int e = 0; e < 4; ++e)
            o[e] = packPair<Element>(act(gpu::toFloat(a[2 * e]) + gpu::toFloat(s[2 * e])),
                act(gpu::toFloat(a[2 * e + 1]) + gpu::toFloat(s[2 * e + 1])));
        return r;
    }

    // The staging area (512 bytes a warp) is 16 rows of 32 bytes, 16 channels of 16 pixels; row r's two 16-byte
    // halves swapped where r mod 8 ≥ 4, so that neither an stmatrix (8 rows of one half a matrix) nor the read back
    // (two halves of 16 rows) has a bank conflict.
    __device__ __forceinline__ uint32_t stagingAt(uint32_t staging, int row, int half)
    {
        return staging + uint32_t(row * 32 + ((half ^ ((row >> 2) & 1)) << 4));
    }
    // One round through the staging area: the warp's four packed 8 × 8 blocks x written by stmatrix (Transpose: each
    // block transposed), then this lane's 16 bytes read back.
    template <bool Transpose>
    __device__ __forceinline__ uint4 stagingRound(uint32_t writeAt, uint32_t readAt, const uint32_t (&x)[4])
    {
        __syncwarp(); // the last round's reads are done before the area is written again
        if constexpr (Transpose)
            asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(writeAt),
                         "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3])
                         : "memory");
        else
            asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(writeAt), "r"(x[0]),
                         "r"(x[1]), "r"(x[2]), "r"(x[3])
                         : "memory");
        __syncwarp();
        return sharedLoad16(readAt);
    }

    // The epilogue of a 16-bit output (no split, K a multiple of 8): bias, activation and rounding as storeOutputPair,
    // through a 512-byte staging area of the warp's own. A warp's accumulators are 16 pixel rows × BlockN channels,
    // each lane holding channel pairs 2·(lane % 4) of every n8 block in rows lane / 4 and lane / 4 + 8: exactly the
    // fragments of stmatrix. For each 16 channels, one stmatrix.x4 writes the 16 × 16 block (stagingAt's layout);
    // lane l reads half l % 2 of row l / 2 back and stores it, 16 bytes, so a warp's store is 16 whole
    // 32-byte sectors. ~6 instructions for 8 outputs where the quad exchange of shuffles and selects took ~16
    // (docs/PERFORMANCE.md "Version 7": the epilogue was 42% of the time of 64→128 @256², fp16). `storeRow`:
    // the pixel index of row lane / 2 of the warp's 16, `storeValid` whether it is on the output map.
    // `tileRow`: that row's place in the block, where a skip tile in the ring (`skipTile`) holds its skip.
    // `act`: the layer's activation (TileActivation).
    template <typename Element, int BlockN, typename Act>
    __device__ __forceinline__ void storeTile16(const ConvGeometry& g, const Act& act, int nBase, int storeRow,
        bool storeValid, int tileRow, const SkipTile& skipTile, const float (&acc)[BlockN / 2], bool hasBias,
        Element* __restrict__ y, uint32_t staging)
    {
        const int lane = threadIdx.x & 31, quad = lane & 3;
        // stmatrix: lane l gives the address of row l % 8 of matrix l / 8 (matrix i: rows 8·(i % 2) …, channels
        // 8·(i / 2) …); the read back: row l / 2, half l % 2.
        const uint32_t writeAt = stagingAt(staging, ((lane >> 3) & 1) * 8 + (lane & 7), lane >> 4);
        const int rHalf = lane & 1;
        const uint32_t readAt = stagingAt(staging, lane >> 1, rHalf);
        Element* const out = y + size_t(storeRow) * g.k + nBase + 8 * rHalf;
        const Element* const skip = static_cast<const Element*>(g.residual); // a fused residual add's, or null
        constexpr int Rounds = BlockN / 16, Batch = Rounds < kSkipBatch ? Rounds : kSkipBatch;
        static_assert(Rounds % Batch == 0, "whole batches of rounds");
#pragma unroll
        for (int r0 = 0; r0 < Rounds; r0 += Batch) {
            uint4 skip8[Batch];
#pragma unroll
            for (int i = 0; i < Batch; ++i) {
                const int j = 2 * (r0 + i);
                if (skip && skipTile.inRing())
                    skip8[i] = sharedLoad16(skipTile.at(tileRow, 16 * (j + rHalf)));
                else
                    skip8[i] = skip && storeValid && nBase + 8 * (j + rHalf) < g.k ? loadSkip8(skip + (out + 8 * j - y))
                                                                                   : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int i = 0; i < Batch; ++i) {
                const int j = 2 * (r0 + i);
                uint32_t x[4];
#pragma unroll
                for (int b = 0; b < 2; ++b) {
                    const float2 bp = biasPair(hasBias, staging + 512, 8 * (j + b) + 2 * quad);
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int a = 4 * (j + b) + 2 * h;
                        x[2 * b + h] = stagedPair<Element>(act, skip != nullptr, acc[a] + bp.x, acc[a + 1] + bp.y);
                    }
                }
                const uint4 v = stagingRound<false>(writeAt, readAt, x);
                if (storeValid && nBase + 8 * (j + rHalf) < g.k)
                    *reinterpret_cast<uint4*>(out + 8 * j) = skip ? addSkip8<Element>(act, v, skip8[i]) : v;
            }
        }
    }

    // The epilogue of an FP32 output (tf32; no split, K even): the pair stores of storeOutputPair, a warp's store 8
    // whole 32-byte sectors, with the row pointers and each block's bias pair computed once instead of per value.
    // `tileRow`: the block rows of m[0] and m[1], where a skip tile in the ring (`skipTile`) holds their skips.
    template <int BlockN, typename Act>
    __device__ __forceinline__ void storeTile32(const ConvGeometry& g, const Act& act, int nBase, const int (&m)[2],
        const bool (&valid)[2], const int (&tileRow)[2], const SkipTile& skipTile, const float (&acc)[BlockN / 2],
        bool hasBias, float* __restrict__ y, uint32_t staging)
    {
        const int quad = threadIdx.x & 3;
        // A fused residual add's skip pair (FP32 like y, so no rounding between) at the same place as the output:
        // from the ring's skip tile, else from global memory.
        const auto skipPair = [&](int h, size_t at, int j) {
            if (!g.residual)
                return make_float2(0.0f, 0.0f);
            if (!skipTile.inRing())
                return make_float2(skipAt<float>(g.residual, at), skipAt<float>(g.residual, at + 1));
            return sharedLoadFloat2(skipTile.at(tileRow[h], 4 * (8 * j + 2 * quad)));
        };
        float* const row0 = y + size_t(m[0]) * g.k + nBase + 2 * quad;
        float* const row1 = y + size_t(m[1]) * g.k + nBase + 2 * quad;
#pragma unroll
        for (int j = 0; j < BlockN / 8; ++j) {
            if (nBase + 8 * j + 2 * quad >= g.k)
                continue;
            const float2 bp = biasPair(hasBias, staging + 512, 8 * j + 2 * quad);
            if (valid[0]) {
                const float2 s = skipPair(0, size_t(row0 + 8 * j - y), j);
                *reinterpret_cast<float2*>(row0 + 8 * j)
                    = make_float2(act(acc[4 * j] + bp.x + s.x), act(acc[4 * j + 1] + bp.y + s.y));
            }
            if (valid[1]) {
                const float2 s = skipPair(1, size_t(row1 + 8 * j - y), j);
                *reinterpret_cast<float2*>(row1 + 8 * j)
                    = make_float2(act(acc[4 * j + 2] + bp.x + s.x), act(acc[4 * j + 3] + bp.y + s.y));
            }
        }
    }

    // The transposed tile's epilogue (Yᵀ = W·Xᵀ): a warp's accumulators are 16 of the item's output channels
    // (c0 = 16·(warp in the warpgroup) + lane / 4, and c0 + 8) × the warpgroup's 128 pixels (pairs 2·(lane % 4) of
    // each n8 block): accumulator 4·j + 2·h + e is channel c0 + 8·h of pixel 8·j + 2·(lane % 4) + e. A 16-bit output
    // with K a multiple of 8: for each 16 pixels, stmatrix.trans turns the four 8 × 8 blocks (channels × pixels) into
    // pixel rows of 8 channels, written as storeTile16's staging rows (16 pixels × 16 channels) and stored 16 bytes a
    // lane. Otherwise one value a store (a warp's store is 4 pixels × 8 consecutive channels). `pixelBase`: the
    // warpgroup's first pixel in the block.
    template <typename Element, typename Act>
    __device__ __forceinline__ void storeTileT(const ConvGeometry& g, const Act& act, const TmaItem& it, int tileShift,
        int pixelBase, const float (&acc)[64], bool hasBias, Element* __restrict__ y, uint32_t staging)
    {
        const int lane = threadIdx.x & 31, quad = lane & 3, warp = (threadIdx.x >> 5) & 3;
        const int c0 = 16 * warp + (lane >> 2);
        const float bias0 = biasOne(hasBias, staging + 512, c0), bias1 = biasOne(hasBias, staging + 512, c0 + 8);
        if constexpr (!std::is_same_v<Element, float>) {
            if (g.k % 8 == 0) {
                // stmatrix.trans: lane l gives row l % 8 of matrix l / 8, matrix (h, b) = (m % 2, m / 2) being
                // channels 8·h … × pixels 8·b … of the 16; stored transposed, its row r is pixel 8·b + r: staging row
                // 8·b + r, half h (stagingAt).
                const uint32_t writeAt = stagingAt(staging, (lane >> 4) * 8 + (lane & 7), (lane >> 3) & 1);
                const int rRow = lane >> 1, rHalf = lane & 1;
                const uint32_t readAt = stagingAt(staging, rRow, rHalf);
                const int channel = it.nBase + 16 * warp + 8 * rHalf;
                const Element* const skip = static_cast<const Element*>(g.residual); // a fused residual add's
#pragma unroll
                for (int r0 = 0; r0 < 8; r0 += kSkipBatch) {
                    size_t at[kSkipBatch];
                    bool valid[kSkipBatch];
                    uint4 skip8[kSkipBatch];
#pragma unroll
                    for (int i = 0; i < kSkipBatch; ++i) {
                        const int j = 2 * (r0 + i);
                        at[i]
                            = size_t(blockPixel(g, it, tileShift, pixelBase + 8 * j + rRow, valid[i])) * g.k + channel;
                        valid[i] = valid[i] && channel < g.k;
                        skip8[i] = skip && valid[i] ? loadSkip8(skip + at[i]) : make_uint4(0, 0, 0, 0);
                    }
#pragma unroll
                    for (int i = 0; i < kSkipBatch; ++i) {
                        const int j = 2 * (r0 + i);
                        uint32_t x[4];
#pragma unroll
                        for (int b = 0; b < 2; ++b)
#pragma unroll
                            for (int h = 0; h < 2; ++h) {
                                const int a = 4 * (j + b) + 2 * h;
                                const float bh = h ? bias1 : bias0;
                                x[2 * b + h] = stagedPair<Element>(act, skip != nullptr, acc[a] + bh, acc[a + 1] + bh);
                            }
                        const uint4 v = stagingRound<true>(writeAt, readAt, x);
                        if (valid[i])
                            *reinterpret_cast<uint4*>(y + at[i]) = skip ? addSkip8<Element>(act, v, skip8[i]) : v;
                    }
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
                    if (valid && c < g.k) {
                        const size_t at = size_t(m) * g.k + c;
                        float v = acc[4 * j + 2 * h + e] + (h ? bias1 : bias0);
                        if (g.residual) // a fused residual add: rounded as the unfused conv's output, plus the skip
                            v = residualSum<Element>(v, g.residual, at);
                        y[at] = gpu::fromFloat<Element>(act(v));
                    }
                }
            }
    }

} // namespace

} // namespace convscope::cuda::tc
