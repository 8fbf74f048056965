// The fast CPU backward of conv2d, conv_transpose2d, conv3d, conv_transpose3d and linear: im2col / col2im (vol2col /
// col2vol on volumes) + detail::parallelSgemm (the forward's GEMM, compute/cpu/parallel_sgemm.cpp), item by item and
// group by group.
//
// One column matrix serves all four convolution gradients. For a source plane set (C channels of H × W) and a grid
// of positions (PH × PW), col[(c·kh + ki)·kw + kj][ph·PW + pw] = src[c, ph·s_h − pad.top + ki·d_h, pw·s_w − pad.left
// + kj·d_w] (0 outside); a volume adds the depth axis in front, an image is a volume of depth 1. conv2d takes its input
// as the source over its output grid; conv_transpose2d takes its output gradient as the source over its input grid.
// Then, per group (K = channels per group · kh · kw):
//   conv2d            gcol = W_gᵀ·gy_g, gx = col2im(gcol)       gw_g += gy_g · colᵀ(x)
//   conv_transpose2d  gx_g = W_g · col(gy)                      gw_g += x_g · colᵀ(gy)
// The column buffer is K × positions floats for one item and group at a time.
#include "compute/training/cpu_backward_ops.h"

#include "compute/cpu/dense_convolution.h"
#include "compute/cpu/op_common.h"
#include "compute/cpu_threads.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <vector>

namespace convscope::cpu::grad::fast {

namespace {

    // Axes 0, 1, 2 are D, H, W; an image has a depth of 1, a 1-long kernel along it, no padding and unit steps.
    struct Geometry {
        int64_t channels;
        std::array<int64_t, 3> src, pos, k, s, before, dil;
        int64_t rows() const { return channels * k[0] * k[1] * k[2]; }
        int64_t positions() const { return pos[0] * pos[1] * pos[2]; }
        int64_t srcSize() const { return src[0] * src[1] * src[2]; }
    };

    Geometry geometry(const Conv2d& spec, const Padding2d& pad, int64_t channels, const Shape& src, const Shape& pos)
    {
        return { channels, { 1, src.h, src.w }, { 1, pos.h, pos.w }, { 1, spec.kernel_size[0], spec.kernel_size[1] },
            { 1, spec.stride[0], spec.stride[1] }, { 0, pad.top, pad.left },
            { 1, spec.dilation[0], spec.dilation[1] } };
    }
    Geometry geometry(
        const ConvTranspose2d& spec, const Padding2d& pad, int64_t channels, const Shape& src, const Shape& pos)
    {
        return { channels, { 1, src.h, src.w }, { 1, pos.h, pos.w }, { 1, spec.kernel_size[0], spec.kernel_size[1] },
            { 1, spec.stride[0], spec.stride[1] }, { 0, pad.top, pad.left },
            { 1, spec.dilation[0], spec.dilation[1] } };
    }
    template <typename Spec3d>
    Geometry geometry(const Spec3d& spec, const Padding3d& pad, int64_t channels, const Shape& src, const Shape& pos)
    {
        return { channels, { src.d, src.h, src.w }, { pos.d, pos.h, pos.w }, spec.kernel_size, spec.stride,
            { pad.front, pad.top, pad.left }, spec.dilation };
    }

    // The source index along axis `a` of position p with tap t, or -1 outside the source.
    inline int64_t source(const Geometry& g, int a, int64_t p, int64_t t)
    {
        const int64_t i = p * g.s[size_t(a)] - g.before[size_t(a)] + t * g.dil[size_t(a)];
        return (i < 0 || i >= g.src[size_t(a)]) ? -1 : i;
    }

    // col[row(c, taps)][position] = src[c, source along each axis] (0 outside), or with `add` the adjoint: every column
    // element added onto the source element it was read from (col2im / col2vol; dst zeroed first). Split across the
    // OpenMP team: by row when reading (rows are independent), by channel when adding (a channel's rows all add onto
    // its own plane, so no two threads write one element and each element's additions keep their order: bit-identical
    // to one thread). Without the split this serial copy capped the backward's speed-up on many cores. Reading can
    // take only the lines (a line: one (depth, row) of the position grid, pos[2] positions) [firstLine, lastLine), into
    // a matrix of that many positions a row, or into columns of a wider one whose rows are `ld` apart (several items'
    // columns side by side); `parallel` false leaves the OpenMP split to the caller.
    template <bool Add>
    void columns(const Geometry& g, std::conditional_t<Add, const float*, float*> col,
        std::conditional_t<Add, float*, const float*> src, int64_t firstLine = 0, int64_t lastLine = -1,
        bool parallel = true, int64_t ld = 0)
    {
        if (lastLine < 0)
            lastLine = g.pos[0] * g.pos[1];
        const int64_t taps = g.k[0] * g.k[1] * g.k[2];
        const int64_t units = Add ? g.channels : g.channels * taps;
        const int64_t width = (lastLine - firstLine) * g.pos[2]; // a column row's positions
        if (ld == 0)
            ld = width;
        parallel = parallel && g.rows() * width >= detail::kMinParallelElements;
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t u = 0; u < units; ++u) {
            const int64_t c = Add ? u : u / taps;
            const int64_t firstTap = Add ? 0 : u % taps, lastTap = Add ? taps : firstTap + 1;
            if constexpr (Add)
                std::fill(src + c * g.srcSize(), src + (c + 1) * g.srcSize(), 0.0f);
            for (int64_t tap = firstTap; tap < lastTap; ++tap) {
                const int64_t a = tap / (g.k[1] * g.k[2]), b = tap / g.k[2] % g.k[1], e = tap % g.k[2];
                const int64_t row = c * taps + tap;
                for (int64_t l = firstLine; l < lastLine; ++l) {
                    const int64_t sd = source(g, 0, l / g.pos[1], a), sh = source(g, 1, l % g.pos[1], b);
                    auto line = col + row * ld + (l - firstLine) * g.pos[2];
                    if (sd < 0 || sh < 0) {
                        if constexpr (!Add)
                            std::fill(line, line + g.pos[2], 0.0f);
                        continue;
                    }
                    auto plane = src + ((c * g.src[0] + sd) * g.src[1] + sh) * g.src[2];
                    for (int64_t pw = 0; pw < g.pos[2]; ++pw) {
                        const int64_t sw = source(g, 2, pw, e);
                        if constexpr (Add) {
                            if (sw >= 0)
                                plane[sw] += line[pw];
                        } else {
                            line[pw] = sw < 0 ? 0.0f : plane[sw];
                        }
                    }
                }
            }
        }
    }

    // One convolution weight gradient: gw_g (rows × K) += Σ_n A_{n,g} (rows × P) · colᵀ(src_{n,g}) for every item n and
    // group g, where A is conv2d's output gradient (rows = output channels a group) over its input's columns, or a
    // transposed convolution's input over its output gradient's columns.
    struct WeightGradient {
        const Geometry& g;
        int64_t items, groups, rows;
        const float* a; // item n, group g: a + n · aItem + g · rows · P (rows × P, row-major)
        int64_t aItem;
        const float* src; // item n, group g: src + n · srcItem + g · channels · srcSize()
        int64_t srcItem;
        float* gw; // group g: gw + g · rows · K
        const char* op;
    };

    // Items in bundles of at least 256 positions where an item has few (1 where it has enough): one product per
    // bundle then reduces over all of its positions. Item by item, DCGAN's 4² layer's weight gradient (512 × 4096,
    // P = 16) read and wrote all of gw for every 16 multiply-adds of each element, bound by memory (16.8 ms on 16
    // threads), and its data gradient's products were 16 columns wide.
    int64_t bundleOf(int64_t positions, int64_t items)
    {
        constexpr int64_t kBundlePositions = 256;
        return std::clamp<int64_t>((kBundlePositions + positions - 1) / positions, 1, std::max<int64_t>(items, 1));
    }

    // dst (rows × count·P) = the `count` items' rows × P blocks (items `itemStride` apart, rows P apart) side by side.
    void sideBySide(float* dst, const float* src, int64_t rows, int64_t P, int64_t count, int64_t itemStride)
    {
        const int64_t width = count * P;
#pragma omp parallel for schedule(static) if (rows * width >= detail::kMinParallelElements)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t b = 0; b < count; ++b)
                std::copy_n(src + b * itemStride + r * P, P, dst + r * width + b * P);
    }

    // Item by item (in bundles, above), each product split across the team by parallelSgemm's blocks of C.
    void weightGradientByItem(const WeightGradient& w)
    {
        const int64_t K = w.g.rows(), P = w.g.positions();
        const int64_t bundle = bundleOf(P, w.items), wide = bundle * P;
        auto col = detail::allocateWorkspace(K * wide, w.op);
        auto gathered = detail::allocateWorkspace(bundle > 1 ? w.rows * wide : 1, w.op);
        for (int64_t n0 = 0; n0 < w.items; n0 += bundle) {
            const int64_t count = std::min(bundle, w.items - n0), width = count * P;
            for (int64_t grp = 0; grp < w.groups; ++grp) {
                for (int64_t b = 0; b < count; ++b)
                    columns<false>(w.g, col.get() + b * P,
                        w.src + (n0 + b) * w.srcItem + grp * w.g.channels * w.g.srcSize(), 0, -1, true, width);
                const float* a = w.a + n0 * w.aItem + grp * w.rows * P;
                int64_t lda = P;
                if (count > 1) {
                    sideBySide(gathered.get(), a, w.rows, P, count, w.aItem);
                    a = gathered.get();
                    lda = width;
                }
                detail::parallelSgemm(false, true, w.rows, K, width, a, lda, col.get(), width, n0 == 0 ? 0.0f : 1.0f,
                    w.gw + grp * w.rows * K, K);
            }
        }
    }

    // Where a product is too small to split (fewer blocks of C than threads: conv1 of ResNet is 64 × 147 with a 12544
    // positions' reduction, DCGAN's first and last layers 64 × 48), the reduction is split instead: the team takes
    // tasks of one item and a run of lines each, static-scheduled, every thread summing its tasks into its own
    // partial gradient, and the partials are added in thread order. The sums so depend on the thread count, not on
    // which thread ran first. False when the split would not pay or its buffers would be large (then by item).
    bool weightGradientByTasks(const WeightGradient& w)
    {
        const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
        const int64_t K = w.g.rows(), P = w.g.positions(), lines = w.g.pos[0] * w.g.pos[1];
        const int64_t blocksOfC = std::max<int64_t>(1, std::max(w.rows, K) / 16); // parallelSgemm's split, at most
        const int64_t gwSize = w.groups * w.rows * K;
        if (threads < 2 || blocksOfC >= threads || w.items * w.groups * w.rows * K * P < int64_t(threads) << 18
            || gwSize * threads > (int64_t(1) << 24))
            return false;
        // Tasks: every item cut into `cuts` runs of lines, enough for every thread, each run's columns at most 2^20
        // floats (4 MiB) so that the team's column buffers stay small.
        const int64_t byThreads = (threads + w.items - 1) / w.items;
        const int64_t bySize = (K * P + (int64_t(1) << 20) - 1) >> 20;
        const int64_t cuts = std::min(lines, std::max(byThreads, bySize));
        const int64_t linesPerCut = (lines + cuts - 1) / cuts, tasks = w.items * cuts;
        const int64_t colSize = K * linesPerCut * w.g.pos[2];
        auto partials = detail::allocateWorkspace(gwSize * threads, w.op);
        auto cols = detail::allocateWorkspace(colSize * threads, w.op);
        std::vector<char> used(size_t(threads), 0);
        keepBlasOnCallingThread();
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t t = 0; t < tasks; ++t) {
            const int me = omp_get_thread_num();
            float* partial = partials.get() + me * gwSize;
            float* col = cols.get() + me * colSize;
            const int64_t n = t / cuts, first = (t % cuts) * linesPerCut, last = std::min(lines, first + linesPerCut);
            if (first >= last)
                continue;
            const int64_t width = (last - first) * w.g.pos[2], offset = first * w.g.pos[2];
            for (int64_t grp = 0; grp < w.groups; ++grp) {
                columns<false>(
                    w.g, col, w.src + n * w.srcItem + grp * w.g.channels * w.g.srcSize(), first, last, false);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(w.rows), blasint(K), blasint(width), 1.0f,
                    w.a + n * w.aItem + grp * w.rows * P + offset, blasint(P), col, blasint(width),
                    used[size_t(me)] ? 1.0f : 0.0f, partial + grp * w.rows * K, blasint(K));
            }
            used[size_t(me)] = 1;
        }
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t i = 0; i < gwSize; ++i) {
            float sum = 0.0f;
            for (int t = 0; t < threads; ++t)
                if (used[size_t(t)])
                    sum += partials[size_t(t * gwSize + i)];
            w.gw[i] = sum;
        }
        return true;
    }

    void weightGradient(const WeightGradient& w)
    {
        if (!weightGradientByTasks(w))
            weightGradientByItem(w);
    }

    int64_t volume(const Shape& s) { return s.d * s.h * s.w; }

    void biasGrad(const Tensor& gy, Tensor* gb)
    {
        if (!gb)
            return;
        const Shape& s = gy.shape();
        // A channel a thread: each channel's sum keeps its order (ResNet's conv1 has 6.4 million terms at batch 8).
#pragma omp parallel for schedule(static) if (s.numel() >= detail::kMinParallelElements)
        for (int64_t c = 0; c < s.c; ++c) {
            double sum = 0;
            for (int64_t n = 0; n < s.n; ++n)
                sum += detail::sumInDouble(gy.data() + (n * s.c + c) * volume(s), volume(s));
            gb->data()[c] = static_cast<float>(sum);
        }
    }

    // conv: gcol = W_gᵀ·gy_g, gx = col2im(gcol).
    template <typename Spec, typename Pad>
    void convData(const Tensor& gy, const Tensor& weight, const Spec& spec, const Pad& pad, Tensor& gx, const char* op)
    {
        const Shape& is = gx.shape();
        const Shape& os = gy.shape();
        detail::requireGroups(is.c, os.c, spec.groups, op);
        const int64_t icpg = is.c / spec.groups, ocpg = os.c / spec.groups;
        const Geometry g = geometry(spec, pad, icpg, is, os);
        const int64_t K = g.rows(), P = g.positions();
        detail::require(weight.numel() == os.c * K, op, "weight " + weight.shape().str() + " does not fit the layer");
        detail::requireBlasDimensions({ K, P, ocpg }, op);
        if constexpr (std::is_same_v<Spec, Conv2d>)
            if (cpu::fast::conv2dIsDense(spec, pad, is, os))
                return cpu::fast::denseConv2dData(gy, weight, gx);
        // Items in bundles where an item has few positions (as weightGradientByItem): one product per bundle, whose
        // columns are then added item by item onto their images.
        const int64_t bundle = bundleOf(P, is.n), wide = bundle * P;
        auto col = detail::allocateWorkspace(K * wide, op);
        auto gathered = detail::allocateWorkspace(bundle > 1 ? ocpg * wide : 1, op);
        for (int64_t n0 = 0; n0 < is.n; n0 += bundle) {
            const int64_t count = std::min(bundle, is.n - n0), width = count * P;
            for (int64_t grp = 0; grp < spec.groups; ++grp) {
                const float* dy = gy.data() + (n0 * os.c + grp * ocpg) * P;
                int64_t ldy = P;
                if (count > 1) {
                    sideBySide(gathered.get(), dy, ocpg, P, count, os.c * P);
                    dy = gathered.get();
                    ldy = width;
                }
                detail::parallelSgemm(
                    true, false, K, width, ocpg, weight.data() + grp * ocpg * K, K, dy, ldy, 0.0f, col.get(), width);
                for (int64_t b = 0; b < count; ++b)
                    columns<true>(g, col.get() + b * P, gx.data() + ((n0 + b) * is.c + grp * icpg) * volume(is), 0, -1,
                        true, width);
            }
        }
    }

    // conv: gw_g += gy_g · colᵀ(x).
    template <typename Spec, typename Pad>
    void convWeights(
        const Tensor& gy, const Tensor& x, const Spec& spec, const Pad& pad, Tensor& gw, Tensor* gb, const char* op)
    {
        const Shape& is = x.shape();
        const Shape& os = gy.shape();
        detail::requireGroups(is.c, os.c, spec.groups, op);
        const int64_t icpg = is.c / spec.groups, ocpg = os.c / spec.groups;
        const Geometry g = geometry(spec, pad, icpg, is, os);
        const int64_t K = g.rows(), P = g.positions();
        detail::require(gw.numel() == os.c * K, op, "weight gradient " + gw.shape().str() + " does not fit the layer");
        detail::requireVector(gb, os.c, op, "bias gradient");
        detail::requireBlasDimensions({ K, P, ocpg }, op);
        if constexpr (std::is_same_v<Spec, Conv2d>)
            if (cpu::fast::conv2dIsDense(spec, pad, is, os)) {
                cpu::fast::denseConv2dWeights(gy, x, gw);
                return biasGrad(gy, gb);
            }
        weightGradient({ g, is.n, spec.groups, ocpg, gy.data(), os.c * P, x.data(), is.c * volume(is), gw.data(), op });
        biasGrad(gy, gb);
    }

    // conv_transpose: gx_g = W_g · col(gy) (data), gw_g += x_g · colᵀ(gy) (weights).
    template <typename Spec, typename Pad>
    void convTransposeGrad(const Tensor& gy, const Tensor* weight, const Tensor* x, const Spec& spec, const Pad& pad,
        Tensor* gx, Tensor* gw, Tensor* gb, const char* op)
    {
        const Shape& is = x ? x->shape() : gx->shape();
        const Shape& os = gy.shape();
        detail::requireGroups(is.c, os.c, spec.groups, op);
        const int64_t icpg = is.c / spec.groups, ocpg = os.c / spec.groups;
        const Geometry g = geometry(spec, pad, ocpg, os, is);
        const int64_t K = g.rows(), P = g.positions();
        detail::require((weight ? weight->numel() : gw->numel()) == is.c * K, op, "the weight does not fit the layer");
        detail::requireVector(gb, os.c, op, "bias gradient");
        detail::requireBlasDimensions({ K, P, icpg }, op);
        if constexpr (std::is_same_v<Spec, ConvTranspose2d>)
            if (cpu::fast::convTranspose2dIsDense(spec, pad, is, os)) {
                if (gx)
                    return cpu::fast::denseConvTranspose2dData(gy, *weight, *gx);
                cpu::fast::denseConvTranspose2dWeights(gy, *x, *gw);
                return biasGrad(gy, gb);
            }
        if (gw) {
            weightGradient(
                { g, is.n, spec.groups, icpg, x->data(), is.c * P, gy.data(), os.c * volume(os), gw->data(), op });
            biasGrad(gy, gb);
            return;
        }
        auto col = detail::allocateWorkspace(K * P, op);
        for (int64_t n = 0; n < is.n; ++n)
            for (int64_t grp = 0; grp < spec.groups; ++grp) {
                columns<false>(g, col.get(), gy.data() + (n * os.c + grp * ocpg) * volume(os));
                detail::parallelSgemm(false, false, icpg, P, K, weight->data() + grp * icpg * K, K, col.get(), P, 0.0f,
                    gx->data() + (n * is.c + grp * icpg) * P, P);
            }
    }

} // namespace

void conv2dData(const Tensor& gy, const Tensor& weight, const Conv2d& spec, const Padding2d& pad, Tensor& gx)
{
    convData(gy, weight, spec, pad, gx, "conv2d backward");
}
void conv2dWeights(const Tensor& gy, const Tensor& x, const Conv2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb)
{
    convWeights(gy, x, spec, pad, gw, gb, "conv2d backward");
}
void convTranspose2dData(
    const Tensor& gy, const Tensor& weight, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gx)
{
    convTransposeGrad(gy, &weight, nullptr, spec, pad, &gx, nullptr, nullptr, "conv_transpose2d backward");
}
void convTranspose2dWeights(
    const Tensor& gy, const Tensor& x, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb)
{
    convTransposeGrad(gy, nullptr, &x, spec, pad, nullptr, &gw, gb, "conv_transpose2d backward");
}
void conv3dData(const Tensor& gy, const Tensor& weight, const Conv3d& spec, const Padding3d& pad, Tensor& gx)
{
    convData(gy, weight, spec, pad, gx, "conv3d backward");
}
void conv3dWeights(const Tensor& gy, const Tensor& x, const Conv3d& spec, const Padding3d& pad, Tensor& gw, Tensor* gb)
{
    convWeights(gy, x, spec, pad, gw, gb, "conv3d backward");
}
void convTranspose3dData(
    const Tensor& gy, const Tensor& weight, const ConvTranspose3d& spec, const Padding3d& pad, Tensor& gx)
{
    convTransposeGrad(gy, &weight, nullptr, spec, pad, &gx, nullptr, nullptr, "conv_transpose3d backward");
}
void convTranspose3dWeights(
    const Tensor& gy, const Tensor& x, const ConvTranspose3d& spec, const Padding3d& pad, Tensor& gw, Tensor* gb)
{
    convTransposeGrad(gy, nullptr, &x, spec, pad, nullptr, &gw, gb, "conv_transpose3d backward");
}

void linearData(const Tensor& gy, const Tensor& weight, Tensor& gx)
{
    // The rows: every position of the leading axes (linear on the last axis of any rank: compute/linear_geometry.h).
    const int64_t out = weight.shape().n, in = weight.shape().c, batch = gy.numel() / std::max<int64_t>(out, 1);
    detail::require(gy.numel() == batch * out && gx.numel() == batch * in, "linear backward",
        "weight " + weight.shape().str() + " does not fit the gradient " + gy.shape().str());
    detail::requireBlasDimensions({ batch, in, out }, "linear backward");
    detail::linearDataProduct(gy.data(), weight.data(), gx.data(), batch, in, out);
}

void linearWeights(const Tensor& gy, const Tensor& x, Tensor& gw, Tensor* gb)
{
    const int64_t out = gw.shape().n, in = gw.shape().c, batch = gy.numel() / std::max<int64_t>(out, 1);
    detail::require(gw.numel() == out * in && x.numel() == batch * in, "linear backward",
        "weight gradient " + gw.shape().str() + " does not fit " + std::to_string(out) + "×" + std::to_string(in));
    detail::requireVector(gb, out, "linear backward", "bias gradient");
    detail::requireBlasDimensions({ batch, in, out }, "linear backward");
    detail::linearWeightsProduct(gy.data(), x.data(), gw.data(), batch, in, out);
    if (gb)
        for (int64_t o = 0; o < out; ++o) {
            double acc = 0;
            for (int64_t n = 0; n < batch; ++n)
                acc += gy.data()[n * out + o];
            gb->data()[o] = static_cast<float>(acc);
        }
}

} // namespace convscope::cpu::grad::fast
