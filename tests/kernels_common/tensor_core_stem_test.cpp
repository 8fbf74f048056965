// kernels/cuda/conv2d_tensor_core_stem.h: the stem kernel's index arithmetic against the im2col it replaces, on the
// host (CI, no GPU). The test fills the input window as the kernel does (rows from p0·sh − top, columns from
// q0·sw − left, cpad halves a pixel, zero off the image and past C) and checks that every block pixel m and reduction
// position k read through pixelWord(m) + tapWord(k / 2) give A[m, k] = x[n, p·sh − top + r·dh, q·sw − left + s·dw, c],
// on every tile of a layer (partial tiles along P and Q included); that a warp's A loads hit 32 different banks or
// share a word; and which layers planOf gives the stem kernel.
#include "kernels/cuda/conv2d_tensor_core_plan.h"
#include "kernels/cuda/conv2d_tensor_core_stem.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

using namespace convscope;
using namespace convscope::cuda;
using namespace convscope::cuda::tc;

namespace {

ConvGeometry stem(int n, int c, int h, int w, int k, int r, int stride, int pad, int dil = 1)
{
    ConvGeometry g {};
    g.n = n, g.c = c, g.h = h, g.w = w, g.k = k;
    g.r = g.s = r;
    g.strideH = g.strideW = stride;
    g.padTop = g.padLeft = pad;
    g.dilH = g.dilW = dil;
    g.groups = 1;
    g.p = (h + 2 * pad - dil * (r - 1) - 1) / stride + 1;
    g.q = (w + 2 * pad - dil * (r - 1) - 1) / stride + 1;
    return g;
}

// The input's value at (n, ih, iw, c): distinct and never 0, so a read of the wrong element or of padding shows.
int valueAt(const ConvGeometry& g, int n, int ih, int iw, int c) { return 1 + ((n * g.h + ih) * g.w + iw) * g.c + c; }

// The window of tile (n, p0, q0) as the kernel fills it, one int a half.
std::vector<int> windowOf(const ConvGeometry& g, const StemShape& s, int n, int p0, int q0)
{
    std::vector<int> window(size_t(s.fr) * s.rowHalves, -1); // the padding stays -1: never read
    const int ih0 = p0 * g.strideH - g.padTop, iw0 = q0 * g.strideW - g.padLeft, rowElems = s.fc * s.cpad;
    for (int fr = 0; fr < s.fr; ++fr)
        for (int e = 0; e < rowElems; ++e) {
            const int ih = ih0 + fr, iw = iw0 + (e >> s.cshift), c = e & (s.cpad - 1);
            const bool in = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w && c < g.c;
            window[size_t(fr) * s.rowHalves + e] = in ? valueAt(g, n, ih, iw, c) : 0;
        }
    return window;
}

// Every tile's every pixel on the map and every real reduction position, read as the kernel reads it.
void checkIm2col(const ConvGeometry& g)
{
    const StemShape s = stemShapeOf(g);
    INFO("C " << g.c << ", " << g.r << "x" << g.s << "/" << g.strideH << " dilation " << g.dilH << ", output " << g.p
              << "x" << g.q << ": tiles " << s.tp << "x" << s.tq << ", window " << s.fr << "x" << s.fc << "x"
              << s.cpad);
    REQUIRE(s.kpad % 16 == 0);
    REQUIRE(s.kpad >= g.r * g.s * s.cpad);
    REQUIRE(s.tp * s.tq == kStemPixels);
    int64_t checked = 0, mismatches = 0;
    for (int n = 0; n < g.n; ++n)
        for (int tp = 0; tp < s.tilesP; ++tp)
            for (int tq = 0; tq < s.tilesQ; ++tq) {
                const int p0 = tp * s.tp, q0 = tq * s.tq;
                const std::vector<int> window = windowOf(g, s, n, p0, q0);
                for (int m = 0; m < kStemPixels; ++m) {
                    const int p = p0 + m / s.tq, q = q0 + m % s.tq;
                    const int base = stemPixelWord(g, s, m);
                    for (int k = 0; k < s.kpad; ++k) {
                        const int entry = stemTapWord(g, s, k / 2);
                        const size_t half = size_t(2 * (base + stemEntryWord(entry)) + (k & 1));
                        REQUIRE(half < window.size()); // every read stays in the window, off-map pixels too
                        REQUIRE(window[half] >= 0); // never the rows' padding
                        const int tap = k / s.cpad, c = k % s.cpad;
                        REQUIRE(stemEntryReal(entry) == (tap < g.r * g.s)); // the reduction's padding reads zero
                        if (p >= g.p || q >= g.q || tap >= g.r * g.s)
                            continue; // not stored / zero
                        const int ih = p * g.strideH - g.padTop + tap / g.s * g.dilH;
                        const int iw = q * g.strideW - g.padLeft + tap % g.s * g.dilW;
                        const bool in = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w && c < g.c;
                        const int want = in ? valueAt(g, n, ih, iw, c) : 0;
                        mismatches += window[half] != want;
                        ++checked;
                    }
                }
            }
    INFO(checked << " positions checked");
    CHECK(checked > 0);
    CHECK(mismatches == 0);
}

} // namespace

TEST_CASE("cuda.tensor_core stem kernel: the window and tap table read the im2col of the layer", "[tensor_core][stem]")
{
    checkIm2col(stem(2, 3, 33, 35, 64, 7, 2, 3)); // ResNet's stem, partial tiles
    checkIm2col(stem(1, 3, 20, 150, 64, 3, 1, 1)); // VGG's, rows longer than a tile
    checkIm2col(stem(1, 1, 9, 11, 8, 5, 1, 2)); // one channel, 16-pixel rows (8 a tile)
    checkIm2col(stem(1, 5, 12, 12, 16, 3, 1, 2, 2)); // cpad 8, dilation 2
    checkIm2col(stem(1, 12, 10, 10, 32, 3, 2, 1)); // cpad 16
    checkIm2col(stem(1, 3, 47, 47, 96, 11, 4, 2)); // AlexNet's 11×11/4
    ConvGeometry rect = stem(1, 2, 14, 40, 24, 3, 1, 1);
    rect.r = 1, rect.strideW = 2, rect.padTop = 0; // 1×3 taps, stride (1, 2)
    rect.p = 14, rect.q = (40 + 2 - 3) / 2 + 1;
    checkIm2col(rect);
}

TEST_CASE("cuda.tensor_core stem kernel: the padded window rows keep a warp's A loads free of bank conflicts",
    "[tensor_core][stem]")
{
    for (const ConvGeometry& g : { stem(1, 3, 224, 224, 64, 7, 2, 3), stem(1, 3, 224, 224, 64, 3, 1, 1),
             stem(1, 4, 64, 64, 64, 5, 1, 2), stem(1, 7, 64, 64, 64, 3, 1, 1), stem(1, 3, 112, 112, 64, 5, 2, 2) }) {
        const StemShape s = stemShapeOf(g);
        for (int warp = 0; warp < 4; ++warp)
            for (int step = 0; step < s.kpad / 16; ++step) {
                INFO("C " << g.c << " " << g.r << "x" << g.s << "/" << g.strideH << ", warp " << warp << ", step "
                          << step);
                CHECK(stemBankWays(g, s, warp, step) == 1);
            }
    }
}

TEST_CASE("cuda.tensor_core stem kernel: planOf gives it the 16-bit layers of few channels", "[tensor_core][stem]")
{
    const ConvGeometry resnet = stem(32, 3, 224, 224, 64, 7, 2, 3);
    const Plan p = planOf(resnet, DType::F16, 132, 0, 0, KernelChoice::Auto, true);
    CHECK(p.stem);
    CHECK(p.cp == 4);
    CHECK(p.ldw == 208); // 7·7·4 = 196, rounded up to 16
    const StemShape s = stemShapeOf(resnet);
    CHECK(s.tp == 8); // 8×16 pixels: a window of 21×37 (1×128 would read 7×261)
    CHECK(s.tq == 16);
    CHECK(s.fr == 21);
    CHECK(s.fc == 37);
    CHECK(p.mTiles == 32 * 14 * 7);
    CHECK(p.nTiles == 1);
    CHECK(p.ctas == 132 * 4); // 4 blocks a multiprocessor: 28 KB of weights, 6 of window, 18 of stage
    CHECK(p.packedBytes >= size_t(64) * 208 * 2);
    CHECK(planOf(resnet, DType::BF16, 132, 0, 0, KernelChoice::Auto, true).stem);
    CHECK(planOf(resnet, DType::F16, 132, 0, 0, KernelChoice::Stem, true).stem);
    // Not the stem kernel: TF32 (FP32 storage), a kernel or tile asked for, C a multiple of 8 or ≥ 16, groups.
    CHECK_FALSE(planOf(resnet, DType::F32, 132, 0, 0, KernelChoice::Auto, true).stem);
    CHECK_FALSE(planOf(resnet, DType::F16, 132, 0, 0, KernelChoice::Mma, true).stem);
    CHECK_FALSE(planOf(resnet, DType::F16, 132, 1, 0, KernelChoice::Auto, true).stem);
    CHECK_FALSE(planOf(stem(1, 8, 32, 32, 64, 3, 1, 1), DType::F16, 132, 0, 0, KernelChoice::Auto, true).stem);
    CHECK_FALSE(planOf(stem(1, 17, 32, 32, 64, 3, 1, 1), DType::F16, 132, 0, 0, KernelChoice::Auto, true).stem);
    ConvGeometry grouped = stem(1, 6, 32, 32, 64, 3, 1, 1);
    grouped.groups = 2;
    CHECK(stemRefusal(grouped, 2) != nullptr);
    // Asked for where it cannot run: the general kernel, and the reason in the plan.
    const Plan asked = planOf(stem(1, 8, 32, 32, 64, 3, 1, 1), DType::F16, 132, 0, 0, KernelChoice::Stem, true);
    CHECK_FALSE(asked.stem);
    REQUIRE(asked.fallback != nullptr);
    CHECK(std::string(asked.fallback).find("stem kernel") != std::string::npos);
    // A 12×12 reduction at 4 halves a tap (576) is past the packed row's 512.
    CHECK(stemRefusal(stem(1, 3, 64, 64, 64, 12, 4, 0), 2) != nullptr);
    // Channels past one 64-channel slice: more slices, fewer pixel blocks in the persistent grid.
    const Plan wide = planOf(stem(4, 3, 64, 64, 200, 3, 1, 1), DType::F16, 132, 0, 0, KernelChoice::Auto, true);
    CHECK(wide.stem);
    CHECK(wide.nTiles == 4);
    CHECK(wide.ctas == std::min(wide.mTiles, 132 * 4 / 4));
}
