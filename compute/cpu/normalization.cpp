// layer_norm, group_norm and instance_norm on the CPU (compute/normalization.h's plan: `rows` rows of `rowLength`
// contiguous elements, each normalised by its own mean and biased variance, then the element's weight and bias).
// direct:: the readable reference: double sums, two passes (the mean, then the squared deviations), one thread.
// fast:: float data, one pass for the statistics with a stable formula — each chunk of at most kChunk elements of a
// row sums x − K and (x − K)² in double, K its first element (the shifted-data algorithm), and the chunks of a row are
// merged by Chan's rule — then one pass that writes y = (x − mean) · (weight / σ) + bias, the mean subtracted as a
// float and its float remainder so that data far from zero keep their digits; a row of one chunk is written right
// after its statistics, while it is in cache. The chunks
// (fixed in size, so the result does not depend on the thread count) and then the rows are split across the OpenMP
// team, so one long row (group_norm with one group, a small batch) uses every thread too.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <cmath>
#include <vector>

namespace convscope::cpu {

namespace {
    constexpr int64_t kChunk = 16384;

    void checkNorm(const Tensor& in, const Tensor& weight, const Tensor& bias, const NormPlan& p, const Tensor& out)
    {
        detail::requireNonEmpty(in, out, "normalization");
        detail::require(in.numel() == out.numel() && in.numel() == p.rows * p.rowLength, "normalization",
            "the input has " + std::to_string(in.numel()) + " elements, the plan " + std::to_string(p.rows)
                + " rows of " + std::to_string(p.rowLength));
        const int64_t params = p.groups * (p.rowLength / p.inner);
        detail::require(weight.numel() == params && bias.numel() == params, "normalization",
            "weight and bias must hold " + std::to_string(params) + " values, got " + std::to_string(weight.numel())
                + " and " + std::to_string(bias.numel()));
    }

    struct Moments {
        double count = 0, mean = 0, m2 = 0; // m2: the sum of squared deviations from the mean
    };

    // kLanes independent sums, so that the loop vectorises and its additions overlap (one chain of double
    // additions ran at a quarter of the memory's speed); fixed lanes keep the result independent of the threads.
    constexpr int kLanes = 8;

    Moments chunkMoments(const float* x, int64_t n)
    {
        const double k = x[0];
        double s1[kLanes] = {}, s2[kLanes] = {};
        int64_t i = 0;
        for (; i + kLanes <= n; i += kLanes)
            for (int l = 0; l < kLanes; ++l) {
                const double d = double(x[i + l]) - k;
                s1[l] += d;
                s2[l] += d * d;
            }
        for (; i < n; ++i) {
            const double d = double(x[i]) - k;
            s1[0] += d;
            s2[0] += d * d;
        }
        double t1 = 0, t2 = 0;
        for (int l = 0; l < kLanes; ++l) {
            t1 += s1[l];
            t2 += s2[l];
        }
        return { double(n), k + t1 / double(n), std::max(t2 - t1 * t1 / double(n), 0.0) };
    }

    // Chan, Golub and LeVeque's pairwise update.
    Moments merge(const Moments& a, const Moments& b)
    {
        if (a.count == 0)
            return b;
        const double n = a.count + b.count, delta = b.mean - a.mean;
        return { n, a.mean + delta * b.count / n, a.m2 + b.m2 + delta * delta * a.count * b.count / n };
    }
} // namespace

void direct::normalization(const Tensor& in, const Tensor& weight, const Tensor& bias, const NormPlan& p, Tensor& out)
{
    checkNorm(in, weight, bias, p, out);
    const int64_t len = p.rowLength;
    for (int64_t r = 0; r < p.rows; ++r) {
        const float* x = in.data() + r * len;
        float* y = out.data() + r * len;
        double sum = 0;
        for (int64_t j = 0; j < len; ++j)
            sum += x[j];
        const double mean = sum / double(len);
        double squares = 0;
        for (int64_t j = 0; j < len; ++j)
            squares += (x[j] - mean) * (x[j] - mean);
        const double var = squares / double(len); // biased, as PyTorch normalises
        const double rstd = 1.0 / std::sqrt(var + p.eps);
        for (int64_t j = 0; j < len; ++j) {
            const int64_t k = p.paramIndex(r, j);
            y[j] = float((x[j] - mean) * rstd * double(weight.data()[k]) + double(bias.data()[k]));
        }
    }
}

namespace {
    // The mean as a float and the float of what that misses (hi + lo): x − hi is exact for the x near the mean
    // (Sterbenz), so data far from zero (a mean of 1000, a spread of 1) keep their digits.
    struct RowScale {
        float hi, lo, rstd;
    };

    RowScale rowScale(const Moments& m, int64_t len, double eps)
    {
        const float hi = float(m.mean);
        return { hi, float(m.mean - double(hi)), float(1.0 / std::sqrt(m.m2 / double(len) + eps)) };
    }

    // Writes elements [start, end) of row r.
    void writeRow(const Tensor& in, const Tensor& weight, const Tensor& bias, const NormPlan& p, int64_t r,
        int64_t start, int64_t end, const RowScale& rs, Tensor& out)
    {
        const float* x = in.data() + r * p.rowLength;
        float* y = out.data() + r * p.rowLength;
        const float hi = rs.hi, lo = rs.lo, s = rs.rstd;
        const float* w = weight.data() + p.paramIndex(r, 0);
        const float* b = bias.data() + p.paramIndex(r, 0);
        if (p.inner == 1) { // layer_norm: a parameter per element
            for (int64_t j = start; j < end; ++j)
                y[j] = ((x[j] - hi) - lo) * s * w[j] + b[j];
            return;
        }
        for (int64_t j = start; j < end;) { // group_norm, instance_norm: a parameter per channel, `inner` long
            const int64_t k = j / p.inner, stop = std::min(end, (k + 1) * p.inner);
            const float a = s * w[k], c = b[k];
            for (; j < stop; ++j)
                y[j] = ((x[j] - hi) - lo) * a + c;
        }
    }
} // namespace

void fast::normalization(const Tensor& in, const Tensor& weight, const Tensor& bias, const NormPlan& p, Tensor& out)
{
    checkNorm(in, weight, bias, p, out);
    const int64_t len = p.rowLength;
    const int64_t chunks = (len + kChunk - 1) / kChunk, pieces = p.rows * chunks;
    const bool parallel = in.numel() >= detail::kMinParallelElements;
    if (chunks == 1) { // rows of one chunk: the row's statistics, then its output while it is in cache
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t r = 0; r < p.rows; ++r)
            writeRow(in, weight, bias, p, r, 0, len, rowScale(chunkMoments(in.data() + r * len, len), len, p.eps), out);
        return;
    }
    std::vector<Moments> partial(static_cast<size_t>(pieces));
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < pieces; ++i) {
        const int64_t r = i / chunks, c = i % chunks, start = c * kChunk;
        partial[size_t(i)] = chunkMoments(in.data() + r * len + start, std::min(kChunk, len - start));
    }
    std::vector<RowScale> scale(static_cast<size_t>(p.rows));
    for (int64_t r = 0; r < p.rows; ++r) {
        Moments m;
        for (int64_t c = 0; c < chunks; ++c)
            m = merge(m, partial[size_t(r * chunks + c)]);
        scale[size_t(r)] = rowScale(m, len, p.eps);
    }
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < pieces; ++i) {
        const int64_t r = i / chunks, start = (i % chunks) * kChunk;
        writeRow(in, weight, bias, p, r, start, std::min(len, start + kChunk), scale[size_t(r)], out);
    }
}

} // namespace convscope::cpu
