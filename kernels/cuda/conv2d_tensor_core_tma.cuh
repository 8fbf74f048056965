// The TMA kernel's parameters and work items (TmaParams, TmaItem): shared by its mainloop
// (conv2d_tensor_core_tma_mainloop.cuh), its epilogues (conv2d_tensor_core_tma_epilogue.cuh) and its host launcher
// (conv2d_tensor_core_tma_wgmma.cu, the one translation unit that includes them; sm_90a only).
#pragma once

#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"

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
        int skipRing; // a fused residual add's skip comes through the ring (tmaConvKernel's skip entries)
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

} // namespace

} // namespace convscope::cuda::tc
