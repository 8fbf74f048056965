// layer_norm, group_norm and instance_norm on the CPU (compute/normalization.h's plan: `rows` rows of `rowLength`
// contiguous elements, each normalised by its own mean and biased variance, then the element's weight and bias).
// direct:: the readable reference: double sums, two passes (the mean, then the squared deviations), one thread.
// fast:: float data, one pass for the statistics with a stable formula — each chunk of at most kChunk elements of a
// row sums x − K and (x − K)² in double, K its first element (the shifted-data algorithm), and the chunks of a row are
// merged by Chan's rule — then one pass that writes y = (x − mean) · (weight / σ) + bias, the mean subtracted as a
// float and its float remainder so that data far from zero keep their digits; a row of one chunk is written right
// after its statistics, while it is in cache, and so is a longer row (group_norm's) when there are rows enough for
// every thread. Otherwise the chunks (fixed in size, so the result does not depend on the thread count) and then the
// rows are split across the OpenMP team, so one long row (group_norm with one group, a small batch) uses every thread
// too. An output larger than the caches is written with non-temporal stores (stream_store.h).
#include "compute/cpu/conv2d_tap_avx512.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/normalization_avx512.h"
#include "compute/cpu/op_common.h"
#include "compute/cpu/stream_store.h"

#include <cmath>
#include <omp.h>
#include <vector>
#include <xmmintrin.h>

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
        int64_t i
            = fast::avx512::haveAvx512() ? fast::avx512::normSums(x, n, k, s1, s2) : 0; // the same sums, 16 at a time
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

    // y[j] = ((x[j] − hi) − lo) · s · w[j] + b[j] (layer_norm, perElement) or ((x[j] − hi) − lo) · a + c (a channel
    // of group_norm or instance_norm) for j < n; `stream`: 4 at a time with non-temporal stores (SSE2, every x86-64),
    // the same operations in the same order.
    template <bool perElement>
    void normSpan(const float* x, float* y, int64_t n, const RowScale& rs, const float* w, const float* b, float a,
        float c, bool stream)
    {
        const float hi = rs.hi, lo = rs.lo, s = rs.rstd;
        auto one = [&](int64_t j) {
            if constexpr (perElement)
                y[j] = ((x[j] - hi) - lo) * s * w[j] + b[j];
            else
                y[j] = ((x[j] - hi) - lo) * a + c;
        };
        if (fast::avx512::haveAvx512()) { // the same operations, 16 at a time
            fast::avx512::normWrite(x, y, n, hi, lo, s, w, b, a, c, stream);
            return;
        }
        int64_t j = 0;
        if (stream) {
            for (; j < n && (reinterpret_cast<uintptr_t>(y + j) & 15) != 0; ++j)
                one(j);
            const __m128 vh = _mm_set1_ps(hi), vl = _mm_set1_ps(lo), vs = _mm_set1_ps(s), va = _mm_set1_ps(a),
                         vc = _mm_set1_ps(c);
            for (; j + 4 <= n; j += 4) {
                const __m128 d = _mm_sub_ps(_mm_sub_ps(_mm_loadu_ps(x + j), vh), vl);
                if constexpr (perElement)
                    _mm_stream_ps(
                        y + j, _mm_add_ps(_mm_mul_ps(_mm_mul_ps(d, vs), _mm_loadu_ps(w + j)), _mm_loadu_ps(b + j)));
                else
                    _mm_stream_ps(y + j, _mm_add_ps(_mm_mul_ps(d, va), vc));
            }
        }
        for (; j < n; ++j)
            one(j);
    }

    // Writes elements [start, end) of row r.
    void writeRow(const Tensor& in, const Tensor& weight, const Tensor& bias, const NormPlan& p, int64_t r,
        int64_t start, int64_t end, const RowScale& rs, Tensor& out, bool stream)
    {
        const float* x = in.data() + r * p.rowLength;
        float* y = out.data() + r * p.rowLength;
        const float* w = weight.data() + p.paramIndex(r, 0);
        const float* b = bias.data() + p.paramIndex(r, 0);
        if (p.inner == 1) { // layer_norm: a parameter per element
            normSpan<true>(x + start, y + start, end - start, rs, w + start, b + start, 0, 0, stream);
            return;
        }
        for (int64_t j = start; j < end;) { // group_norm, instance_norm: a parameter per channel, `inner` long
            const int64_t k = j / p.inner, stop = std::min(end, (k + 1) * p.inner);
            normSpan<false>(x + j, y + j, stop - j, rs, nullptr, nullptr, rs.rstd * w[k], b[k], stream);
            j = stop;
        }
    }

    Moments rowMoments(const float* x, int64_t len, int64_t chunks)
    {
        Moments m;
        for (int64_t c = 0; c < chunks; ++c)
            m = merge(m, chunkMoments(x + c * kChunk, std::min(kChunk, len - c * kChunk)));
        return m;
    }
} // namespace

void fast::normalization(const Tensor& in, const Tensor& weight, const Tensor& bias, const NormPlan& p, Tensor& out)
{
    checkNorm(in, weight, bias, p, out);
    const int64_t len = p.rowLength;
    const int64_t chunks = (len + kChunk - 1) / kChunk, pieces = p.rows * chunks;
    const bool parallel = in.numel() >= detail::kMinParallelElements, stream = detail::streamOutput(out.numel());
    if (chunks == 1 || p.rows >= 4 * int64_t(omp_get_max_threads())) {
        // Enough rows for every thread: each row's statistics (its chunks merged in order, as below), then its output
        // while the row is still in cache (2 reads of the input from memory otherwise, and a third of the time).
#pragma omp parallel if (parallel)
        {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < p.rows; ++r)
                writeRow(in, weight, bias, p, r, 0, len,
                    rowScale(rowMoments(in.data() + r * len, len, chunks), len, p.eps), out, stream);
            if (stream)
                _mm_sfence();
        }
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
#pragma omp parallel if (parallel)
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < pieces; ++i) {
            const int64_t r = i / chunks, start = (i % chunks) * kChunk;
            writeRow(in, weight, bias, p, r, start, std::min(len, start + kChunk), scale[size_t(r)], out, stream);
        }
        if (stream)
            _mm_sfence();
    }
}

} // namespace convscope::cpu
