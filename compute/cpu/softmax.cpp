// softmax over dim 1: for every image and every pixel, out[c] = e^(x[c] − m) / Σ_k e^(x[k] − m), with m the
// largest x[k]. Subtracting m changes nothing mathematically but keeps e^x from overflowing (logits of
// 100 would otherwise give inf / inf = NaN). For a flat input [N, F] the "pixel" is the single one and dim 1
// is the features; for [N, C, H, W] the C values of one pixel are H·W apart in memory.
// direct:: in double, one thread. fast:: in float over blocks of 64 neighbouring pixels split across OpenMP threads:
// each pass (max, sum of exponentials, quotient) walks the channels over a block's 64 contiguous floats, where one
// pixel at a time read one float per H·W stride (1.8 s for a 256 MiB tensor on 2 cores; a flat [N, F] input is one
// block per row).
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <algorithm>
#include <cmath>

namespace convscope::cpu {

namespace {

    template <typename Real> void softmaxAt(const float* src, float* dst, int64_t channels, int64_t stride)
    {
        Real largest = src[0];
        for (int64_t c = 1; c < channels; ++c)
            largest = std::max<Real>(largest, src[c * stride]);
        Real sum = 0;
        for (int64_t c = 0; c < channels; ++c)
            sum += std::exp(Real(src[c * stride]) - largest);
        for (int64_t c = 0; c < channels; ++c)
            dst[c * stride] = static_cast<float>(std::exp(Real(src[c * stride]) - largest) / sum);
    }

    void checkSoftmax(const Tensor& in, const Tensor& out)
    {
        detail::requireNonEmpty(in, out, "softmax");
        detail::require(in.shape().n == out.shape().n && in.shape().c == out.shape().c && in.numel() == out.numel(),
            "softmax", "output shape differs from the input's");
    }

} // namespace

void direct::softmax(const Tensor& in, Tensor& out)
{
    checkSoftmax(in, out);
    const Shape& s = in.shape();
    const int64_t area = s.d * s.h * s.w; // over channels at every (d,) h, w position; d == 1 for images
    for (int64_t n = 0; n < s.n; ++n)
        for (int64_t p = 0; p < area; ++p)
            softmaxAt<double>(in.data() + n * s.c * area + p, out.data() + n * s.c * area + p, s.c, area);
}

void fast::softmax(const Tensor& in, Tensor& out)
{
    checkSoftmax(in, out);
    const Shape& s = in.shape();
    const int64_t area = s.d * s.h * s.w; // over channels at every (d,) h, w position; d == 1 for images
    if (area == 1) {
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
        for (int64_t n = 0; n < s.n; ++n)
            softmaxAt<float>(in.data() + n * s.c, out.data() + n * s.c, s.c, 1);
        return;
    }
    constexpr int64_t kBlock = 64;
    const int64_t blocks = (area + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
    for (int64_t i = 0; i < s.n * blocks; ++i) {
        const int64_t n = i / blocks, p0 = (i % blocks) * kBlock, count = std::min(kBlock, area - p0);
        const float* x = in.data() + n * s.c * area + p0;
        float* y = out.data() + n * s.c * area + p0;
        float largest[kBlock], sum[kBlock];
        std::copy(x, x + count, largest);
        for (int64_t c = 1; c < s.c; ++c)
            for (int64_t p = 0; p < count; ++p)
                largest[p] = std::max(largest[p], x[c * area + p]);
        std::fill(sum, sum + count, 0.0f);
        for (int64_t c = 0; c < s.c; ++c)
            for (int64_t p = 0; p < count; ++p) {
                const float e = std::exp(x[c * area + p] - largest[p]);
                y[c * area + p] = e;
                sum[p] += e;
            }
        for (int64_t c = 0; c < s.c; ++c)
            for (int64_t p = 0; p < count; ++p)
                y[c * area + p] /= sum[p];
    }
}

} // namespace convscope::cpu
