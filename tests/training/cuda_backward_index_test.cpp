// The cuda training kernels' index math on the CPU (kernels/cuda/training/backward_index.h), no GPU needed: the
// weight gradient's implicit GEMM emulated block by block as conv2d_backward_weights.cu runs it — each of its four
// tilings and two pipelines (the cp.async ring's schedule too), the threads' loads through the kernel's own
// wgradSources (each load's offset into its image) / wgradFetch, 8-deep steps, each split's run of the reduction,
// the partial slices summed in order — against the convolution's weight gradient by the definition, for strides,
// padding (asymmetric too), dilation, groups, depthwise, a stem, 1×1 stride-2 and linear shapes and several split
// counts; the threads' ownership of a tile's outputs and loads; the tile and split-K chosen for ResNet-18 layers;
// pad's preimage and the pools' window enumeration against brute force.
#include "kernels/cuda/tf32_layout.h"
#include "kernels/cuda/training/backward_index.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <type_traits>
#include <vector>

using namespace convscope::cuda::train;

namespace {

std::vector<float> randomValues(size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = u(rng);
    return v;
}

// dW by the definition: Σ over images and output positions of dy · the input tap (zero in the padding).
std::vector<double> referenceWgrad(const WgradShape& g, const std::vector<float>& x, const std::vector<float>& dy)
{
    const int cg = g.c / g.groups, kg = g.k / g.groups;
    std::vector<double> dw(size_t(g.k) * cg * g.r * g.s, 0.0);
    for (int img = 0; img < g.n; ++img)
        for (int k = 0; k < g.k; ++k)
            for (int p = 0; p < g.p; ++p)
                for (int q = 0; q < g.q; ++q) {
                    const double gy = dy[((size_t(img) * g.k + k) * g.p + p) * g.q + q];
                    const int grp = k / kg;
                    for (int c = 0; c < cg; ++c)
                        for (int r = 0; r < g.r; ++r)
                            for (int s = 0; s < g.s; ++s) {
                                const int ih = p * g.strideH - g.padTop + r * g.dilH;
                                const int iw = q * g.strideW - g.padLeft + s * g.dilW;
                                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w)
                                    continue;
                                const double xv = x[((size_t(img) * g.c + grp * cg + c) * g.h + ih) * g.w + iw];
                                dw[((size_t(k) * cg + c) * g.r + r) * g.s + s] += gy * xv;
                            }
                }
    return dw;
}

// conv2d_backward_weights.cu's grid, blocks and loads on the CPU for one tiling and pipeline: each block's tables of
// row offsets and column taps, every thread's loads of every step through wgradSources (wgradFetch for the register
// pipeline) into the k-major panels — for the cp.async pipeline into its ring of stages in the kernel's order, each
// stage poisoned before it is refilled — the products (each output of the tile, in the kernel's order over k; which
// thread owns it is wgradFragment's, checked apart), each split's partial slice and the slices summed in order.
std::vector<float> emulateWgrad(const WgradShape& g, const std::vector<float>& x, const std::vector<float>& dy,
    WgradTiling tiling, int splits, WgradPipeline pipeline)
{
    const int bm = tiling.bm, bn = tiling.bn, threads = tiling.threads;
    const bool ring = pipeline != WgradPipeline::Registers;
    const int stages = ring ? kWgradStages : 1;
    const long long count = wgradWeightCount(g);
    const WgradDivisors d = wgradDivisors(g);
    std::vector<float> partial(size_t(count) * size_t(splits), -12345.0f); // poison: every slot must be written
    const int gridX = (wgradColumns(g) + bn - 1) / bn, gridY = (wgradRows(g) + bm - 1) / bm;
    std::vector<int> rowOffset(size_t(bm), 0);
    std::vector<WgradColumnTap> tap(static_cast<size_t>(bn));
    std::vector<float> as(size_t(stages * kWgradDepth * bm)), bs(size_t(stages * kWgradDepth * bn)),
        acc(size_t(bm * bn));
    for (int bz = 0; bz < g.groups * splits; ++bz)
        for (int by = 0; by < gridY; ++by)
            for (int bx = 0; bx < gridX; ++bx) {
                const int grp = bz / splits, z = bz % splits, m0 = by * bm, n0 = bx * bn;
                const int mEnd = std::min(bm, wgradRows(g) - m0), nEnd = std::min(bn, wgradColumns(g) - n0);
                for (int i = 0; i < bm; ++i)
                    rowOffset[size_t(i)] = wgradRowOffset(g, grp, m0 + i);
                for (int i = 0; i < bn; ++i)
                    tap[size_t(i)] = wgradColumnTap(g, grp, n0 + i);
                const KRange run = wgradSplitRange(g, splits, kWgradDepth, z);
                const int steps = int((run.end - run.begin + kWgradDepth - 1) / kWgradDepth);
                // Every thread's loads of step s into stage `stage` (NaN first: every slot must be loaded).
                const auto issue = [&](int s, int stage) {
                    float* a = as.data() + size_t(stage * kWgradDepth * bm);
                    float* b = bs.data() + size_t(stage * kWgradDepth * bn);
                    std::fill(a, a + kWgradDepth * bm, std::nanf(""));
                    std::fill(b, b + kWgradDepth * bn, std::nanf(""));
                    const long long k0 = run.begin + (long long)s * kWgradDepth;
                    const auto loads = [&](auto la, auto lb, auto threadCount) {
                        using Threads = decltype(threadCount);
                        for (int t = 0; t < threads; ++t) {
                            constexpr int nA = decltype(la)::value, nB = decltype(lb)::value;
                            float ra[nA], rb[nB];
                            if (ring) {
                                int oa[nA], ob[nB];
                                const WgradImages images = wgradSources<nA, nB, Threads::value>(g, d, x.data(),
                                    dy.data(), t, k0 + wgradLoadK(t), run.end, rowOffset.data(), tap.data(), oa, ob);
                                for (int l = 0; l < nA; ++l) // the copy: image[offset], zero-filled at −1
                                    ra[l] = oa[l] >= 0 ? images.dy[oa[l]] : 0.0f;
                                for (int l = 0; l < nB; ++l)
                                    rb[l] = ob[l] >= 0 ? images.x[ob[l]] : 0.0f;
                            } else {
                                wgradFetch(g, d, x.data(), dy.data(), t, k0 + wgradLoadK(t), run.end, rowOffset.data(),
                                    tap.data(), ra, rb);
                            }
                            for (int l = 0; l < nA; ++l)
                                a[size_t(wgradLoadK(t) * bm + wgradLoadLine(t, l, threads))] = ra[l];
                            for (int l = 0; l < nB; ++l)
                                b[size_t(wgradLoadK(t) * bn + wgradLoadLine(t, l, threads))] = rb[l];
                        }
                    };
                    using Two = std::integral_constant<int, 2>;
                    using Four = std::integral_constant<int, 4>;
                    using Eight = std::integral_constant<int, 8>;
                    using Wide = std::integral_constant<int, kWgradThreads>;
                    using Narrow = std::integral_constant<int, kWgradNarrowThreads>;
                    if (threads == kWgradNarrowThreads) // 64×128 on 128 threads: 4 rows and 8 columns a thread
                        loads(Four {}, Eight {}, Narrow {});
                    else if (bm == 128 && bn == 128)
                        loads(Four {}, Four {}, Wide {});
                    else if (bm == 128)
                        loads(Four {}, Two {}, Wide {});
                    else if (bn == 128)
                        loads(Two {}, Four {}, Wide {});
                    else
                        loads(Two {}, Two {}, Wide {});
                };
                const auto products = [&](int stage) {
                    const float* a = as.data() + size_t(stage * kWgradDepth * bm);
                    const float* b = bs.data() + size_t(stage * kWgradDepth * bn);
                    for (int kk = 0; kk < kWgradDepth; ++kk)
                        for (int m = 0; m < mEnd; ++m)
                            for (int n = 0; n < nEnd; ++n)
                                acc[size_t(m * bn + n)]
                                    = std::fma(a[size_t(kk * bm + m)], b[size_t(kk * bn + n)], acc[size_t(m * bn + n)]);
                };
                std::fill(acc.begin(), acc.end(), 0.0f);
                if (ring) { // the kernel's schedule: steps issued kWgradStages − 1 ahead into the stage just read
                    for (int s = 0; s < kWgradStages - 1; ++s)
                        if (s < steps)
                            issue(s, s);
                    int buf = 0, next = kWgradStages - 1;
                    for (int s = 0; s < steps; ++s) {
                        if (s + kWgradStages - 1 < steps)
                            issue(s + kWgradStages - 1, next);
                        products(buf);
                        buf = wgradRingNext(buf);
                        next = wgradRingNext(next);
                    }
                } else {
                    for (int s = 0; s < steps; ++s) {
                        issue(s, 0);
                        products(0);
                    }
                }
                for (int m = 0; m < mEnd; ++m)
                    for (int n = 0; n < nEnd; ++n)
                        partial[size_t(z * count + wgradIndex(g, grp, m0 + m, n0 + n))] = acc[size_t(m * bn + n)];
            }
    std::vector<float> dw(static_cast<size_t>(count));
    for (long long i = 0; i < count; ++i) {
        float sum = 0.0f;
        for (int z = 0; z < splits; ++z)
            sum += partial[size_t(z * count + i)];
        dw[size_t(i)] = sum;
    }
    return dw;
}

double relativeL2(const std::vector<float>& got, const std::vector<double>& want)
{
    double err = 0, norm = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        norm += want[i] * want[i];
    }
    return std::sqrt(err / norm);
}

// p and q from the convolution's formula with top/left padding and the given bottom/right padding.
WgradShape shapeOf(
    int n, int c, int h, int w, int k, int r, int s, int stride, int padTop, int padBottom, int dil, int groups)
{
    WgradShape g {};
    g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.r = r, g.s = s;
    g.strideH = stride, g.strideW = stride, g.padTop = padTop, g.padLeft = padTop, g.dilH = dil, g.dilW = dil;
    g.groups = groups;
    g.p = (h + padTop + padBottom - dil * (r - 1) - 1) / stride + 1;
    g.q = (w + padTop + padBottom - dil * (s - 1) - 1) / stride + 1;
    return g;
}

} // namespace

TEST_CASE("cuda training index math: the weight gradient's split-K implicit GEMM emulated on the CPU", "[train][cuda]")
{
    const std::vector<WgradShape> shapes = {
        shapeOf(2, 3, 9, 9, 5, 3, 3, 1, 1, 1, 1, 1), // padded 3×3
        shapeOf(3, 4, 11, 10, 6, 3, 3, 2, 1, 0, 1, 2), // stride 2, asymmetric padding, 2 groups
        shapeOf(2, 6, 12, 12, 6, 3, 3, 1, 2, 2, 2, 3), // dilation 2, 3 groups
        shapeOf(2, 8, 7, 7, 8, 3, 3, 1, 1, 1, 1, 8), // depthwise
        shapeOf(5, 70, 1, 1, 130, 1, 1, 1, 0, 0, 1, 1), // linear as 1×1: more than one 64-tile each way, rows past 128
        shapeOf(4, 2, 13, 13, 3, 5, 5, 3, 2, 1, 1, 1), // 5×5 stride 3
        shapeOf(1, 3, 23, 21, 9, 7, 7, 2, 3, 3, 1, 1), // a stem: C = 3, 7×7 stride 2 (147 columns: three 64-tiles)
        shapeOf(2, 20, 9, 9, 12, 1, 1, 2, 0, 0, 1, 1), // a 1×1 stride-2 projection (Q = 5: steps cross rows and images)
    };
    const WgradTiling tilings[]
        = { { 128, 128 }, { 128, 64 }, { 64, 128 }, { 64, 64 }, { 64, 128, kWgradNarrowThreads } };
    int index = 0;
    for (const WgradShape& g : shapes) {
        const auto x = randomValues(size_t(g.n) * g.c * g.h * g.w, 10u + unsigned(index));
        const auto dy = randomValues(size_t(g.n) * g.k * g.p * g.q, 20u + unsigned(index));
        const std::vector<double> want = referenceWgrad(g, x, dy);
        for (const WgradTiling& tiling : tilings)
            for (int splits : { 1, 3, 7 })
                for (WgradPipeline pipeline : { WgradPipeline::Registers, WgradPipeline::Async }) {
                    if (tiling.threads != kWgradThreads && pipeline == WgradPipeline::Registers)
                        continue; // the narrow tile runs on the cp.async pipeline only
                    const std::vector<float> got = emulateWgrad(g, x, dy, tiling, splits, pipeline);
                    REQUIRE(got.size() == want.size());
                    INFO("shape " << index << " (reduction " << wgradReduction(g) << "), tile " << tiling.bm << "x"
                                  << tiling.bn << " on " << tiling.threads << " threads, split-K " << splits << ", "
                                  << (pipeline == WgradPipeline::Async ? "cp.async" : "registers") << ": relative L2 "
                                  << relativeL2(got, want));
                    CHECK(relativeL2(got, want) < 1e-5);
                }
        ++index;
    }
}

TEST_CASE("cuda training index math: the weight gradient's threads own each output of a tile once", "[train][cuda]")
{
    const WgradTiling tilings[]
        = { { 128, 128 }, { 128, 64 }, { 64, 128 }, { 64, 64 }, { 64, 128, kWgradNarrowThreads } };
    for (const WgradTiling& tiling : tilings) {
        const int bm = tiling.bm, bn = tiling.bn, threads = tiling.threads;
        const int tm = bm * 16 / threads, tn = bn / 16, halfM = threads / 4; // the kernel's Grid
        std::vector<int> owners(size_t(bm * bn), 0), loadsA(size_t(kWgradDepth * bm), 0),
            loadsB(size_t(kWgradDepth * bn), 0);
        for (int t = 0; t < threads; ++t) {
            for (int i = 0; i < tm; ++i)
                for (int j = 0; j < tn; ++j)
                    ++owners[size_t(
                        wgradFragment(wgradThreadRow(t), i, halfM) * bn + wgradFragment(wgradThreadCol(t), j))];
            for (int l = 0; l < bm * kWgradDepth / threads; ++l)
                ++loadsA[size_t(wgradLoadK(t) * bm + wgradLoadLine(t, l, threads))];
            for (int l = 0; l < bn * kWgradDepth / threads; ++l)
                ++loadsB[size_t(wgradLoadK(t) * bn + wgradLoadLine(t, l, threads))];
        }
        INFO("tile " << bm << "x" << bn << " on " << threads << " threads");
        CHECK(std::count(owners.begin(), owners.end(), 1) == bm * bn);
        CHECK(std::count(loadsA.begin(), loadsA.end(), 1) == kWgradDepth * bm);
        CHECK(std::count(loadsB.begin(), loadsB.end(), 1) == kWgradDepth * bn);
    }
}

TEST_CASE("cuda training index math: the weight gradient's tile and split-K per layer", "[train][cuda]")
{
    // ResNet-18 at batch 32 and the U-Net encoder at batch 16 on a 132-SM device, each tile at the occupancy its
    // register cap gives on sm_90 (the launcher asks the runtime; wgradMinBlocks is what ptxas reaches there).
    const WgradShape stem = shapeOf(32, 3, 224, 224, 64, 7, 7, 2, 3, 3, 1, 1);
    const WgradShape layer1 = shapeOf(32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1);
    const WgradShape layer4 = shapeOf(32, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1);
    const WgradShape projection = shapeOf(32, 128, 28, 28, 256, 1, 1, 2, 0, 0, 1, 1);
    const WgradShape enc1 = shapeOf(16, 64, 128, 128, 64, 3, 3, 1, 1, 1, 1, 1);
    const WgradShape enc2in = shapeOf(16, 64, 64, 64, 128, 3, 3, 1, 1, 1, 1, 1);
    const WgradShape enc2 = shapeOf(16, 128, 64, 64, 128, 3, 3, 1, 1, 1, 1, 1);
    CHECK(wgradTiling(stem).bm == 64); // 64 rows, 147 columns
    CHECK(wgradTiling(layer1).bm == 64); // no half-empty 128-row tiles for 64 channels
    CHECK((wgradTiling(layer4).bm == 128 && wgradTiling(layer4).bn == 128));
    CHECK((wgradTiling(enc2).bm == 128 && wgradTiling(enc2).bn == 128));
    CHECK(wgradTiling(projection).bm == 128);
    // 64-channel layers on the cp.async pipeline: 64×128 on 128 threads, 8×8 outputs a thread; the register pipeline
    // keeps its four 256-thread tiles.
    for (const WgradShape& g : { stem, layer1, enc1 }) {
        CHECK((wgradTiling(g).bn == 128 && wgradTiling(g).threads == kWgradNarrowThreads));
        CHECK(wgradTiling(g, WgradPipeline::Registers).threads == kWgradThreads);
        CHECK(wgradTiling(g, WgradPipeline::AsyncWide).threads == kWgradThreads);
    }
    const auto slotsOf = [](WgradTiling t) { return 132LL * wgradMinBlocks(t.bm, t.bn, t.threads); };
    for (const WgradShape& g : { stem, layer1, layer4, projection, enc1, enc2in, enc2 }) {
        const WgradTiling t = wgradTiling(g);
        const int splits = wgradSplits(g, t, 132, wgradMinBlocks(t.bm, t.bn, t.threads));
        const long long blocks = wgradTiles(g, t) * splits, slots = slotsOf(t);
        const long long most = std::min({ wgradReduction(g) / kWgradMinRun, kWgradMaxSplits, 65535LL / g.groups });
        INFO("reduction " << wgradReduction(g) << ", tiles " << wgradTiles(g, t) << ", split-K " << splits << ", "
                          << blocks << " blocks in " << slots << " slots");
        CHECK(splits >= 1);
        CHECK(splits <= kWgradMaxSplits);
        CHECK((splits == 1 || wgradReduction(g) / splits >= kWgradMinRun));
        // No last wave of a few blocks (the slowest case: a whole block's time for them alone) unless the caps stop
        // the split count short of a full wave.
        CHECK((splits == most || blocks % slots == 0 || blocks % slots >= slots / 4));
        CHECK(wgradSplitCost(g, t, slots, splits) <= wgradSplitCost(g, t, slots, 1));
    }
    // The U-Net encoder's long reductions fill exactly one wave: the old rule's ⌈2·132 / tiles⌉ parts made 265 and
    // 270 blocks of 264 slots, one or six blocks left for a second wave.
    for (const WgradShape& g : { enc1, enc2in, enc2 }) {
        const WgradTiling t = wgradTiling(g);
        const long long blocks = wgradTiles(g, t) * wgradSplits(g, t, 132, wgradMinBlocks(t.bm, t.bn, t.threads));
        INFO(blocks << " blocks in " << slotsOf(t) << " slots");
        CHECK(blocks <= slotsOf(t));
        CHECK(blocks * 100 >= slotsOf(t) * 95);
    }
    CHECK(wgradSplits(stem, wgradTiling(stem), 132, 3) > 32); // two tiles over 401 408 positions
    CHECK(wgradSplits(layer4, wgradTiling(layer4), 132, 2) > 1); // 144 tiles over 1 568
    CHECK(wgradSplits(enc2, wgradTiling(enc2), 132, 2) == 29); // 9 tiles: 261 blocks in 264 slots
    // Two tiles over 6 272: every multiprocessor busy (a floor of 256 a part left it at 48 blocks).
    CHECK(wgradTiles(projection, wgradTiling(projection)) * wgradSplits(projection, wgradTiling(projection), 132, 2)
        >= 132);
}

TEST_CASE("cuda training index math: the split runs tile the reduction exactly once", "[train][cuda]")
{
    const WgradShape g = shapeOf(3, 2, 17, 5, 2, 3, 3, 1, 1, 1, 1, 1); // reduction 3·17·5 = 255
    for (int splits = 1; splits <= 20; ++splits) {
        long long covered = 0, previousEnd = 0;
        for (int z = 0; z < splits; ++z) {
            const KRange r = wgradSplitRange(g, splits, kWgradDepth, z);
            INFO("split-K " << splits << ", part " << z << ": [" << r.begin << ", " << r.end << ")");
            CHECK(r.begin == std::min(previousEnd, wgradReduction(g)));
            CHECK(r.begin <= r.end);
            CHECK((r.end == wgradReduction(g) || (r.end - r.begin) % kWgradDepth == 0));
            covered += r.end - r.begin;
            previousEnd = r.end;
        }
        CHECK(covered == wgradReduction(g));
    }
}

TEST_CASE("cuda training index math: pad's preimage is every output whose source is the element", "[train][cuda]")
{
    for (int mode = 0; mode < 3; ++mode)
        for (int size = 1; size <= 5; ++size)
            for (int before = 0; before <= 4; ++before)
                for (int after = 0; after <= 4; ++after) {
                    if (mode == 1 && (before >= size || after >= size))
                        continue; // reflect needs padding < size (shape inference refuses the rest)
                    const int out = size + before + after;
                    for (int i = 0; i < size; ++i) {
                        std::set<int> want;
                        for (int o = 0; o < out; ++o) {
                            int src = o - before;
                            if (src < 0 || src >= size) {
                                if (mode == 0)
                                    continue;
                                src = mode == 2 ? (src < 0 ? 0 : size - 1) : (src < 0 ? -src : 2 * (size - 1) - src);
                            }
                            if (src == i)
                                want.insert(o);
                        }
                        int lo[3], hi[3];
                        const int runs = padPreimage(i, before, size, out, PadAxisMode(mode), lo, hi);
                        std::multiset<int> got;
                        for (int t = 0; t < runs; ++t)
                            for (int o = lo[t]; o < hi[t]; ++o)
                                got.insert(o);
                        INFO("mode " << mode << ", size " << size << ", padding " << before << "/" << after
                                     << ", element " << i);
                        CHECK(got == std::multiset<int>(want.begin(), want.end()));
                    }
                }
}

TEST_CASE("cuda training index math: the pools' windows over an element are the forward's", "[train][cuda]")
{
    for (int kernel = 1; kernel <= 4; ++kernel)
        for (int stride = 1; stride <= 3; ++stride)
            for (int dil = 1; dil <= 2; ++dil)
                for (int pad = 0; pad <= kernel / 2; ++pad) {
                    const int size = 9, out = (size + 2 * pad - dil * (kernel - 1) - 1 + stride - 1) / stride + 1;
                    for (int i = 0; i < size; ++i) {
                        std::multiset<int> want, got;
                        for (int o = 0; o < out; ++o)
                            for (int tap = 0; tap < kernel; ++tap)
                                if (o * stride - pad + tap * dil == i)
                                    want.insert(o);
                        std::vector<int> inTapOrder, inRange;
                        for (int tap = 0; tap < kernel; ++tap)
                            if (const int o = poolWindowOf(i, tap, pad, dil, stride, out); o >= 0) {
                                got.insert(o);
                                inTapOrder.push_back(o);
                            }
                        const PoolWindowRange range = poolWindowsOver(i, kernel, pad, dil, stride, out);
                        for (int o = range.last; o >= range.first; --o)
                            if (poolWindowCovers(i, o, pad, dil, stride))
                                inRange.push_back(o);
                        INFO("kernel " << kernel << ", stride " << stride << ", dilation " << dil << ", padding " << pad
                                       << ", element " << i);
                        CHECK(got == want);
                        CHECK(inRange == inTapOrder); // the same windows, in the same (tap) order
                    }
                }
}

// The TF32 tiles' shared-memory layouts (kernels/cuda/tf32_layout.h): the swizzle keeps each panel row a permutation,
// keeps 16-byte groups whole, and makes a warp's fragment reads (lane (g, t) at k = t or t + 4, column base + g or
// base + g + 8) touch 32 different banks, where the plain layout takes 4; the packed A layout places every element of a
// 16 × 8 tile once, each lane's four values being mma's a0 … a3.
TEST_CASE("cuda TF32 tiles: the swizzled panels and the packed A fragments", "[train][cuda][tf32]")
{
    using namespace convscope::cuda::tf32;
    for (int k = 0; k < 8; ++k) {
        std::set<int> row;
        for (int col = 0; col < 128; ++col) {
            row.insert(swizzle(k, col));
            CHECK(swizzle(k, col) / 4 == swizzle(k, col - col % 4) / 4); // a 16-byte group stays whole
            CHECK(swizzle(k, col) / 32 == col / 32); // within its 128-byte line
        }
        CHECK(row.size() == 128);
    }
    for (int base : { 0, 16, 48, 96 })
        for (int hi : { 0, 4 })
            for (int plus : { 0, 8 }) {
                std::set<int> banks, plainBanks;
                for (int lane = 0; lane < 32; ++lane) {
                    const int g = lane / 4, t = lane % 4, k = t + hi, col = base + g + plus;
                    banks.insert((k * 128 + swizzle(k, col)) % 32);
                    plainBanks.insert((k * 128 + col) % 32);
                }
                CHECK(banks.size() == 32);
                CHECK(plainBanks.size() == 8);
            }
    std::set<std::pair<int, int>> tile;
    for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        const std::pair<int, int> want[4] = { { g, t }, { g + 8, t }, { g, t + 4 }, { g + 8, t + 4 } };
        for (int e = 0; e < 4; ++e) {
            const int at = lane * 4 + e;
            CHECK(std::pair(packedRow(at), packedCol(at)) == want[e]);
            tile.insert({ packedRow(at), packedCol(at) });
        }
    }
    CHECK(tile.size() == 128);
}
