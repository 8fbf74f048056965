// avgpool2d: the mean of each window, with PyTorch's divisor rule exactly.
//
// For output (oh, ow) PyTorch takes the window [oh·s_h − pad.top, … + kh) and first clips its end to the
// padded input (H + pad.bottom); pool_size is that window's area, padding included. Then it clips the window
// to the real input and sums there. The divisor is divisor_override if set, else pool_size when
// count_include_pad (the padding counts as zeros), else the clipped area (only real pixels count). With
// ceil_mode a last window can hang past the padding: it is the first clip that keeps it from counting
// pixels that exist nowhere. A window left empty after clipping gives 0, as in PyTorch.
//
// direct:: sums in double, plane after plane (the reference); fast:: sums in float with the N·C planes
// split across OpenMP threads.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <algorithm>

namespace convscope::cpu {

namespace {

    void checkAvgPool(const Tensor& in, const AvgPool2d& spec, const Tensor& out)
    {
        detail::requireNonEmpty(in, out, "avgpool2d");
        detail::requireWindow(spec.kernel_size, spec.effectiveStride(), { 1, 1 }, "avgpool2d");
        detail::require(out.shape().n == in.shape().n && out.shape().c == in.shape().c, "avgpool2d",
            "output batch or channels differ from the input's");
        detail::require(
            !spec.divisor_override || *spec.divisor_override != 0, "avgpool2d", "divisor_override must not be zero");
    }

    // Output row oh, columns [ow0, ow1), window by window.
    template <typename Accumulator>
    void avgPoolColumns(const float* src, int64_t inH, int64_t inW, const AvgPool2d& spec, const Padding2d& pad,
        float* row, int64_t oh, int64_t ow0, int64_t ow1)
    {
        const auto [sh, sw] = spec.effectiveStride();
        const int64_t kh = spec.kernel_size[0], kw = spec.kernel_size[1];
        for (int64_t ow = ow0; ow < ow1; ++ow) {
            int64_t hStart = oh * sh - pad.top;
            int64_t wStart = ow * sw - pad.left;
            int64_t hEnd = std::min(hStart + kh, inH + pad.bottom);
            int64_t wEnd = std::min(wStart + kw, inW + pad.right);
            const int64_t poolSize = (hEnd - hStart) * (wEnd - wStart);
            hStart = std::max<int64_t>(hStart, 0);
            wStart = std::max<int64_t>(wStart, 0);
            hEnd = std::min(hEnd, inH);
            wEnd = std::min(wEnd, inW);
            if (hStart >= hEnd || wStart >= wEnd) {
                row[ow] = 0.0f;
                continue;
            }
            Accumulator sum = 0;
            for (int64_t ih = hStart; ih < hEnd; ++ih)
                for (int64_t iw = wStart; iw < wEnd; ++iw)
                    sum += src[ih * inW + iw];
            const int64_t divisor = spec.divisor_override ? *spec.divisor_override
                : spec.count_include_pad                  ? poolSize
                                                          : (hEnd - hStart) * (wEnd - wStart);
            row[ow] = static_cast<float>(sum / static_cast<Accumulator>(divisor));
        }
    }

    template <typename Accumulator>
    void avgPoolPlane(const float* src, int64_t inH, int64_t inW, const AvgPool2d& spec, const Padding2d& pad,
        float* dst, int64_t outH, int64_t outW)
    {
        for (int64_t oh = 0; oh < outH; ++oh)
            avgPoolColumns<Accumulator>(src, inH, inW, spec, pad, dst + oh * outW, oh, 0, outW);
    }

    // fast::: the columns whose windows lie wholly inside the input (divisor kh·kw, or the override, whatever
    // count_include_pad says) summed row by row and tap by tap over all of them at once, in the same order as
    // avgPoolPlane's loops; the border columns window by window as avgPoolPlane does.
    void avgPoolPlaneFast(const float* src, int64_t inH, int64_t inW, const AvgPool2d& spec, const Padding2d& pad,
        float* dst, int64_t outH, int64_t outW)
    {
        const auto [sh, sw] = spec.effectiveStride();
        const int64_t kh = spec.kernel_size[0], kw = spec.kernel_size[1];
        const int64_t owLo = std::min(outW, (pad.left + sw - 1) / sw);
        const int64_t owHi = inW - kw + pad.left < 0 ? owLo : std::clamp((inW - kw + pad.left) / sw + 1, owLo, outW);
        const float divisor = float(spec.divisor_override ? *spec.divisor_override : kh * kw);
        for (int64_t oh = 0; oh < outH; ++oh) {
            const int64_t hStart = oh * sh - pad.top;
            float* row = dst + oh * outW;
            if (hStart >= 0 && hStart + kh <= inH && owLo < owHi) {
                std::fill(row + owLo, row + owHi, 0.0f);
                for (int64_t ih = hStart; ih < hStart + kh; ++ih) {
                    const float* in = src + ih * inW - pad.left;
                    for (int64_t kj = 0; kj < kw; ++kj)
                        for (int64_t ow = owLo; ow < owHi; ++ow)
                            row[ow] += in[ow * sw + kj];
                }
                for (int64_t ow = owLo; ow < owHi; ++ow)
                    row[ow] /= divisor;
                avgPoolColumns<float>(src, inH, inW, spec, pad, row, oh, 0, owLo);
                avgPoolColumns<float>(src, inH, inW, spec, pad, row, oh, owHi, outW);
            } else {
                avgPoolColumns<float>(src, inH, inW, spec, pad, row, oh, 0, outW);
            }
        }
    }

} // namespace

void direct::avgPool2d(const Tensor& in, const AvgPool2d& spec, const Padding2d& pad, Tensor& out)
{
    checkAvgPool(in, spec, out);
    const Shape& is = in.shape();
    const Shape& os = out.shape();
    for (int64_t plane = 0; plane < is.n * is.c; ++plane)
        avgPoolPlane<double>(
            in.data() + plane * is.h * is.w, is.h, is.w, spec, pad, out.data() + plane * os.h * os.w, os.h, os.w);
}

void fast::avgPool2d(const Tensor& in, const AvgPool2d& spec, const Padding2d& pad, Tensor& out)
{
    checkAvgPool(in, spec, out);
    const Shape& is = in.shape();
    const Shape& os = out.shape();
    const int64_t planes = is.n * is.c;
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
    for (int64_t plane = 0; plane < planes; ++plane)
        avgPoolPlaneFast(
            in.data() + plane * is.h * is.w, is.h, is.w, spec, pad, out.data() + plane * os.h * os.w, os.h, os.w);
}

} // namespace convscope::cpu
