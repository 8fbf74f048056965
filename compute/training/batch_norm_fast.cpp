// Batch norm in training mode on the fast CPU path (cpu.im2col_gemm and onednn.auto's training: cpu_backward_ops.h's
// batchNorm2dTrainForward, batchNorm2dData and batchNorm2dWeights with parallel = true). The reference path
// (norm_activation_backward.cpp) walks one channel per thread with double arithmetic on every element; on ResNet-18
// that made batch norm as slow as all the convolutions together. Here:
//   - the work is split over (channel, image) planes, so a layer with few channels still fills the cores;
//   - each plane's sums run in float over 16 independent lanes (which the compiler vectorises without reassociating
//     anything) inside chunks of 1024 elements, each chunk added in double; the planes' partials are then added per
//     channel in image order, so the result does not depend on the thread count;
//   - the element-wise passes are one float FMA per element, their per-channel coefficients computed in double.
// The rounding differs from the reference's by a few float ulps (the tests hold the fast path to the reference).
#include "compute/training/batch_norm_fast.h"
#include "compute/cpu/op_common.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace convscope::cpu::grad::fast_bn {

namespace {
    constexpr int kLanes = 16;
    constexpr int64_t kChunk = 1024;

    // Σ f(i) over [0, n) in float lanes inside chunks, the chunks in double.
    template <typename F> double chunkedSum(int64_t n, F f)
    {
        double total = 0;
        for (int64_t start = 0; start < n; start += kChunk) {
            const int64_t len = std::min(kChunk, n - start);
            float lane[kLanes] = {};
            int64_t i = 0;
            for (; i + kLanes <= len; i += kLanes)
                for (int k = 0; k < kLanes; ++k)
                    lane[k] += f(start + i + k);
            float tail = 0;
            for (; i < len; ++i)
                tail += f(start + i);
            double chunk = tail;
            for (int k = 0; k < kLanes; ++k)
                chunk += lane[k];
            total += chunk;
        }
        return total;
    }

    // Σ of `plane(c, n)` over the images of each channel: the (channel, image) planes in parallel, then added per
    // channel in image order.
    template <typename F> std::vector<double> perChannel(const Planes& p, int parts, F plane)
    {
        std::vector<double> partial(size_t(p.channels * p.batch * parts), 0.0);
        const bool threads = p.channels * p.batch * p.area >= detail::kMinParallelElements;
#pragma omp parallel for collapse(2) schedule(static) if (threads)
        for (int64_t c = 0; c < p.channels; ++c)
            for (int64_t n = 0; n < p.batch; ++n)
                plane(c, n, &partial[size_t((c * p.batch + n) * parts)]);
        std::vector<double> sums(size_t(p.channels * parts), 0.0);
        for (int64_t c = 0; c < p.channels; ++c)
            for (int64_t n = 0; n < p.batch; ++n)
                for (int k = 0; k < parts; ++k)
                    sums[size_t(c * parts + k)] += partial[size_t((c * p.batch + n) * parts + k)];
        return sums;
    }

    // out = a·u + b·(v − m) + d (WithU) or b·(v − m) + d over every (channel, image) plane, the coefficients per
    // channel.
    struct Affine {
        float a = 0, b = 0, m = 0, d = 0;
    };
    template <bool WithU>
    void planes(const Planes& p, const std::vector<Affine>& k, const float* u, const float* v, float* out)
    {
        const bool threads = p.channels * p.batch * p.area >= detail::kMinParallelElements;
#pragma omp parallel for collapse(2) schedule(static) if (threads)
        for (int64_t n = 0; n < p.batch; ++n)
            for (int64_t c = 0; c < p.channels; ++c) {
                const int64_t base = (n * p.channels + c) * p.area;
                const Affine f = k[size_t(c)];
                const float* up = u + base;
                const float* vp = v + base;
                float* o = out + base;
                for (int64_t i = 0; i < p.area; ++i) {
                    if constexpr (WithU)
                        o[i] = f.a * up[i] + f.b * (vp[i] - f.m) + f.d;
                    else
                        o[i] = f.b * (vp[i] - f.m) + f.d;
                }
            }
    }
} // namespace

void trainForward(const Planes& p, const float* x, const float* weight, const float* bias, double eps, double momentum,
    float* runningMean, float* runningVar, float* y, BatchStats& stats)
{
    const double count = double(p.batch * p.area);
    const auto plane = [&](int64_t c, int64_t n) { return x + (n * p.channels + c) * p.area; };
    const std::vector<double> sums = perChannel(p, 1, [&](int64_t c, int64_t n, double* out) {
        const float* src = plane(c, n);
        out[0] = chunkedSum(p.area, [&](int64_t i) { return src[i]; });
    });
    std::vector<float> meanF(size_t(p.channels));
    for (int64_t c = 0; c < p.channels; ++c)
        meanF[size_t(c)] = static_cast<float>(sums[size_t(c)] / count);
    // The squares about the float mean, then corrected to the double mean: Σ(x − m)² − count·(mean − m)².
    const std::vector<double> squares = perChannel(p, 1, [&](int64_t c, int64_t n, double* out) {
        const float* src = plane(c, n);
        const float m = meanF[size_t(c)];
        out[0] = chunkedSum(p.area, [&](int64_t i) { return (src[i] - m) * (src[i] - m); });
    });
    stats.mean.assign(size_t(p.channels), 0.0);
    stats.invstd.assign(size_t(p.channels), 0.0);
    std::vector<Affine> k(size_t(p.channels));
    for (int64_t c = 0; c < p.channels; ++c) {
        const double mean = sums[size_t(c)] / count;
        const double shift = mean - double(meanF[size_t(c)]);
        const double ss = std::max(0.0, squares[size_t(c)] - count * shift * shift);
        const double invstd = 1.0 / std::sqrt(ss / count + eps);
        stats.mean[size_t(c)] = mean;
        stats.invstd[size_t(c)] = invstd;
        const double w = weight ? weight[c] : 1.0, b = bias ? bias[c] : 0.0;
        // y = (x − mean)·invstd·w + b = (x − m)·scale + (b − (mean − m)·scale)
        const double scale = invstd * w;
        k[size_t(c)] = { 0.0f, static_cast<float>(scale), meanF[size_t(c)], static_cast<float>(b - shift * scale) };
        runningMean[c] = static_cast<float>((1 - momentum) * runningMean[c] + momentum * mean);
        runningVar[c] = static_cast<float>((1 - momentum) * runningVar[c] + momentum * ss / (count - 1));
    }
    planes<false>(p, k, x, x, y);
}

std::vector<double> gradientSums(const Planes& p, const float* gy, const float* x, const BatchStats& stats)
{
    std::vector<float> meanF(size_t(p.channels));
    for (int64_t c = 0; c < p.channels; ++c)
        meanF[size_t(c)] = static_cast<float>(stats.mean[size_t(c)]);
    std::vector<double> sums = perChannel(p, 2, [&](int64_t c, int64_t n, double* out) {
        const int64_t base = (n * p.channels + c) * p.area;
        const float* g = gy + base;
        const float* src = x + base;
        const float m = meanF[size_t(c)];
        out[0] = chunkedSum(p.area, [&](int64_t i) { return g[i]; });
        out[1] = chunkedSum(p.area, [&](int64_t i) { return g[i] * (src[i] - m); });
    });
    // Σ gy·(x − mean) = Σ gy·(x − m) − (mean − m)·Σ gy; times invstd: Σ gy·x̂.
    for (int64_t c = 0; c < p.channels; ++c) {
        const double shift = stats.mean[size_t(c)] - double(meanF[size_t(c)]);
        sums[size_t(2 * c + 1)] = (sums[size_t(2 * c + 1)] - shift * sums[size_t(2 * c)]) * stats.invstd[size_t(c)];
    }
    return sums;
}

void data(const Planes& p, const float* gy, const float* x, const float* weight, const BatchStats& stats,
    const std::vector<double>& sums, float* gx)
{
    const double count = double(p.batch * p.area);
    std::vector<Affine> k(size_t(p.channels));
    for (int64_t c = 0; c < p.channels; ++c) {
        const double sum = sums[size_t(2 * c)], dot = sums[size_t(2 * c + 1)];
        const double invstd = stats.invstd[size_t(c)], mean = stats.mean[size_t(c)];
        const double scale = (weight ? weight[c] : 1.0) * invstd;
        // gx = scale·(gy − sum/count − x̂·dot/count), x̂ = (x − mean)·invstd; about the float mean m.
        const float m = static_cast<float>(mean);
        const double b = -scale * invstd * dot / count;
        k[size_t(c)] = { static_cast<float>(scale), static_cast<float>(b), m,
            static_cast<float>(-scale * sum / count + b * (double(m) - mean)) };
    }
    planes<true>(p, k, gy, x, gx);
}

} // namespace convscope::cpu::grad::fast_bn
