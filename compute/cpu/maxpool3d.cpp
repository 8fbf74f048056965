// maxpool3d: the largest value in each (dilated) 3-D window, PyTorch's rules exactly (maxpool2d.cpp with depth).
//
// Window of output (od, oh, ow): planes od·s_d − pad.front + a·d_d for a < kd (rows, columns likewise), clipped to
// the input. Padding behaves as −∞, so clipping is enough; a NaN in a window wins and propagates, as in PyTorch.
// ceil_mode only changes the output size (shape inference), and PyTorch's rule that the last window starts inside the
// input or its leading padding keeps every window non-empty.
//
// direct:: loops over the N·C volumes in turn; fast:: splits them across OpenMP threads. The arithmetic (a
// comparison) is identical, so both give bit-identical results.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/volume_common.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::cpu {

namespace {

    void checkMaxPool(const Tensor& in, const MaxPool3d& spec, const Tensor& out)
    {
        detail::requireVolumes(in, out, "maxpool3d");
        detail::requireTriples(spec.kernel_size, spec.effectiveStride(), spec.dilation, "maxpool3d");
        detail::require(out.shape().n == in.shape().n && out.shape().c == in.shape().c, "maxpool3d",
            "output batch or channels differ from the input's");
    }

    // The first in-range tap of a window that starts at `start` with dilation `step`, and its clipped end.
    inline void window(int64_t start, int64_t k, int64_t step, int64_t extent, int64_t* first, int64_t* end)
    {
        *end = std::min(start + (k - 1) * step + 1, extent);
        while (start < 0)
            start += step; // the first tap that is not padding
        *first = start;
    }

    void maxPoolVolume(
        const float* src, const Shape& is, const MaxPool3d& spec, const Padding3d& pad, float* dst, const Shape& os)
    {
        const auto [sd, sh, sw] = spec.effectiveStride();
        const auto [dd, dh, dw] = spec.dilation;
        const auto [kd, kh, kw] = spec.kernel_size;
        for (int64_t od = 0; od < os.d; ++od) {
            int64_t d0, d1;
            window(od * sd - pad.front, kd, dd, is.d, &d0, &d1);
            for (int64_t oh = 0; oh < os.h; ++oh) {
                int64_t h0, h1;
                window(oh * sh - pad.top, kh, dh, is.h, &h0, &h1);
                for (int64_t ow = 0; ow < os.w; ++ow) {
                    int64_t w0, w1;
                    window(ow * sw - pad.left, kw, dw, is.w, &w0, &w1);
                    float best = -std::numeric_limits<float>::infinity();
                    for (int64_t id = d0; id < d1; id += dd)
                        for (int64_t ih = h0; ih < h1; ih += dh)
                            for (int64_t iw = w0; iw < w1; iw += dw) {
                                const float v = src[(id * is.h + ih) * is.w + iw];
                                if (v > best || std::isnan(v))
                                    best = v;
                            }
                    dst[(od * os.h + oh) * os.w + ow] = best;
                }
            }
        }
    }

} // namespace

void direct::maxPool3d(const Tensor& in, const MaxPool3d& spec, const Padding3d& pad, Tensor& out)
{
    checkMaxPool(in, spec, out);
    const Shape& is = in.shape();
    const Shape& os = out.shape();
    const int64_t inVolume = is.d * is.h * is.w, outVolume = os.d * os.h * os.w;
    for (int64_t v = 0; v < is.n * is.c; ++v)
        maxPoolVolume(in.data() + v * inVolume, is, spec, pad, out.data() + v * outVolume, os);
}

void fast::maxPool3d(const Tensor& in, const MaxPool3d& spec, const Padding3d& pad, Tensor& out)
{
    checkMaxPool(in, spec, out);
    const Shape& is = in.shape();
    const Shape& os = out.shape();
    const int64_t inVolume = is.d * is.h * is.w, outVolume = os.d * os.h * os.w;
    const int64_t volumes = is.n * is.c;
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
    for (int64_t v = 0; v < volumes; ++v)
        maxPoolVolume(in.data() + v * inVolume, is, spec, pad, out.data() + v * outVolume, os);
}

} // namespace convscope::cpu
