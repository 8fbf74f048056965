// cpu.direct's backward of the 3-D kinds on volumes [N, C, D, H, W]: conv3d, conv_transpose3d, maxpool3d and
// avgpool3d (batch norm and global pooling run the 2-D code over D·H·W planes). The convolutions walk every
// (position, tap) pair once and add into double accumulators: conv3d's output position o reads input o·s − pad + k·d
// with tap k, conv_transpose3d's input position i feeds output i·s − pad + k·d, so the same walk gives both gradients
// of both kinds. The pools follow their forward's window rules (compute/cpu/maxpool3d.cpp, avgpool3d.cpp).
#include "compute/training/cpu_backward_ops.h"

#include "compute/cpu/volume_common.h"

#include <cmath>
#include <limits>

namespace convscope::cpu::grad {

namespace {

    struct Grid {
        int64_t d, h, w;
        explicit Grid(const Shape& s)
            : d(s.d)
            , h(s.h)
            , w(s.w)
        {
        }
        int64_t size() const { return d * h * w; }
    };

    // f(position index, target index, tap index) for every position of `pos` and tap whose target p·s − pad + k·dil
    // lies inside `tgt` (flat indices within one channel's volume).
    template <typename Spec, typename F>
    void forEachTap(const Grid& pos, const Grid& tgt, const Spec& spec, const Padding3d& pad, F f)
    {
        const auto [kd, kh, kw] = spec.kernel_size;
        for (int64_t pd = 0; pd < pos.d; ++pd)
            for (int64_t ph = 0; ph < pos.h; ++ph)
                for (int64_t pw = 0; pw < pos.w; ++pw)
                    for (int64_t a = 0; a < kd; ++a) {
                        const int64_t td = pd * spec.stride[0] - pad.front + a * spec.dilation[0];
                        if (td < 0 || td >= tgt.d)
                            continue;
                        for (int64_t b = 0; b < kh; ++b) {
                            const int64_t th = ph * spec.stride[1] - pad.top + b * spec.dilation[1];
                            if (th < 0 || th >= tgt.h)
                                continue;
                            for (int64_t c = 0; c < kw; ++c) {
                                const int64_t tw = pw * spec.stride[2] - pad.left + c * spec.dilation[2];
                                if (tw < 0 || tw >= tgt.w)
                                    continue;
                                f((pd * pos.h + ph) * pos.w + pw, (td * tgt.h + th) * tgt.w + tw,
                                    (a * kh + b) * kw + c);
                            }
                        }
                    }
    }

    void store(const std::vector<double>& acc, Tensor& t)
    {
        for (size_t i = 0; i < acc.size(); ++i)
            t.data()[i] = static_cast<float>(acc[i]);
    }

    void biasGrad(const Tensor& gy, Tensor* gb)
    {
        if (!gb)
            return;
        const Shape& s = gy.shape();
        const int64_t volume = s.d * s.h * s.w;
        for (int64_t c = 0; c < s.c; ++c) {
            double sum = 0;
            for (int64_t n = 0; n < s.n; ++n)
                sum += detail::sumInDouble(gy.data() + (n * s.c + c) * volume, volume);
            gb->data()[c] = static_cast<float>(sum);
        }
    }

    // Both gradients of conv3d (transposed = false) or conv_transpose3d; `small` is the side the walk's positions
    // are on (conv3d: its output; conv_transpose3d: its input), `large` the side its taps land on.
    template <typename Spec>
    void convolution3d(const Tensor& gy, const Tensor* x, const Tensor* weight, const Spec& spec, const Padding3d& pad,
        Tensor* gx, Tensor* gw, Tensor* gb, bool transposed)
    {
        const Shape& is = x ? x->shape() : gx->shape();
        const Shape& os = gy.shape();
        const std::string op = transposed ? "conv_transpose3d backward" : "conv3d backward";
        detail::requireGroups(is.c, os.c, spec.groups, op);
        const int64_t icpg = is.c / spec.groups, ocpg = os.c / spec.groups;
        const int64_t taps = spec.kernel_size[0] * spec.kernel_size[1] * spec.kernel_size[2];
        const Grid in(is), out(os);
        const Grid& small = transposed ? in : out;
        const Grid& large = transposed ? out : in;
        std::vector<double> acc(size_t(gx ? gx->numel() : gw->numel()), 0.0);
        for (int64_t n = 0; n < is.n; ++n)
            for (int64_t g = 0; g < spec.groups; ++g)
                for (int64_t i = 0; i < icpg; ++i)
                    for (int64_t o = 0; o < ocpg; ++o) {
                        const int64_t ic = g * icpg + i, oc = g * ocpg + o;
                        // conv3d's weight [C_out, C_in/g, …], conv_transpose3d's [C_in, C_out/g, …]
                        const int64_t wBase = (transposed ? ic * ocpg + o : oc * icpg + i) * taps;
                        const float* dy = gy.data() + (n * os.c + oc) * out.size();
                        if (gx) {
                            double* dx = acc.data() + (n * is.c + ic) * in.size();
                            const float* w = weight->data() + wBase;
                            forEachTap(small, large, spec, pad, [&](int64_t p, int64_t t, int64_t k) {
                                if (transposed)
                                    dx[p] += double(dy[t]) * w[k];
                                else
                                    dx[t] += double(dy[p]) * w[k];
                            });
                        } else {
                            const float* src = x->data() + (n * is.c + ic) * in.size();
                            double* dw = acc.data() + wBase;
                            forEachTap(small, large, spec, pad, [&](int64_t p, int64_t t, int64_t k) {
                                dw[k] += transposed ? double(src[p]) * dy[t] : double(dy[p]) * src[t];
                            });
                        }
                    }
        store(acc, gx ? *gx : *gw);
        if (gw)
            biasGrad(gy, gb);
    }

} // namespace

void direct::conv3dData(const Tensor& gy, const Tensor& weight, const Conv3d& spec, const Padding3d& pad, Tensor& gx)
{
    convolution3d(gy, nullptr, &weight, spec, pad, &gx, nullptr, nullptr, false);
}

void direct::conv3dWeights(
    const Tensor& gy, const Tensor& x, const Conv3d& spec, const Padding3d& pad, Tensor& gw, Tensor* gb)
{
    convolution3d(gy, &x, nullptr, spec, pad, nullptr, &gw, gb, false);
}

void direct::convTranspose3dData(
    const Tensor& gy, const Tensor& weight, const ConvTranspose3d& spec, const Padding3d& pad, Tensor& gx)
{
    convolution3d(gy, nullptr, &weight, spec, pad, &gx, nullptr, nullptr, true);
}

void direct::convTranspose3dWeights(
    const Tensor& gy, const Tensor& x, const ConvTranspose3d& spec, const Padding3d& pad, Tensor& gw, Tensor* gb)
{
    convolution3d(gy, &x, nullptr, spec, pad, nullptr, &gw, gb, true);
}

void maxPool3d(const Tensor& gy, const Tensor& x, const MaxPool3d& spec, const Padding3d& pad, Tensor& gx)
{
    const Shape& is = x.shape();
    const Shape& os = gy.shape();
    const Grid in(is), out(os);
    const auto [sd, sh, sw] = spec.effectiveStride();
    const auto [dd, dh, dw] = spec.dilation;
    const auto [kd, kh, kw] = spec.kernel_size;
    // The first in-range tap of a window and its clipped end, as the forward finds them.
    const auto window = [](int64_t start, int64_t k, int64_t step, int64_t extent, int64_t& first, int64_t& end) {
        end = std::min(start + (k - 1) * step + 1, extent);
        while (start < 0)
            start += step;
        first = start;
    };
    gx.fill(0.0f);
    for (int64_t v = 0; v < is.n * is.c; ++v) {
        const float* src = x.data() + v * in.size();
        const float* g = gy.data() + v * out.size();
        float* dst = gx.data() + v * in.size();
        for (int64_t od = 0; od < os.d; ++od)
            for (int64_t oh = 0; oh < os.h; ++oh)
                for (int64_t ow = 0; ow < os.w; ++ow) {
                    int64_t d0, d1, h0, h1, w0, w1;
                    window(od * sd - pad.front, kd, dd, is.d, d0, d1);
                    window(oh * sh - pad.top, kh, dh, is.h, h0, h1);
                    window(ow * sw - pad.left, kw, dw, is.w, w0, w1);
                    if (d0 >= d1 || h0 >= h1 || w0 >= w1)
                        continue;
                    int64_t arg = (d0 * is.h + h0) * is.w + w0;
                    float best = -std::numeric_limits<float>::infinity();
                    for (int64_t id = d0; id < d1; id += dd)
                        for (int64_t ih = h0; ih < h1; ih += dh)
                            for (int64_t iw = w0; iw < w1; iw += dw) {
                                const float val = src[(id * is.h + ih) * is.w + iw];
                                if (val > best || std::isnan(val)) {
                                    best = val;
                                    arg = (id * is.h + ih) * is.w + iw;
                                }
                            }
                    dst[arg] += g[(od * os.h + oh) * os.w + ow];
                }
    }
}

void avgPool3d(const Tensor& gy, const AvgPool3d& spec, const Padding3d& pad, Tensor& gx)
{
    const Shape& is = gx.shape();
    const Shape& os = gy.shape();
    const Grid in(is), out(os);
    const auto [sd, sh, sw] = spec.effectiveStride();
    const auto [kd, kh, kw] = spec.kernel_size;
    struct Span {
        int64_t start, end, padded;
    };
    const auto span = [](int64_t o, int64_t stride, int64_t before, int64_t after, int64_t k, int64_t extent) {
        const int64_t start = o * stride - before;
        const int64_t end = std::min(start + k, extent + after);
        return Span { std::max<int64_t>(start, 0), std::min(end, extent), end - start };
    };
    std::vector<double> acc(size_t(in.size()));
    for (int64_t v = 0; v < is.n * is.c; ++v) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const float* g = gy.data() + v * out.size();
        for (int64_t od = 0; od < os.d; ++od)
            for (int64_t oh = 0; oh < os.h; ++oh)
                for (int64_t ow = 0; ow < os.w; ++ow) {
                    const Span d = span(od, sd, pad.front, pad.back, kd, is.d);
                    const Span h = span(oh, sh, pad.top, pad.bottom, kh, is.h);
                    const Span w = span(ow, sw, pad.left, pad.right, kw, is.w);
                    if (d.start >= d.end || h.start >= h.end || w.start >= w.end)
                        continue;
                    const int64_t divisor = spec.divisor_override ? *spec.divisor_override
                        : spec.count_include_pad                  ? d.padded * h.padded * w.padded
                                                 : (d.end - d.start) * (h.end - h.start) * (w.end - w.start);
                    const double share = double(g[(od * os.h + oh) * os.w + ow]) / double(divisor);
                    for (int64_t id = d.start; id < d.end; ++id)
                        for (int64_t ih = h.start; ih < h.end; ++ih)
                            for (int64_t iw = w.start; iw < w.end; ++iw)
                                acc[size_t((id * is.h + ih) * is.w + iw)] += share;
                }
        for (int64_t i = 0; i < in.size(); ++i)
            gx.data()[v * in.size() + i] = static_cast<float>(acc[size_t(i)]);
    }
}

} // namespace convscope::cpu::grad
