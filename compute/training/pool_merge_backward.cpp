// The backward of the pools, softmax, the merges (add's copy, mul, concat), pad and dropout, and the helpers the
// training session sums gradients with. The window rules are the forward's (compute/cpu/maxpool2d.cpp,
// avgpool2d.cpp, pad.cpp), so a gradient goes exactly where the forward read.
#include "compute/training/cpu_backward_ops.h"

#include "compute/cpu/op_common.h"
#include "compute/training/training.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace convscope::cpu::grad {

void maxPool2d(
    const Tensor& gy, const Tensor& x, const MaxPool2d& spec, const Padding2d& pad, Tensor& gx, bool parallel)
{
    const Shape& is = x.shape();
    const Shape& os = gy.shape();
    detail::require(gx.shape() == is && os.n == is.n && os.c == is.c, "maxpool2d backward",
        "gradient shapes do not match the input " + is.str());
    const auto [sh, sw] = spec.effectiveStride();
    const int64_t dh = spec.dilation[0], dw = spec.dilation[1];
    gx.fill(0.0f);
    const int64_t planes = is.n * is.c;
#pragma omp parallel for schedule(static) if (parallel && x.numel() >= detail::kMinParallelElements)
    for (int64_t plane = 0; plane < planes; ++plane) {
        const float* src = x.data() + plane * is.h * is.w;
        const float* g = gy.data() + plane * os.h * os.w;
        float* dst = gx.data() + plane * is.h * is.w;
        for (int64_t oh = 0; oh < os.h; ++oh) {
            int64_t hStart = oh * sh - pad.top;
            const int64_t hEnd = std::min(hStart + (spec.kernel_size[0] - 1) * dh + 1, is.h);
            while (hStart < 0)
                hStart += dh;
            for (int64_t ow = 0; ow < os.w; ++ow) {
                int64_t wStart = ow * sw - pad.left;
                const int64_t wEnd = std::min(wStart + (spec.kernel_size[1] - 1) * dw + 1, is.w);
                while (wStart < 0)
                    wStart += dw;
                // PyTorch's CPU kernel: the index starts at the window's first tap and moves on a larger value or a
                // NaN (max_pool2d_with_indices, `(val > maxval) || std::isnan(val)`).
                int64_t arg = hStart * is.w + wStart;
                float best = -std::numeric_limits<float>::infinity();
                for (int64_t ih = hStart; ih < hEnd; ih += dh)
                    for (int64_t iw = wStart; iw < wEnd; iw += dw) {
                        const float v = src[ih * is.w + iw];
                        if (v > best || std::isnan(v)) {
                            best = v;
                            arg = ih * is.w + iw;
                        }
                    }
                if (hStart < hEnd && wStart < wEnd)
                    dst[arg] += g[oh * os.w + ow];
            }
        }
    }
}

void avgPool2d(const Tensor& gy, const AvgPool2d& spec, const Padding2d& pad, Tensor& gx, bool parallel)
{
    const Shape& is = gx.shape();
    const Shape& os = gy.shape();
    detail::require(os.n == is.n && os.c == is.c, "avgpool2d backward", "gradient shapes do not match");
    const auto [sh, sw] = spec.effectiveStride();
    const int64_t kh = spec.kernel_size[0], kw = spec.kernel_size[1];
    gx.fill(0.0f);
    const int64_t planes = is.n * is.c;
#pragma omp parallel for schedule(static) if (parallel && gx.numel() >= detail::kMinParallelElements)
    for (int64_t plane = 0; plane < planes; ++plane) {
        const float* g = gy.data() + plane * os.h * os.w;
        float* dst = gx.data() + plane * is.h * is.w;
        for (int64_t oh = 0; oh < os.h; ++oh)
            for (int64_t ow = 0; ow < os.w; ++ow) {
                // The forward's divisor rule (avgpool2d.cpp): the window clipped to the padded input, then to the
                // real one.
                int64_t hStart = oh * sh - pad.top, wStart = ow * sw - pad.left;
                int64_t hEnd = std::min(hStart + kh, is.h + pad.bottom), wEnd = std::min(wStart + kw, is.w + pad.right);
                const int64_t poolSize = (hEnd - hStart) * (wEnd - wStart);
                hStart = std::max<int64_t>(hStart, 0);
                wStart = std::max<int64_t>(wStart, 0);
                hEnd = std::min(hEnd, is.h);
                wEnd = std::min(wEnd, is.w);
                if (hStart >= hEnd || wStart >= wEnd)
                    continue;
                const int64_t divisor = spec.divisor_override ? *spec.divisor_override
                    : spec.count_include_pad                  ? poolSize
                                                              : (hEnd - hStart) * (wEnd - wStart);
                const double share = double(g[oh * os.w + ow]) / double(divisor);
                for (int64_t ih = hStart; ih < hEnd; ++ih)
                    for (int64_t iw = wStart; iw < wEnd; ++iw)
                        dst[ih * is.w + iw] = static_cast<float>(dst[ih * is.w + iw] + share);
            }
    }
}

void globalAvgPool2d(const Tensor& gy, Tensor& gx)
{
    const Shape& is = gx.shape();
    const int64_t area = is.d * is.h * is.w;
    detail::require(gy.numel() == is.n * is.c, "global_avgpool2d backward", "gradient shapes do not match");
    for (int64_t plane = 0; plane < is.n * is.c; ++plane) {
        const float share = static_cast<float>(double(gy.data()[plane]) / double(area));
        std::fill(gx.data() + plane * area, gx.data() + (plane + 1) * area, share);
    }
}

void mulInput(const Tensor& gy, const Tensor& other, Tensor& gx)
{
    const Shape& o = gy.shape();
    const int64_t planes = o.n * o.c, area = o.d * o.h * o.w;
    const bool otherGate = other.numel() == planes && area > 1;
    const bool selfGate = gx.numel() == planes && area > 1;
    detail::require((otherGate || other.numel() == gy.numel()) && (selfGate || gx.numel() == gy.numel()),
        "mul backward", "the factors do not fit the gradient " + o.str());
    for (int64_t p = 0; p < planes; ++p) {
        double sum = 0;
        for (int64_t j = 0; j < area; ++j) {
            const double v
                = double(gy.data()[p * area + j]) * (otherGate ? other.data()[p] : other.data()[p * area + j]);
            if (selfGate)
                sum += v;
            else
                gx.data()[p * area + j] = static_cast<float>(v);
        }
        if (selfGate)
            gx.data()[p] = static_cast<float>(sum);
    }
}

void concatInput(const Tensor& gy, int64_t offset, Tensor& gx)
{
    const Shape& o = gy.shape();
    const Shape& s = gx.shape();
    const int64_t area = s.d * s.h * s.w;
    detail::require(offset + s.c <= o.c && o.n == s.n, "concat backward", "input " + s.str() + " is not in " + o.str());
    for (int64_t n = 0; n < s.n; ++n)
        std::memcpy(
            gx.data() + n * s.c * area, gy.data() + (n * o.c + offset) * area, size_t(s.c * area) * sizeof(float));
}

void pad(const Tensor& gy, const Pad& spec, Tensor& gx)
{
    const Shape& s = gx.shape();
    const Shape& o = gy.shape();
    const auto& p = spec.padding;
    detail::require(o.h == s.h + p[0] + p[1] && o.w == s.w + p[2] + p[3], "pad backward", "shapes do not match");
    const auto source = [&](int64_t idx, int64_t before, int64_t size) -> int64_t {
        const int64_t i = idx - before;
        if (i >= 0 && i < size)
            return i;
        if (spec.mode == Pad::Mode::Constant)
            return -1;
        if (spec.mode == Pad::Mode::Replicate)
            return i < 0 ? 0 : size - 1;
        return i < 0 ? -i : 2 * (size - 1) - i;
    };
    std::vector<double> acc(size_t(s.h * s.w));
    for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const float* g = gy.data() + plane * o.h * o.w;
        for (int64_t y = 0; y < o.h; ++y) {
            const int64_t sy = source(y, p[0], s.h);
            if (sy < 0)
                continue;
            for (int64_t x = 0; x < o.w; ++x) {
                const int64_t sx = source(x, p[2], s.w);
                if (sx >= 0)
                    acc[size_t(sy * s.w + sx)] += g[y * o.w + x];
            }
        }
        float* dst = gx.data() + plane * s.h * s.w;
        for (int64_t i = 0; i < s.h * s.w; ++i)
            dst[i] = static_cast<float>(acc[size_t(i)]);
    }
}

void copy(const Tensor& src, Tensor& dst)
{
    detail::require(src.numel() == dst.numel(), "backward", "a copy between tensors of different sizes");
    std::memcpy(dst.data(), src.data(), size_t(src.numel()) * sizeof(float));
}

void accumulate(const Tensor& src, Tensor& dst, bool parallel)
{
    detail::require(src.numel() == dst.numel(), "backward", "a sum of gradients of different sizes");
    const int64_t count = src.numel();
#pragma omp parallel for schedule(static) if (parallel && count >= detail::kMinParallelElements)
    for (int64_t i = 0; i < count; ++i)
        dst.data()[i] += src.data()[i];
}

void dropoutForward(const Tensor& x, double p, uint64_t seed, std::vector<float>& mask, Tensor& y)
{
    detail::require(p >= 0 && p < 1, "dropout (training)", "p must be in [0, 1), got " + std::to_string(p));
    mask.resize(size_t(x.numel()));
    drawDropoutMask(p, seed, mask);
    for (int64_t i = 0; i < x.numel(); ++i)
        y.data()[i] = x.data()[i] * mask[size_t(i)];
}

void dropoutBackward(const Tensor& gy, const std::vector<float>& mask, Tensor& gx)
{
    detail::require(int64_t(mask.size()) == gy.numel(), "dropout backward", "the mask does not match the gradient");
    for (int64_t i = 0; i < gy.numel(); ++i)
        gx.data()[i] = gy.data()[i] * mask[size_t(i)];
}

bool allFinite(const Tensor& t, bool parallel)
{
    // x·0 is 0 for a finite x and NaN for ±∞ or NaN, so 16 lanes of such products stay 0 unless a value is not
    // finite: a loop the compiler vectorises (isfinite's branch per element kept the check of ResNet-18's gradients at
    // ~80 ms a CPU step, outside every timed phase), over blocks split across the team on the fast path.
    const float* x = t.data();
    const int64_t n = t.numel();
    constexpr int64_t kBlock = int64_t(1) << 16;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    bool bad = false;
#pragma omp parallel for schedule(static) reduction(|| : bad) if (parallel && n >= detail::kMinParallelElements)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t end = std::min(n, (b + 1) * kBlock);
        float lane[16] = {};
        int64_t i = b * kBlock;
        for (; i + 16 <= end; i += 16)
            for (int k = 0; k < 16; ++k)
                lane[k] += x[i + k] * 0.0f;
        for (; i < end; ++i)
            lane[0] += x[i] * 0.0f;
        for (int k = 0; k < 16; ++k)
            bad = bad || lane[k] != 0.0f;
    }
    return !bad;
}

void slice(const Tensor& gy, const Slice& spec, Tensor& gx)
{
    const std::vector<int64_t> dims = gx.shape().dims();
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < spec.dim; ++i)
        outer *= dims[size_t(i)];
    for (size_t i = size_t(spec.dim) + 1; i < dims.size(); ++i)
        inner *= dims[i];
    const int64_t size = dims[size_t(spec.dim)], run = (spec.end - spec.start) * inner;
    gx.fill(0.0f);
    for (int64_t o = 0; o < outer; ++o)
        std::memcpy(gx.data() + (o * size + spec.start) * inner, gy.data() + o * run, size_t(run) * sizeof(float));
}

} // namespace convscope::cpu::grad
