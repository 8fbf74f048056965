// The cuda training kernels' index math on the CPU (kernels/cuda/training/backward_index.h), no GPU needed: the
// weight gradient's implicit GEMM emulated block by block as conv2d_backward_weights.cu runs it — its 64×64 tiles, its
// 16-deep steps, each split's run of the reduction, the partial slices summed in order — against the convolution's
// weight gradient by the definition, for strides, padding (asymmetric too), dilation, groups, depthwise and 1×1
// (linear) shapes and several split counts; pad's preimage and the pools' window enumeration against brute force.
#include "kernels/cuda/training/backward_index.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <set>
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

// conv2d_backward_weights.cu's grid, blocks and loads on the CPU (the same constants: 64×64 tiles, 16-deep steps).
std::vector<float> emulateWgrad(
    const WgradShape& g, const std::vector<float>& x, const std::vector<float>& dy, int splits)
{
    constexpr int kTile = 64, kDepth = 16, kThreads = 256;
    const long long count = wgradWeightCount(g);
    std::vector<float> partial(size_t(count) * size_t(splits), -12345.0f); // poison: every slot must be written
    const int gridX = (wgradColumns(g) + kTile - 1) / kTile, gridY = (wgradRows(g) + kTile - 1) / kTile;
    for (int bz = 0; bz < g.groups * splits; ++bz)
        for (int by = 0; by < gridY; ++by)
            for (int bx = 0; bx < gridX; ++bx) {
                const int grp = bz / splits, z = bz % splits;
                const int m0 = by * kTile, n0 = bx * kTile;
                const KRange run = wgradSplitRange(g, splits, kDepth, z);
                std::vector<float> acc(kTile * kTile, 0.0f), as(kDepth * kTile), bs(kDepth * kTile);
                for (long long k0 = run.begin; k0 < run.end; k0 += kDepth) {
                    for (int t = 0; t < kThreads; ++t)
                        for (int l = 0; l < 4; ++l) {
                            const int e = t + kThreads * l, kk = e % kDepth, mn = e / kDepth;
                            const long long k = k0 + kk;
                            const bool in = k < run.end;
                            as[size_t(kk * kTile + mn)] = in ? wgradA(g, dy.data(), grp, m0 + mn, k) : 0.0f;
                            bs[size_t(kk * kTile + mn)] = in ? wgradB(g, x.data(), grp, k, n0 + mn) : 0.0f;
                        }
                    for (int kk = 0; kk < kDepth; ++kk)
                        for (int m = 0; m < kTile; ++m)
                            for (int n = 0; n < kTile; ++n)
                                acc[size_t(m * kTile + n)] += as[size_t(kk * kTile + m)] * bs[size_t(kk * kTile + n)];
                }
                for (int m = 0; m < kTile; ++m)
                    for (int n = 0; n < kTile; ++n)
                        if (m0 + m < wgradRows(g) && n0 + n < wgradColumns(g))
                            partial[size_t(z * count + wgradIndex(g, grp, m0 + m, n0 + n))]
                                = acc[size_t(m * kTile + n)];
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
        shapeOf(5, 70, 1, 1, 67, 1, 1, 1, 0, 0, 1, 1), // linear as 1×1: more than one tile each way
        shapeOf(4, 2, 13, 13, 3, 5, 5, 3, 2, 1, 1, 1), // 5×5 stride 3
    };
    int index = 0;
    for (const WgradShape& g : shapes) {
        const auto x = randomValues(size_t(g.n) * g.c * g.h * g.w, 10u + unsigned(index));
        const auto dy = randomValues(size_t(g.n) * g.k * g.p * g.q, 20u + unsigned(index));
        const std::vector<double> want = referenceWgrad(g, x, dy);
        for (int splits : { 1, 2, 3, 7 }) {
            const std::vector<float> got = emulateWgrad(g, x, dy, splits);
            REQUIRE(got.size() == want.size());
            double err = 0, norm = 0;
            for (size_t i = 0; i < got.size(); ++i) {
                err += (got[i] - want[i]) * (got[i] - want[i]);
                norm += want[i] * want[i];
            }
            INFO("shape " << index << " (reduction " << wgradReduction(g) << "), split-K " << splits << ": relative L2 "
                          << std::sqrt(err / norm));
            CHECK(std::sqrt(err / norm) < 1e-5);
        }
        ++index;
    }
}

TEST_CASE("cuda training index math: the split runs tile the reduction exactly once", "[train][cuda]")
{
    const WgradShape g = shapeOf(3, 2, 17, 5, 2, 3, 3, 1, 1, 1, 1, 1); // reduction 3·17·5 = 255
    for (int splits = 1; splits <= 20; ++splits) {
        long long covered = 0, previousEnd = 0;
        for (int z = 0; z < splits; ++z) {
            const KRange r = wgradSplitRange(g, splits, 16, z);
            INFO("split-K " << splits << ", part " << z << ": [" << r.begin << ", " << r.end << ")");
            CHECK(r.begin == std::min(previousEnd, wgradReduction(g)));
            CHECK(r.begin <= r.end);
            CHECK((r.end == wgradReduction(g) || (r.end - r.begin) % 16 == 0));
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
                        for (int tap = 0; tap < kernel; ++tap)
                            if (const int o = poolWindowOf(i, tap, pad, dil, stride, out); o >= 0)
                                got.insert(o);
                        INFO("kernel " << kernel << ", stride " << stride << ", dilation " << dil << ", padding " << pad
                                       << ", element " << i);
                        CHECK(got == want);
                    }
                }
}
