// The Tensor Core convolution's plan (cuda.tensor_core): the block shapes (--option tc_tile), which kernel runs a layer
// (mma.sync, wgmma fed by cp.async, wgmma fed by TMA) with which tile, pipeline and split, measured and explained
// beside each rule. Host code only; conv2d_tensor_core.cu decides with it, and the kernels
// (conv2d_tensor_core_kernel.cuh, *_wgmma.cu) read the Plan it returns.
#pragma once

#include "compute/storage_format.h"
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/conv2d_tensor_core_stem.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace convscope::cuda::tc {
constexpr int kWarpM = 64; // a warp's pixels: 4 m16 tiles
// A k-tile row is 64 bytes of reduction (4 pieces, 4 stages) or 128 bytes (8 pieces, 3 stages: the same shared
// memory a block, half the barriers and copy set-ups per mma.sync); --option tc_kbytes=64|128.
constexpr int stagesFor(int rowPieces) { return rowPieces == 4 ? 4 : 3; }

// The block shapes (--option tc_tile=...): warps down the pixels × warps across the channels, and n8 tiles a warp.
// The wgmma kernels' shapes (conv2d_tensor_core_wgmma.cu and the others, sm_90a): two consumer warpgroups of 64 pixels
// (warpsM counts warpgroups there) × the whole BN, one wgmma m64nBN a warpgroup.

// The kernel that runs a tile.
enum class TileKernel {
    Mma, // mma.sync fed by cp.async (conv2d_tensor_core_kernel.cuh)
    Wgmma, // wgmma fed by cp.async (conv2d_tensor_core_wgmma.cu)
    WarpSpecialized, // wgmma, warp-specialized and persistent (conv2d_tensor_core_ws_wgmma.cu)
    Tma, // wgmma fed by the Tensor Memory Accelerator (conv2d_tensor_core_tma_wgmma.cu)
};

struct TileShape {
    const char* name;
    int warpsM; // warps (wgmma: warpgroups) down the block's pixels
    int warpsN; // warps across its output channels
    int n8PerWarp; // a warp's n8 tiles: 8 · n8PerWarp output channels
    TileKernel kernel;
    int rowPieces = 8; // wgmma: 8 (128-byte k-tile rows, 128-byte swizzle) or 4 (64-byte rows, 64-byte swizzle)
    int stages = 0; // the TMA kernel's pipeline depth
    bool pingpong = false; // TMA: each warpgroup multiplies whole work items, the two alternating (one block an SM)
    // TMA, the window tiles (…w): one copy of a row of input pixels serves every tap of a kernel row
    // (tmaWindowRefusal). `stages` then counts weight tiles, and `windows` the slots of input boxes beside them.
    int windows = 0;
    // TMA, the transposed window tile (…t): the product is Yᵀ = W·Xᵀ, the weights the m64 operand and each warpgroup's
    // 128 pixels the n128 one, so a block is 256 pixels of one output row × 64 channels (tmaTransposedRefusal).
    bool transposed = false;
    constexpr bool usesWgmma() const { return kernel != TileKernel::Mma; }
    constexpr bool usesTma() const { return kernel == TileKernel::Tma; }
    constexpr int bm() const { return kWarpM * warpsM; }
    constexpr int bn() const { return 8 * n8PerWarp * warpsN; }
};
// clang-format off
constexpr TileShape kTiles[] = {
    // 4 warps of 64×32: layers of ≤ 64 output channels
    { .name = "128x64", .warpsM = 2, .warpsN = 2, .n8PerWarp = 4, .kernel = TileKernel::Mma },
    // 4 warps of 64×64: grids of less than two blocks a multiprocessor
    { .name = "128x128", .warpsM = 2, .warpsN = 2, .n8PerWarp = 8, .kernel = TileKernel::Mma },
    // 8 warps of 64×32: the rest
    { .name = "128x128w8", .warpsM = 2, .warpsN = 4, .n8PerWarp = 4, .kernel = TileKernel::Mma },
    // 8 warps of 64×32, narrow layers
    { .name = "256x64", .warpsM = 4, .warpsN = 2, .n8PerWarp = 4, .kernel = TileKernel::Mma },
    // wgmma m64n64, 4 stages, two blocks a multiprocessor
    { .name = "wg128x64", .warpsM = 2, .warpsN = 1, .n8PerWarp = 8, .kernel = TileKernel::Wgmma },
    // wgmma m64n128, 6 stages
    { .name = "wg128x128", .warpsM = 2, .warpsN = 1, .n8PerWarp = 16, .kernel = TileKernel::Wgmma },
    // wgmma m64n256, 4 stages
    { .name = "wg128x256", .warpsM = 2, .warpsN = 1, .n8PerWarp = 32, .kernel = TileKernel::Wgmma },
    // a producer warpgroup feeding two wgmma m64n128 ones, 6 stages, persistent
    { .name = "ws128x128", .warpsM = 2, .warpsN = 1, .n8PerWarp = 16, .kernel = TileKernel::WarpSpecialized },
    // the same with m64n256, 4 stages
    { .name = "ws128x256", .warpsM = 2, .warpsN = 1, .n8PerWarp = 32, .kernel = TileKernel::WarpSpecialized },
    // m64n128, 64-byte rows: 6 stages in 96 KB, two blocks a multiprocessor
    { .name = "wg128x128r64", .warpsM = 2, .warpsN = 1, .n8PerWarp = 16, .kernel = TileKernel::Wgmma, .rowPieces = 4 },
    // m64n256, 64-byte rows, 8 stages
    { .name = "wg128x256r64", .warpsM = 2, .warpsN = 1, .n8PerWarp = 32, .kernel = TileKernel::Wgmma, .rowPieces = 4 },
    // The TMA kernel: ≤ 113 KB of stages (two blocks a multiprocessor) except the s6 and 128x256 tiles.
    // 4 × 24 KB
    { .name = "tma128x64", .warpsM = 2, .warpsN = 1, .n8PerWarp = 8, .kernel = TileKernel::Tma, .stages = 4 },
    // 64-byte rows (C a multiple of 32 halves): 8 × 12 KB
    { .name = "tma128x64r64", .warpsM = 2, .warpsN = 1, .n8PerWarp = 8, .kernel = TileKernel::Tma,
      .rowPieces = 4, .stages = 8 },
    // 3 × 32 KB
    { .name = "tma128x128", .warpsM = 2, .warpsN = 1, .n8PerWarp = 16, .kernel = TileKernel::Tma, .stages = 3 },
    // 6 × 16 KB
    { .name = "tma128x128r64", .warpsM = 2, .warpsN = 1, .n8PerWarp = 16, .kernel = TileKernel::Tma,
      .rowPieces = 4, .stages = 6 },
    // 6 × 32 KB, one block a multiprocessor
    { .name = "tma128x128s6", .warpsM = 2, .warpsN = 1, .n8PerWarp = 16, .kernel = TileKernel::Tma, .stages = 6 },
    // 4 × 48 KB, one block a multiprocessor
    { .name = "tma128x256", .warpsM = 2, .warpsN = 1, .n8PerWarp = 32, .kernel = TileKernel::Tma, .stages = 4 },
    // ping-pong, 6 × 32 KB
    { .name = "tma128x128pp", .warpsM = 2, .warpsN = 1, .n8PerWarp = 16, .kernel = TileKernel::Tma,
      .stages = 6, .pingpong = true },
    // ping-pong, 8 × 24 KB
    { .name = "tma128x64pp", .warpsM = 2, .warpsN = 1, .n8PerWarp = 8, .kernel = TileKernel::Tma,
      .stages = 8, .pingpong = true },
    // window: 3 × 17 KB of input, 6 × 8 KB of weights
    { .name = "tma128x64w", .warpsM = 2, .warpsN = 1, .n8PerWarp = 8, .kernel = TileKernel::Tma,
      .stages = 6, .windows = 3 },
    // window: 2 × 17 KB, 4 × 16 KB
    { .name = "tma128x128w", .warpsM = 2, .warpsN = 1, .n8PerWarp = 16, .kernel = TileKernel::Tma,
      .stages = 4, .windows = 2 },
    // transposed: 2 × 33 KB, 4 × 8 KB
    { .name = "tma256x64t", .warpsM = 4, .warpsN = 1, .n8PerWarp = 8, .kernel = TileKernel::Tma,
      .stages = 4, .windows = 2, .transposed = true },
};
// clang-format on
constexpr int kTileCount = int(sizeof(kTiles) / sizeof(kTiles[0]));
constexpr int kFirstWgmmaTile = 4;
// The wgmma kernel's pipeline depth a block width (its shared memory: (128 + BN) × 128 bytes a stage, ≤ 192 KB).
constexpr int wgmmaStages(int bn, int rowPieces = 8)
{
    return rowPieces == 4 ? (bn == 128 ? 6 : 8) : bn == 128 ? 6 : 4;
}
// Blocks a multiprocessor the wgmma kernel is built for (registers: 64 accumulators a thread at BN = 64, 128; shared
// memory: ≤ 113 KB a block).
constexpr int wgmmaMinBlocks(int bn, int rowPieces) { return bn == 64 || (bn == 128 && rowPieces == 4) ? 2 : 1; }

// Which kernel (--option tc_kernel=tma|wgmma|mma; 0: the launcher's choice). Tma: wgmma fed by TMA; Wgmma: wgmma fed by
// cp.async.
enum class KernelChoice { Auto = 0, Mma = 1, Wgmma = 2, Tma = 3, Stem = 4 };
// The choice that names a tile's kernel (the warp-specialized kernel is one of the cp.async wgmma kernels).
constexpr KernelChoice kernelChoiceOf(TileKernel kernel)
{
    switch (kernel) {
    case TileKernel::Mma:
        return KernelChoice::Mma;
    case TileKernel::Wgmma:
    case TileKernel::WarpSpecialized:
        return KernelChoice::Wgmma;
    case TileKernel::Tma:
        return KernelChoice::Tma;
    }
    return KernelChoice::Auto;
}
// The TMA kernel's tiles, and its launch bound (two blocks a multiprocessor where the stages fit in 113 KB).
constexpr int kTmaTile64 = 11, kTmaTile64r64 = 12, kTmaTile128 = 13, kTmaTile128r64 = 14, kTmaTile256 = 16,
              kTmaTile64w = 19, kTmaTile128w = 20, kTmaTile64t = 21;
constexpr size_t tmaStageBytes(int bn, int rowPieces) { return size_t(128 + bn) * 16 * rowPieces; }
// A window slot: the input box of 128 output pixels plus the taps' reach, (S − 1)·dilation ≤ 8 more pixels, 128-byte
// rows, 1024-aligned (the swizzle atom).
constexpr int kWindowRows = 136;
constexpr size_t kWindowSlotBytes = size_t(kWindowRows) * 128;
// A slot of the transposed tile: the input of 256 output pixels and the reach, as two boxes (a box spans ≤ 256
// pixels): the first 128 pixels, then 128 + reach from row 128 on.
constexpr size_t tmaSlotBytes(bool transposed) { return transposed ? 128 * 128 + kWindowSlotBytes : kWindowSlotBytes; }
// The epilogue's area of each of the 8 consumer warps: 512 bytes for the 16-bit transposition (storeTile16) and the
// work item's bias, BN floats (stageBias).
constexpr size_t tmaEpilogueBytes(int bn) { return 8 * (512 + 4 * size_t(bn)); }
// The TMA kernel's shared memory (less the 1024 bytes of alignment slack): its stages, or a window tile's weight
// stages and input slots; then the epilogue's staging.
constexpr size_t tmaSmemBytes(int bn, int rowPieces, int stages, int windows, bool transposed = false)
{
    return (windows ? size_t(bn) * 128 * stages + tmaSlotBytes(transposed) * windows
                    : tmaStageBytes(bn, rowPieces) * stages)
        + tmaEpilogueBytes(bn);
}
// The tiles whose copy warp brings a fused residual add's skip through the ring (tmaConvKernel): one box a k-tile,
// 128-byte rows, cooperative.
constexpr bool tmaSkipRingTile(bool pingpong, int windows, bool transposed, int rowPieces)
{
    return !pingpong && windows == 0 && !transposed && rowPieces == 8;
}
constexpr int kTmaThreads = 288; // two wgmma warpgroups and the warp that issues the copies
constexpr int tmaMinBlocks(int bn, int rowPieces, int stages, int windows = 0, bool transposed = false)
{
    return tmaSmemBytes(bn, rowPieces, stages, windows, transposed) + 1024 <= 113 * 1024 ? 2 : 1;
}

template <typename T> constexpr int pieceElems() { return 16 / int(sizeof(T)); }

// What the launcher decided for a layer (the same in scratch sizing, prepare, the note and the launch).
struct Plan {
    int pieceElems; // 8 (16-bit types) or 4 (float)
    int cp; // C rounded up to a piece
    int piecesPerTap;
    int kTiles; // k-tiles of the whole reduction
    int ldw; // packed weight row length: kTiles · rowPieces · pieceElems
    int rowPieces; // 4 or 8
    int tile; // index into kTiles
    int bm, bn;
    int mTiles, nTiles;
    int splits, tilesPerSplit;
    size_t packedBytes, workspaceBytes;
    bool wgmma; // the sm_90a kernel (conv2d_tensor_core_wgmma.cu) runs the layer
    bool tma; // its TMA-fed variant (conv2d_tensor_core_tma_wgmma.cu): a block is tileH × tileW output pixels of one
              // image, tilesP × tilesQ blocks an image
    int tileW, tileH, tilesP, tilesQ;
    int probe; // TMA kernel, bits: 1 copies only, 2 products only, 4 no epilogue (TensorCoreOptions::probe)
    int spin; // TMA kernel: wait on mbarriers by test_wait (TensorCoreOptions::spin)
    int early; // TMA kernel: give a stage back once its products retired (TensorCoreOptions::release)
    int ctas; // the persistent kernel's grid (specialized tiles): min(work items, multiprocessors)
    const char* fallback; // why a requested wgmma runs mma.sync instead (null otherwise)
    // The stem kernel (conv2d_tensor_core_stem.h) runs the layer: cp is its window pixel (cpad), ldw its packed row
    // (kpad), mTiles its pixel tiles, nTiles its 64-channel slices, ctas the persistent grid along the pixels.
    bool stem;
};

// Does the TMA kernel bring a fused residual add's skip through its ring on this plan: a tile that takes it, the
// reduction whole (the lean epilogues, storeTile16 and storeTile32, read it) and the skip's pixel rows a multiple of
// 16 bytes (TMA's strides). The launcher also needs the skip 16-byte aligned.
inline bool tmaSkipInRing(const ConvGeometry& g, const Plan& p, int bytes)
{
    const TileShape& t = kTiles[p.tile];
    return p.tma && tmaSkipRingTile(t.pingpong, t.windows, t.transposed, t.rowPieces) && p.splits == 1
        && (int64_t(g.k) * bytes) % 16 == 0;
}

inline size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// Measured on the unet-encoder layers (H100, fp16; docs/PERFORMANCE.md): ≤ 64 output channels take a narrow
// tile, so no half tile is spent on channels that do not exist (256×64 of 8 warps; 128×64 of 4 where the
// element-by-element copy runs); grids that give each multiprocessor fewer than two 128×128 blocks take the
// 4-warp 128×128 tile (64×64 warp tiles, fewer blocks to wait on), the rest the 8-warp one (twice the warps to
// hide latency with, at 64 accumulators a thread).
inline int defaultTile(const ConvGeometry& g, int64_t m, int smCount, bool aligned)
{
    if (g.k <= 64)
        return aligned ? 3 : 0;
    const int64_t tiles = (m + 127) / 128 * ((g.k + 127) / 128);
    return tiles < 2 * int64_t(smCount) ? 1 : 2;
}

// Where the launcher picks wgmma, and which tile (measured on unet-encoder, H100, docs/PERFORMANCE.md "Version 4"):
//   - fp16/bf16: wgmma wherever it runs; K ≤ 64 the 128×64 tile (128-byte rows, 2 blocks a multiprocessor), else
//     128×128 with 64-byte rows (6 stages in 96 KB: 2 blocks a multiprocessor, so one block's pipeline fill and
//     epilogue overlap the other's products). It beat mma.sync on all 9 unet-encoder layers it takes (fp16; bf16
//     times match fp16's within 2% for both kernels).
//   - tf32 (the 64-byte-row tiles were not timed in tf32): wgmma on the narrow layers (K ≤ 64) and on long
//     reductions (≥ 72 k-tiles of 128 bytes: C ≥ 256 at 3×3), 128×256 where K ≥ 256 (also where those tiles do
//     not fill the device: 1024→1024 @32², 128 tiles, 0.307 ms against 0.399 with 128×128), else 128×128;
//     mma.sync on the short reductions of wide layers, where it measured faster.
constexpr int kWgTile64 = kFirstWgmmaTile, kWgTile128 = kFirstWgmmaTile + 1, kWgTile256 = kFirstWgmmaTile + 2,
              kWgTile128r64 = kFirstWgmmaTile + 5;
static_assert(kTiles[kWgTile64].n8PerWarp == 8 && kTiles[kWgTile128].n8PerWarp == 16
        && kTiles[kWgTile256].n8PerWarp == 32 && kTiles[kWgTile128r64].n8PerWarp == 16
        && kTiles[kWgTile128r64].rowPieces == 4 && kTiles[kWgTile128r64].kernel == TileKernel::Wgmma,
    "the default wgmma tiles");
static_assert(kTiles[kTmaTile64].usesTma() && kTiles[kTmaTile64].n8PerWarp == 8 && kTiles[kTmaTile64r64].rowPieces == 4
        && kTiles[kTmaTile128].n8PerWarp == 16 && kTiles[kTmaTile128].rowPieces == 8
        && kTiles[kTmaTile128r64].rowPieces == 4 && kTiles[kTmaTile256].n8PerWarp == 32 && kTiles[kTmaTile256].usesTma()
        && !kTiles[kTmaTile256].pingpong && kTiles[kTmaTile64w].n8PerWarp == 8 && kTiles[kTmaTile64w].windows
        && kTiles[kTmaTile128w].n8PerWarp == 16 && kTiles[kTmaTile128w].windows && tmaMinBlocks(64, 8, 6, 3) == 2
        && tmaMinBlocks(128, 8, 4, 2) == 2 && kTiles[kTmaTile64t].transposed && kTiles[kTmaTile64t].bm() == 256
        && kTiles[kTmaTile64t].bn() == 64 && tmaMinBlocks(64, 8, 4, 2, true) == 2,
    "the default TMA tiles");

// A pointwise layer (1×1, stride 1, no padding, C ≥ 16) is a plain GEMM over its N·H·W pixels, NHWC in and out: it is
// planned and run as one image of one row of N·H·W pixels. So the TMA kernel's pixel blocks are 128 consecutive
// pixels whatever the map (a 7×7 map fills 49 of a 16×8 block's 128, which tmaRefusal turns down; a 56×56 one 7/8 of
// its 64×2 blocks) and each copy one run of 16 KB; the other kernels index pixels the same either way. Stems (C < 16)
// keep their map: the stem kernel tiles it.
inline ConvGeometry pointwiseAsRow(ConvGeometry g)
{
    const bool pointwise = g.r == 1 && g.s == 1 && g.strideH == 1 && g.strideW == 1 && g.padTop == 0 && g.padLeft == 0
        && g.p == g.h && g.q == g.w && g.groups == 1 && g.c >= 16;
    if (pointwise && int64_t(g.n) * g.h * g.w <= INT32_MAX && (g.n > 1 || g.h > 1)) {
        g.w = g.q = g.n * g.h * g.w;
        g.n = g.h = g.p = 1;
    }
    return g;
}

// The TMA kernel's block of output pixels: tileH rows × tileW columns of one image, tileW the power of two ≥ Q up to
// the block's pixels `bm` (128; 256 for the transposed tile), so bm pixels exactly; the box the TMA copies is the same
// rows of the input, shifted by the tap.
struct TmaPixelTile {
    int tileW, tileH, tilesP, tilesQ;
    double used; // share of the block's pixels that are output pixels
};
inline TmaPixelTile tmaPixelTile(const ConvGeometry& g, int bm = 128)
{
    TmaPixelTile t {};
    t.tileW = 1;
    while (t.tileW < g.q && t.tileW < bm)
        t.tileW *= 2;
    t.tileH = bm / t.tileW;
    t.tilesQ = (g.q + t.tileW - 1) / t.tileW;
    t.tilesP = (g.p + t.tileH - 1) / t.tileH;
    t.used = double(g.p) * g.q / (double(t.tilesP) * t.tileH * t.tilesQ * t.tileW);
    return t;
}
// Null when the TMA kernel takes the layer with k-tile rows of `rowPieces` 16-byte pieces; else why not. A k-tile is
// one tap's run of channels (the box's inner dimension), so C must be a multiple of the row; the box spans
// tile·stride input pixels (≤ 256, the copy engine's limit, strides ≤ 8); less than 3/4 of a block on output pixels
// (a 7×7 map in 8×16 blocks) wastes more than the copies save.
inline const char* tmaRefusal(const ConvGeometry& g, int bytes, int rowPieces);
// The TMA kernel's tile (measured on unet-encoder, H200; docs/PERFORMANCE.md "Version 6"): K ≤ 64 the 128×64 tile,
// else 128×128, both two blocks a multiprocessor. Session 11 took 128×256 (one block, 4 stages) on the long
// reductions of K ≥ 256; once the wgmma of a batch no longer ran one after another and a stage went back as soon as
// its products retired, 128×128 was as fast or faster on every layer: 256→256 @128² 0.151 against 0.159 ms (fp16),
// 256→512 @64² 0.133 against 0.154 (tf32). 128×256 stays an option (tc_tile=tma128x256).
// Where the window tiles take the layer (tmaWindowRefusal null), they run instead of their 128×64 or 128×128 twin:
// the input bytes a block copies fall by ~S× (H200, unet-encoder: 128→128 @256² fp16 0.169 against 0.187 ms, tf32
// 0.270 against 0.302; 256→256 @128² tf32 0.232 against 0.268). Not the 16-bit 128×64 one: 64→64 @512² fp16 0.283
// against 0.274 (there the products and the epilogue, not the copies, bounded the layer: docs/PERFORMANCE.md
// "Version 7"; tf32 0.433 against 0.482). `bm`: the block's pixels, 128 (256 for the transposed tile).
inline const char* tmaWindowRefusal(const ConvGeometry& g, int bm, int bn, int smCount);
// Where the transposed tile takes the layer (tmaTransposedRefusal null) it runs on K ≤ 64 (docs/PERFORMANCE.md
// "Version 7": m64n64 products a k-tile left the 64-channel layers at ~50% of the GEMM rate).
inline const char* tmaTransposedRefusal(const ConvGeometry& g, int smCount);
// Where the 128×128 blocks would not fill one wave of the device (splitReduction would split the reduction), the
// 128×64 tile instead: twice the blocks, no partial sums (ResNet-50 b32 fp16, H200, the 14×14 layers, 128 blocks of
// 128×128: 1024→256 1×1 18.1 µs against 32.4 split in two, 20.2 unsplit; 256→256 3×3 29.1 against 34.4 and 29.4;
// docs/PERFORMANCE.md, session 29). Not where they fill it: 28×28, 512→128 1×1 (224 blocks) 23.2 against 19.2.
inline int defaultTmaTile(const ConvGeometry& g, int bytes, int smCount)
{
    const bool rows128 = !tmaRefusal(g, bytes, 8);
    if (g.k <= 64) {
        if (rows128 && !tmaTransposedRefusal(g, smCount))
            return kTmaTile64t;
        return !rows128                                           ? kTmaTile64r64
            : bytes == 2 || tmaWindowRefusal(g, 128, 64, smCount) ? kTmaTile64
                                                                  : kTmaTile64w;
    }
    // Under one wave of 128×128 blocks, a short reduction takes 128×64 whole (twice the blocks, no partial sums:
    // ResNet-50's 14×14 layers at b32, C·R·S ≤ 2304, 1024 → 256 1×1 18.1 µs against 20.2 at 128×128 whole and 32.4
    // split in two) and a long one keeps 128×128 with its reduction split (VGG-16's 512 → 512 3×3 at 14×14, b8, C·R·S =
    // 4608: 33 µs against 37 at 128×64 split in two, tf32 41 against 59). H200, docs/PERFORMANCE.md, sessions 29
    // and 30.
    const TmaPixelTile t = tmaPixelTile(g);
    if (int64_t(g.n) * t.tilesP * t.tilesQ * ((g.k + 127) / 128) < smCount) {
        if (int64_t(g.c) * g.r * g.s < 4096)
            return rows128 ? kTmaTile64 : kTmaTile64r64;
        return rows128 ? kTmaTile128 : kTmaTile128r64;
    }
    return !rows128 ? kTmaTile128r64 : tmaWindowRefusal(g, 128, 128, smCount) ? kTmaTile128 : kTmaTile128w;
}
// The window tiles' twin: one box a k-tile, the same channels a block (the transposed tile's: 128×64).
constexpr int tmaWindowTwin(int tile) { return kTiles[tile].n8PerWarp == 8 ? kTmaTile64 : kTmaTile128; }
inline const char* tmaRefusal(const ConvGeometry& g, int bytes, int rowPieces)
{
    const TmaPixelTile t = tmaPixelTile(g);
    if (g.c % (16 * rowPieces / bytes) != 0)
        return rowPieces == 8 ? "TMA needs C a multiple of the 128-byte k-tile row"
                              : "TMA needs C a multiple of the 64-byte k-tile row";
    if (g.strideH > 8 || g.strideW > 8 || t.tileW * g.strideW > 256 || t.tileH * g.strideH > 256)
        return "TMA's box spans at most 256 input pixels and strides of at most 8";
    if (t.used < 0.75)
        return "the output map fills less than 3/4 of the TMA kernel's pixel blocks";
    return nullptr;
}
// A window slot holds one output row's input pixels for every tap of a kernel row: its box is the bm pixels of the
// block's row plus (S − 1)·dilation to the right, and tap s reads it from pixel s·dilation on. So: stride 1 along W,
// the block one row of bm pixels (Q > bm / 2, 3/4 of the blocks' pixels on the map), a reach of ≤ 8 pixels
// (kWindowRows), and no split of the reduction (its k-tiles go by kernel row, then channel run, then tap): the blocks
// must fill the device.
// A window's input pixels (the rows of its box): the block's 128 and the reach of the kernel row's last tap.
inline int tmaWindowRows(const ConvGeometry& g) { return 128 + (g.s - 1) * g.dilW; }
inline const char* tmaWindowRefusal(const ConvGeometry& g, int bm, int bn, int smCount)
{
    const TmaPixelTile t = tmaPixelTile(g, bm);
    if (g.strideW != 1)
        return "the window tiles need stride 1 along W";
    if (t.tileW != bm || t.used < 0.75)
        return bm == 128
            ? "the window tiles need output rows of more than 64 pixels"
            : "the transposed tile needs output rows of more than 128 pixels, 3/4 of its 256-pixel blocks on the map";
    if (g.s < 2 || tmaWindowRows(g) > kWindowRows)
        return "the window tiles need a kernel 2 or more wide reaching at most 8 pixels: (S - 1) * dilation <= 8";
    if (int64_t(g.n) * t.tilesP * t.tilesQ * ((g.k + bn - 1) / bn) < smCount)
        return "the window tiles do not split the reduction, and this layer's blocks do not fill the device";
    return nullptr;
}
// The transposed tile: a window tile whose block is 256 pixels of one output row × 64 channels.
inline const char* tmaTransposedRefusal(const ConvGeometry& g, int smCount)
{
    if (g.k > 64)
        return "the transposed tile takes layers of at most 64 output channels";
    return tmaWindowRefusal(g, 256, 64, smCount);
}
inline bool wgmmaByDefault(const ConvGeometry& g, DType type, int kTiles128)
{
    return type != DType::F32 || g.k <= 64 || kTiles128 >= 72;
}
inline int defaultWgmmaTile(const ConvGeometry& g, DType type, int64_t m, int smCount)
{
    if (g.k <= 64)
        return kWgTile64;
    if (type != DType::F32)
        return kWgTile128r64;
    (void)m, (void)smCount;
    return g.k <= 128 ? kWgTile128 : kWgTile256;
}

// The stem kernel's plan: its packing (cp = cpad, ldw = kpad), tiles and persistent grid. A block holds 128 threads
// of at most 128 registers (4 a multiprocessor) and its shared memory (228 KB a multiprocessor, 1 KB of it reserved a
// block).
inline Plan stemPlanOf(const ConvGeometry& g, int smCount)
{
    const StemShape s = stemShapeOf(g);
    Plan p {};
    p.stem = true;
    p.pieceElems = 8;
    p.cp = s.cpad;
    p.piecesPerTap = 0;
    p.ldw = s.kpad;
    p.kTiles = s.kpad / 16;
    p.rowPieces = 0;
    p.bm = kStemPixels;
    p.bn = kStemChannels;
    p.mTiles = g.n * s.tilesP * s.tilesQ;
    p.nTiles = (g.k + kStemChannels - 1) / kStemChannels;
    p.splits = 1;
    p.tilesPerSplit = p.kTiles;
    const int resident = std::max(1, std::min(4, int(size_t(228 * 1024) / (s.sharedBytes + 1024))));
    p.ctas = std::max(1, std::min(p.mTiles, smCount * resident / p.nTiles));
    p.packedBytes = align256(size_t(g.k) * p.ldw * 2);
    return p;
}

// The parts of a reduction split over blocks that each run once (the cp.async and mma.sync kernels), where the tiles
// fill less than one wave: of 1 … 8 parts of at least 8 k-tiles each, the one whose blocks make the fewest waves of
// multiprocessors per part, ceil(tiles·s / smCount) / s (the time of the longest multiprocessor's share, in unsplit
// blocks), the fewest parts among equals (each part writes and reads back its partial sums). The doubling rule this
// replaced left the last wave part-empty: 3×3 512 → 512 at 7×7, b32 (52 tiles of 128×128, 26 of 128×256; ResNet-50's
// and ResNet-18's last stage) took split 4 in fp16 (208 blocks: 2 waves, the second 58 % full) and 8 in tf32 (208 of
// 128×256: 2 waves); 5 makes 260 and 130 blocks. Swept on the H200 (docs/PERFORMANCE.md, session 32), fp16:
// split 3 / 4 / 5 / 6 38.2 / 32.7 / 31.1 / 38.2 µs; tf32 128×256: 59.9 / 53.9 / 50.9 / 75.9, split 8 67.4.
inline int wavePartsOf(int64_t tiles, int kTiles, int smCount)
{
    int best = 1;
    int64_t bestWaves = (tiles + smCount - 1) / smCount;
    for (int s = 2; s <= 8 && kTiles / s >= 8; ++s) {
        const int64_t waves = (tiles * s + smCount - 1) / smCount;
        if (waves * best < bestWaves * s)
            best = s, bestWaves = waves;
    }
    return best;
}

// The split of a GEMM plan's reduction (not the stem's, nor a window tile's: those never split) and what follows from
// it: the persistent grid and the partial sums' workspace. `forced` (--option tc_split; 0: the rule) asks for that
// many parts, at least one k-tile each. The rule, where the tiles fill less than one wave of the device: the TMA
// kernel's (persistent, up to two blocks a multiprocessor) doubles the parts while they fill less than one wave and
// each keeps at least 8 k-tiles (fewer would leave the pipeline mostly prologue); the others take wavePartsOf.
inline void splitReduction(Plan& p, const ConvGeometry& g, int smCount, int forced)
{
    const int64_t tiles = int64_t(p.mTiles) * p.nTiles;
    p.splits = 1;
    if (forced > 0 && !kTiles[p.tile].windows)
        p.splits = std::min(forced, p.kTiles);
    else if (!p.tma && tiles < smCount)
        p.splits = wavePartsOf(tiles, p.kTiles, smCount);
    else
        while (p.splits < 8 && tiles * p.splits < smCount && p.kTiles / (p.splits * 2) >= 8)
            p.splits *= 2;
    p.tilesPerSplit = (p.kTiles + p.splits - 1) / p.splits;
    p.splits = (p.kTiles + p.tilesPerSplit - 1) / p.tilesPerSplit;
    // The persistent kernels' grid: as many blocks as run at once (the TMA kernel's tiles fit 1 or 2 a
    // multiprocessor), each looping over work items.
    const TileShape& shape = kTiles[p.tile];
    const int resident = p.tma && !shape.pingpong
        ? tmaMinBlocks(shape.bn(), shape.rowPieces, shape.stages, shape.windows, shape.transposed)
        : 1;
    p.ctas = int(std::min<int64_t>(tiles * p.splits, int64_t(smCount) * resident));
    const int64_t m = int64_t(g.n) * g.p * g.q;
    p.workspaceBytes = p.splits > 1 ? align256(size_t(p.splits) * size_t(m) * g.k * sizeof(float)) : 0;
}

// `tileOverride`: tile index + 1 (0: the default); `kBytes`: 64 or 128 bytes of reduction a k-tile row (0: the
// default); `wgmmaRuns`: the wgmma kernel is built and the device is sm_90 (conv2d_tensor_core.cu decides).
inline Plan planOf(const ConvGeometry& g, DType type, int smCount, int tileOverride, int kBytes,
    KernelChoice kernel = KernelChoice::Mma, bool wgmmaRuns = false)
{
    Plan p {};
    const int bytes = int(dtypeBytes(type));
    // The stem kernel wherever it takes the layer, unless another kernel or a tile is asked for.
    if (kernel == KernelChoice::Auto || kernel == KernelChoice::Stem) {
        const char* stemWhyNot = tileOverride > 0 ? "a tile was asked for" : stemRefusal(g, bytes);
        if (!stemWhyNot)
            return stemPlanOf(g, smCount);
        if (kernel == KernelChoice::Stem)
            p.fallback = stemWhyNot;
    }
    p.pieceElems = 16 / bytes;
    p.cp = (g.c + p.pieceElems - 1) / p.pieceElems * p.pieceElems;
    p.piecesPerTap = p.cp / p.pieceElems;
    const int pieces = g.r * g.s * p.piecesPerTap;
    const bool aligned = g.c % p.pieceElems == 0;
    // wgmma where it runs unless mma.sync is asked for (by the kernel or an mma.sync tile); it needs the cp.async
    // copy of whole 16-byte pieces, so C a multiple of the piece. Fed by TMA where that takes the layer, unless the
    // cp.async-fed wgmma kernel is asked for (tc_kernel=wgmma or one of its wg… tiles).
    const bool wgTileAsked = tileOverride > 0 && kTiles[tileOverride - 1].usesWgmma();
    const bool tmaTileAsked = wgTileAsked && kTiles[tileOverride - 1].usesTma();
    const bool mmaAsked = kernel == KernelChoice::Mma || (tileOverride > 0 && !wgTileAsked);
    const bool wgmmaAsked = kernel == KernelChoice::Wgmma || kernel == KernelChoice::Tma || wgTileAsked;
    const bool cpAsyncAsked = kernel == KernelChoice::Wgmma || (wgTileAsked && !tmaTileAsked);
    const bool tmaAsked = kernel == KernelChoice::Tma || tmaTileAsked;
    int tmaTile = tmaTileAsked ? tileOverride - 1 : -1;
    if (tmaTile < 0 && !cpAsyncAsked)
        tmaTile = defaultTmaTile(g, bytes, smCount);
    const char* tmaWhyNot = tmaTile >= 0 ? tmaRefusal(g, bytes, kTiles[tmaTile].rowPieces) : "not asked for";
    p.wgmma
        = !mmaAsked && wgmmaRuns && aligned && (wgmmaAsked || !tmaWhyNot || wgmmaByDefault(g, type, (pieces + 7) / 8));
    p.tma = p.wgmma && !cpAsyncAsked && !tmaWhyNot;
    if (!p.wgmma && wgmmaAsked)
        p.fallback = !wgmmaRuns ? "wgmma needs an sm_90 GPU and a build for sm_90a"
                                : "wgmma needs C a multiple of the 16-byte piece";
    else if (p.wgmma && !p.tma && tmaAsked)
        p.fallback = tmaWhyNot; // the cp.async-fed wgmma kernel runs it
    if (wgTileAsked && (!p.wgmma || (tmaTileAsked && !p.tma)))
        tileOverride = 0; // the asked tile's kernel does not run: the default tile of the one that does
    if (p.tma) {
        p.tile = tmaTile;
        if (kTiles[p.tile].windows) {
            if (const char* why = kTiles[p.tile].transposed
                    ? tmaTransposedRefusal(g, smCount)
                    : tmaWindowRefusal(g, kTiles[p.tile].bm(), kTiles[p.tile].bn(), smCount)) {
                p.tile = tmaWindowTwin(p.tile);
                p.fallback = why; // only a tile asked for can be refused here: the default checked the same
            }
        }
        p.rowPieces = kTiles[p.tile].rowPieces;
        p.kTiles = (pieces + p.rowPieces - 1) / p.rowPieces;
        p.ldw = p.kTiles * p.rowPieces * p.pieceElems;
        const TmaPixelTile t = tmaPixelTile(g, kTiles[p.tile].bm());
        p.tileW = t.tileW, p.tileH = t.tileH, p.tilesP = t.tilesP, p.tilesQ = t.tilesQ;
    } else if (p.wgmma) {
        // 128-byte rows (one 128-byte swizzle atom across, four wgmma of 32 bytes of reduction each) or, r64
        // tiles, 64-byte rows in the 64-byte swizzle (two wgmma each).
        p.tile = tileOverride > 0 ? tileOverride - 1 : defaultWgmmaTile(g, type, int64_t(g.n) * g.p * g.q, smCount);
        p.rowPieces = kTiles[p.tile].rowPieces;
        p.kTiles = (pieces + p.rowPieces - 1) / p.rowPieces;
        p.ldw = p.kTiles * p.rowPieces * p.pieceElems;
    } else {
        // The element-by-element copy (stems, a few taps) keeps 64-byte rows and the 4-warp tiles. Otherwise
        // 128-byte rows, except on the narrow layers (K ≤ 64), whose short reductions (9 k-tiles for 64 channels,
        // 3×3) ran faster with 64-byte rows and 4 stages (measured, as the tiles).
        p.rowPieces = !aligned || kBytes == 64 || (kBytes == 0 && g.k <= 64) ? 4 : 8;
        p.kTiles = (pieces + p.rowPieces - 1) / p.rowPieces;
        p.ldw = p.kTiles * p.rowPieces * p.pieceElems;
    }
    const int64_t m = int64_t(g.n) * g.p * g.q;
    if (!p.wgmma) {
        p.tile = tileOverride > 0 ? tileOverride - 1 : defaultTile(g, m, smCount, aligned);
        if (!aligned)
            p.tile = std::min(p.tile, 1);
    }
    p.bm = kTiles[p.tile].bm();
    p.bn = kTiles[p.tile].bn();
    p.mTiles = p.tma ? g.n * p.tilesP * p.tilesQ : int((m + p.bm - 1) / p.bm);
    p.nTiles = (g.k + p.bn - 1) / p.bn;
    p.packedBytes = align256(size_t(g.k) * p.ldw * bytes);
    splitReduction(p, g, smCount, 0);
    return p;
}

} // namespace convscope::cuda::tc
