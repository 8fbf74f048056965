// maxpool2d: the largest value in each (dilated) window, PyTorch's rules exactly.
//
// Window of output (oh, ow): rows oh·s_h − pad.top + ki·d_h for ki < kh (columns likewise), clipped to the
// input. Padding behaves as −∞, so it never wins, which is why clipping is enough. A NaN in a window wins
// and propagates, as in PyTorch. ceil_mode only changes the output size, which shape inference fixed; PyTorch
// guarantees every window starts inside the input or its left/top padding, so none is empty.
//
// direct:: loops over every plane in turn; fast:: splits the N·C planes across OpenMP threads. The
// arithmetic (a comparison) is identical, so both give bit-identical results.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::cpu {

namespace {

    void checkMaxPool(const Tensor& in, const MaxPool2d& spec, const Tensor& out)
    {
        detail::requireNonEmpty(in, out, "maxpool2d");
        detail::requireWindow(spec.kernel_size, spec.effectiveStride(), spec.dilation, "maxpool2d");
        detail::require(out.shape().n == in.shape().n && out.shape().c == in.shape().c, "maxpool2d",
            "output batch or channels differ from the input's");
    }

    void maxPoolPlane(const float* src, int64_t inH, int64_t inW, const MaxPool2d& spec, const Padding2d& pad,
        float* dst, int64_t outH, int64_t outW)
    {
        const auto [sh, sw] = spec.effectiveStride();
        const int64_t dh = spec.dilation[0], dw = spec.dilation[1];
        for (int64_t oh = 0; oh < outH; ++oh) {
            int64_t hStart = oh * sh - pad.top;
            const int64_t hEnd = std::min(hStart + (spec.kernel_size[0] - 1) * dh + 1, inH);
            while (hStart < 0)
                hStart += dh; // the first tap that is not padding
            for (int64_t ow = 0; ow < outW; ++ow) {
                int64_t wStart = ow * sw - pad.left;
                const int64_t wEnd = std::min(wStart + (spec.kernel_size[1] - 1) * dw + 1, inW);
                while (wStart < 0)
                    wStart += dw;
                float best = -std::numeric_limits<float>::infinity();
                for (int64_t ih = hStart; ih < hEnd; ih += dh) {
                    for (int64_t iw = wStart; iw < wEnd; iw += dw) {
                        const float v = src[ih * inW + iw];
                        if (v > best || std::isnan(v))
                            best = v;
                    }
                }
                dst[oh * outW + ow] = best;
            }
        }
    }

} // namespace

void direct::maxPool2d(const Tensor& in, const MaxPool2d& spec, const Padding2d& pad, Tensor& out)
{
    checkMaxPool(in, spec, out);
    const Shape& is = in.shape();
    const Shape& os = out.shape();
    for (int64_t plane = 0; plane < is.n * is.c; ++plane)
        maxPoolPlane(
            in.data() + plane * is.h * is.w, is.h, is.w, spec, pad, out.data() + plane * os.h * os.w, os.h, os.w);
}

void fast::maxPool2d(const Tensor& in, const MaxPool2d& spec, const Padding2d& pad, Tensor& out)
{
    checkMaxPool(in, spec, out);
    const Shape& is = in.shape();
    const Shape& os = out.shape();
    const int64_t planes = is.n * is.c;
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
    for (int64_t plane = 0; plane < planes; ++plane)
        maxPoolPlane(
            in.data() + plane * is.h * is.w, is.h, is.w, spec, pad, out.data() + plane * os.h * os.w, os.h, os.w);
}

} // namespace convscope::cpu
