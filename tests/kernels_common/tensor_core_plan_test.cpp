// kernels/cuda/conv2d_tensor_core_plan.h: which Tensor Core kernel, tile and grid planOf gives a layer, as if on an
// sm_90 device of 132 multiprocessors (an H100 or H200). Host code only, so it runs without a GPU (CI): the choices
// docs/PERFORMANCE.md measured (the transposed tile on 64-channel layers of long rows, the window tiles, their twins
// where a tile asked for cannot take the layer) stay what the kernels were timed with.
#include "kernels/cuda/conv2d_tensor_core_plan.h"

#include <catch2/catch.hpp>

#include <string>

using namespace convscope;
using namespace convscope::cuda;
using namespace convscope::cuda::tc;

namespace {

constexpr int kSms = 132;

// A 3×3 convolution, padding 1, stride 1 (the unet-encoder suite's shape), batch n.
ConvGeometry conv3x3(int n, int c, int size, int k, int width = 0)
{
    ConvGeometry g {};
    g.n = n, g.c = c, g.h = size, g.w = width ? width : size;
    g.k = k, g.p = g.h, g.q = g.w;
    g.r = g.s = 3;
    g.strideH = g.strideW = 1;
    g.padTop = g.padLeft = 1;
    g.dilH = g.dilW = 1;
    g.groups = 1;
    return g;
}

Plan plan(const ConvGeometry& g, DType type, int tile = 0)
{
    return planOf(g, type, kSms, tile, 0, KernelChoice::Auto, true);
}

int tileIndex(const std::string& name)
{
    for (int i = 0; i < kTileCount; ++i)
        if (name == kTiles[i].name)
            return i;
    FAIL("no tile " << name);
    return -1;
}

} // namespace

TEST_CASE("tensor_core plan: 64-channel layers of long rows take the transposed tile", "[tensor_core][plan]")
{
    for (DType type : { DType::F16, DType::BF16, DType::F32 }) {
        INFO(dtypeName(type));
        // 64 → 64 @512², batch 4: 4·512·2 blocks of one row's 256 pixels, two blocks a multiprocessor.
        const Plan p = plan(conv3x3(4, 64, 512, 64), type);
        CHECK(p.tma);
        CHECK(p.tile == kTmaTile64t);
        CHECK(kTiles[p.tile].transposed);
        CHECK((p.tileW == 256 && p.tileH == 1 && p.tilesQ == 2 && p.tilesP == 512));
        CHECK(p.splits == 1);
        CHECK(p.ctas == 2 * kSms);
        CHECK(p.fallback == nullptr);
    }
    // Fewer output channels than the tile's 64 too (the weights' rows past K are the copy engine's zeros).
    CHECK(plan(conv3x3(4, 64, 512, 40), DType::F16).tile == kTmaTile64t);
}

TEST_CASE("tensor_core plan: where the transposed tile does not take a layer", "[tensor_core][plan]")
{
    // More than 64 output channels: the window tile of 128 (its blocks fill the device).
    CHECK(plan(conv3x3(4, 128, 256, 128), DType::F16).tile == kTmaTile128w);
    CHECK(plan(conv3x3(4, 64, 256, 128), DType::F16).tile == kTmaTile128w);
    // Rows of at most 128 pixels: a block of 128 pixels (the 16-bit 128×64 tile, tf32's window tile).
    CHECK(plan(conv3x3(8, 64, 100, 64), DType::F16).tile == kTmaTile64);
    CHECK(plan(conv3x3(8, 64, 100, 64), DType::F32).tile == kTmaTile64w);
    // Blocks that do not fill the device (8 rows of one image): no window tile, which would not split.
    CHECK(plan(conv3x3(1, 64, 8, 64, 256), DType::F16).tile == kTmaTile64);
    // Stride 2 along W.
    ConvGeometry strided = conv3x3(4, 64, 512, 64);
    strided.strideW = 2, strided.q = 256;
    CHECK(plan(strided, DType::F16).tile == kTmaTile64);
    // Asked for where it cannot run: its twin, and the note's reason.
    const Plan wide = plan(conv3x3(4, 128, 256, 128), DType::F16, tileIndex("tma256x64t") + 1);
    CHECK(wide.tile == kTmaTile64);
    REQUIRE(wide.fallback != nullptr);
    CHECK(std::string(wide.fallback).find("at most 64 output channels") != std::string::npos);
    const Plan shortRows = plan(conv3x3(8, 64, 100, 64), DType::F16, tileIndex("tma256x64t") + 1);
    CHECK(shortRows.tile == kTmaTile64);
    REQUIRE(shortRows.fallback != nullptr);
    CHECK(std::string(shortRows.fallback).find("more than 128 pixels") != std::string::npos);
}

TEST_CASE("tensor_core plan: the TMA tiles' shared memory", "[tensor_core][plan]")
{
    // Two blocks a multiprocessor where the stages, slots and epilogue areas fit 113 KB (the kernels' launch bound);
    // a transposed slot is 264 rows of 128 bytes (256 pixels and a reach of 8).
    CHECK(tmaSlotBytes(true) == 264 * 128);
    CHECK(tmaSmemBytes(64, 8, 4, 2, true) + 1024 <= 113 * 1024);
    CHECK(tmaMinBlocks(64, 8, 4, 2, true) == 2);
    CHECK(tmaEpilogueBytes(64) == 8 * (512 + 256));
    for (int i = kTmaTile64; i < kTileCount; ++i) {
        const TileShape& t = kTiles[i];
        INFO(t.name);
        CHECK(tmaSmemBytes(t.bn(), t.rowPieces, t.stages, t.windows, t.transposed) + 1024 <= 227 * 1024);
    }
}

TEST_CASE(
    "tensor_core plan: small maps of wide layers take the 128x64 tile instead of a split where the reduction is short",
    "[tensor_core][plan]")
{
    // ResNet-50 at batch 32, 14×14 (3×3 256 → 256): two 8×16 blocks an image, 128 of 128×128 on 132 multiprocessors;
    // 256 of 128×64, whole.
    const Plan small = plan(conv3x3(32, 256, 14, 256), DType::F16);
    CHECK(small.tma);
    CHECK(small.tile == kTmaTile64);
    CHECK(small.mTiles * small.nTiles == 256);
    CHECK(small.splits == 1);
    // 1×1, 1024 → 256, the same map: the same.
    ConvGeometry pointwise = conv3x3(32, 1024, 14, 256);
    pointwise.r = pointwise.s = 1, pointwise.padTop = pointwise.padLeft = 0;
    CHECK(plan(pointwise, DType::BF16).tile == kTmaTile64);
    // 28×28, 3×3 128 → 128: 224 blocks of 128×128 (7 of 4×32 an image) fill the device, and keep them.
    const Plan filled = plan(conv3x3(32, 128, 28, 128), DType::F16);
    CHECK(filled.tile == kTmaTile128);
    CHECK(filled.splits == 1);
    // Too few even at 128×64 (batch 2, 14×14: 4 blocks × 4): the 128×64 blocks, the reduction split.
    const Plan tiny = plan(conv3x3(2, 256, 14, 256), DType::F16);
    CHECK(tiny.tile == kTmaTile64);
    CHECK(tiny.splits > 1);
    // A long reduction keeps 128×128 and splits it: VGG-16's 3×3 512 → 512 at 14×14, batch 8 (C·R·S = 4608; 26 blocks
    // of 128×128), in fp16 and tf32.
    for (const DType type : { DType::F16, DType::F32 }) {
        const Plan longer = plan(conv3x3(8, 512, 14, 512), type);
        CHECK(longer.tma);
        CHECK(longer.tile == kTmaTile128);
        CHECK(longer.splits > 1);
    }
}

TEST_CASE("tensor_core plan: the cp.async kernels split a reduction into the parts that fill whole waves",
    "[tensor_core][plan]")
{
    // ResNet-50's and ResNet-18's last stage, 3×3 512 → 512 at 7×7, batch 32: 52 blocks of 128×128 (fp16) and 26 of
    // 128×256 (tf32) on 132 multiprocessors. 5 parts make 260 and 130 blocks: two full waves, and one.
    for (const DType type : { DType::F16, DType::F32 }) {
        INFO(dtypeName(type));
        const Plan last = plan(conv3x3(32, 512, 7, 512), type);
        CHECK(!last.tma);
        CHECK(last.wgmma);
        CHECK(last.mTiles * last.nTiles == (type == DType::F16 ? 52 : 26));
        CHECK(last.splits == 5);
        CHECK(last.tilesPerSplit * last.splits >= last.kTiles);
    }
    // The rule itself: waves per part, the fewest parts among equals, each part at least 8 k-tiles.
    CHECK(wavePartsOf(52, 144, kSms) == 5); // 2 waves / 5, against 2 / 4 and 3 / 6
    CHECK(wavePartsOf(26, 144, kSms) == 5); // 130 blocks: one wave
    CHECK(wavePartsOf(104, 32, kSms) == 1); // 2, 3 and 4 parts make as many waves as parts
    CHECK(wavePartsOf(52, 24, kSms) == 2); // at most 3 parts of 8 k-tiles
    CHECK(wavePartsOf(10, 7, kSms) == 1); // too short to split
    CHECK(wavePartsOf(1, 1000, kSms) == 8); // at most 8
}

TEST_CASE("tensor_core plan: a pointwise layer runs as one row of its N·H·W pixels", "[tensor_core][plan]")
{
    // ResNet-50 at batch 32, 7×7, 1×1 512 → 2048: as a map, 8×16 blocks hold 49 pixels of 128 and the TMA kernel
    // turns it down; as one row of 1568 pixels, 13 blocks of 128 consecutive pixels take it.
    ConvGeometry g = conv3x3(32, 512, 7, 2048);
    g.r = g.s = 1, g.padTop = g.padLeft = 0;
    CHECK(tmaRefusal(g, 2, 8) != nullptr);
    CHECK_FALSE(plan(g, DType::F16).tma);
    const ConvGeometry row = pointwiseAsRow(g);
    CHECK(row.n == 1);
    CHECK(row.h == 1);
    CHECK(row.p == 1);
    CHECK(row.w == 32 * 49);
    CHECK(row.q == 32 * 49);
    CHECK(row.c == 512);
    CHECK(row.k == 2048);
    const Plan p = plan(row, DType::F16);
    CHECK(p.tma);
    CHECK(p.tileW == 128);
    CHECK(p.tileH == 1);
    CHECK(p.mTiles == 13);
    // Not pointwise, left as they are: a 3×3, a strided 1×1, a padded 1×1, a stem (C < 16), one pixel row already.
    const ConvGeometry threes = conv3x3(32, 512, 7, 512);
    CHECK(pointwiseAsRow(threes).w == 7);
    ConvGeometry strided = g;
    strided.strideH = strided.strideW = 2, strided.p = strided.q = 4;
    CHECK(pointwiseAsRow(strided).w == 7);
    ConvGeometry padded = g;
    padded.padTop = padded.padLeft = 1, padded.p = padded.q = 9;
    CHECK(pointwiseAsRow(padded).w == 7);
    ConvGeometry stem = g;
    stem.c = 3;
    CHECK(pointwiseAsRow(stem).w == 7);
}
