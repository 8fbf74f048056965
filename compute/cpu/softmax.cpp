// softmax and log_softmax along any axis: for every position of the other axes, with m the largest x along the axis,
// out = e^(x − m) / Σ e^(x − m) (softmax) or x − m − log Σ e^(x − m) (log_softmax), PyTorch's formulas. Subtracting m
// changes nothing mathematically but keeps e^x from overflowing (logits of 100 would otherwise give inf / inf = NaN).
// The tensor is viewed as [outer, size, inner] around the axis (compute/reduce.h): the size values of one row are
// `inner` apart in memory (1 when the axis is the last).
// direct:: in double, one thread. fast:: in float. An innermost axis (inner = 1) is one row per iteration, three passes
// over the row while it is in cache (max, exponentials, quotient). Another axis goes over blocks of neighbouring inner
// positions split across OpenMP threads, each pass walking the axis over a block's contiguous floats (one position at
// a time read one float per `inner` stride: 1.8 s for a 256 MiB tensor on 2 cores). Where the CPU has AVX-512
// (softmax_avx512.cpp) the exponentials are 16 at a time (std::exp stays scalar without -ffast-math) and a block of
// up to 1024 positions takes two passes: the running maximum and sum together (the online softmax), then the outputs,
// asking for the rows ahead (without, half the speed on 2 cores); elsewhere blocks of 256 take three passes (max,
// e^(x − m) and its sum, the quotient). An output larger than the caches is written with non-temporal stores
// (stream_store.h).
#include "compute/cpu/conv2d_tap_avx512.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"
#include "compute/cpu/softmax_avx512.h"
#include "compute/cpu/stream_store.h"
#include "compute/reduce.h"

#include <algorithm>
#include <cmath>

namespace convscope::cpu {

namespace {

    template <typename Real> void softmaxAt(const float* src, float* dst, int64_t channels, int64_t stride, bool log)
    {
        Real largest = src[0];
        for (int64_t c = 1; c < channels; ++c)
            largest = std::max<Real>(largest, src[c * stride]);
        Real sum = 0;
        for (int64_t c = 0; c < channels; ++c)
            sum += std::exp(Real(src[c * stride]) - largest);
        if (log) { // (x − m) − log Σ, PyTorch's order
            const Real logSum = std::log(sum);
            for (int64_t c = 0; c < channels; ++c)
                dst[c * stride] = static_cast<float>((Real(src[c * stride]) - largest) - logSum);
        } else {
            for (int64_t c = 0; c < channels; ++c)
                dst[c * stride] = static_cast<float>(std::exp(Real(src[c * stride]) - largest) / sum);
        }
    }

    AxisView checkSoftmax(const Tensor& in, int64_t axis, const Tensor& out)
    {
        detail::requireNonEmpty(in, out, "softmax");
        detail::require(in.shape() == out.shape(), "softmax", "output shape differs from the input's");
        const std::vector<int64_t> dims = in.shape().dims();
        detail::require(axis >= 0 && axis < int64_t(dims.size()), "softmax", "axis out of range");
        return axisView(dims, axis);
    }

} // namespace

void direct::softmax(const Tensor& in, Tensor& out, int64_t axis, bool log)
{
    const AxisView v = checkSoftmax(in, axis, out);
    for (int64_t o = 0; o < v.outer; ++o)
        for (int64_t p = 0; p < v.inner; ++p) {
            const int64_t base = o * v.size * v.inner + p;
            softmaxAt<double>(in.data() + base, out.data() + base, v.size, v.inner, log);
        }
}

void fast::softmax(const Tensor& in, Tensor& out, int64_t axis, bool log)
{
    const AxisView v = checkSoftmax(in, axis, out);
    const bool avx512 = avx512::haveAvx512(); // vector exponentials (softmax_avx512.cpp)
    const bool parallel = in.numel() >= detail::kMinParallelElements, stream = detail::streamOutput(out.numel());
    if (v.inner == 1) {
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t o = 0; o < v.outer; ++o) {
            if (avx512)
                avx512::softmaxRow(in.data() + o * v.size, out.data() + o * v.size, v.size, log, stream);
            else
                softmaxAt<float>(in.data() + o * v.size, out.data() + o * v.size, v.size, 1, log);
        }
        return;
    }
    if (avx512) { // blocks of kColumns neighbouring positions, two passes each (softmaxColumns)
        constexpr int64_t kColumns = 1024; // 256 was slower on 2 cores, 4096 no faster
        const int64_t blocks = (v.inner + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t i = 0; i < v.outer * blocks; ++i) {
            const int64_t o = i / blocks, p0 = (i % blocks) * kColumns, offset = o * v.size * v.inner + p0;
            alignas(64) float scratch[2 * kColumns];
            avx512::softmaxColumns(in.data() + offset, out.data() + offset, v.size, v.inner,
                std::min(kColumns, v.inner - p0), log, stream, scratch);
        }
        return;
    }
    constexpr int64_t kBlock = 256;
    const int64_t blocks = (v.inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < v.outer * blocks; ++i) {
        const int64_t o = i / blocks, p0 = (i % blocks) * kBlock, count = std::min(kBlock, v.inner - p0);
        const float* x = in.data() + o * v.size * v.inner + p0;
        float* y = out.data() + o * v.size * v.inner + p0;
        float largest[kBlock], sum[kBlock];
        std::copy(x, x + count, largest);
        for (int64_t c = 1; c < v.size; ++c)
            for (int64_t p = 0; p < count; ++p)
                largest[p] = std::max(largest[p], x[c * v.inner + p]);
        std::fill(sum, sum + count, 0.0f);
        for (int64_t c = 0; c < v.size; ++c)
            for (int64_t p = 0; p < count; ++p) {
                const float e = std::exp(x[c * v.inner + p] - largest[p]);
                if (!log)
                    y[c * v.inner + p] = e;
                sum[p] += e;
            }
        if (log) {
            for (int64_t p = 0; p < count; ++p)
                sum[p] = std::log(sum[p]);
            for (int64_t c = 0; c < v.size; ++c)
                for (int64_t p = 0; p < count; ++p)
                    y[c * v.inner + p] = (x[c * v.inner + p] - largest[p]) - sum[p];
        } else {
            for (int64_t c = 0; c < v.size; ++c)
                for (int64_t p = 0; p < count; ++p)
                    y[c * v.inner + p] /= sum[p];
        }
    }
}

} // namespace convscope::cpu
