// avgpool3d: the mean of each 3-D window, with PyTorch's divisor rule exactly (ATen's avg_pool3d_out_frame).
//
// For output (od, oh, ow) the window [od·s_d − pad.front, … + kd) (and likewise H, W) is first clipped at its end to
// the padded input (D + pad.back); pool_size is that window's volume, padding included. Then it is clipped to the
// real input and summed there. The divisor is divisor_override if set, else pool_size when count_include_pad, else
// the clipped volume. A window left empty after clipping gives 0, as in PyTorch.
//
// direct:: sums in double, volume after volume (the reference); fast:: sums in float across OpenMP threads.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/volume_common.h"

#include <algorithm>

namespace convscope::cpu {

namespace {

    void checkAvgPool(const Tensor& in, const AvgPool3d& spec, const Tensor& out)
    {
        detail::requireVolumes(in, out, "avgpool3d");
        detail::requireTriples(spec.kernel_size, spec.effectiveStride(), { 1, 1, 1 }, "avgpool3d");
        detail::require(out.shape().n == in.shape().n && out.shape().c == in.shape().c, "avgpool3d",
            "output batch or channels differ from the input's");
        detail::require(
            !spec.divisor_override || *spec.divisor_override != 0, "avgpool3d", "divisor_override must not be zero");
    }

    struct Span {
        int64_t start, end, padded; // the clipped window [start, end) and the window's length inside the padding
    };

    inline Span span(int64_t o, int64_t stride, int64_t before, int64_t after, int64_t k, int64_t extent)
    {
        const int64_t start = o * stride - before;
        const int64_t end = std::min(start + k, extent + after);
        return { std::max<int64_t>(start, 0), std::min(end, extent), end - start };
    }

    template <typename Accumulator>
    void avgPoolVolume(
        const float* src, const Shape& is, const AvgPool3d& spec, const Padding3d& pad, float* dst, const Shape& os)
    {
        const auto [sd, sh, sw] = spec.effectiveStride();
        const auto [kd, kh, kw] = spec.kernel_size;
        for (int64_t od = 0; od < os.d; ++od) {
            const Span d = span(od, sd, pad.front, pad.back, kd, is.d);
            for (int64_t oh = 0; oh < os.h; ++oh) {
                const Span h = span(oh, sh, pad.top, pad.bottom, kh, is.h);
                for (int64_t ow = 0; ow < os.w; ++ow) {
                    const Span w = span(ow, sw, pad.left, pad.right, kw, is.w);
                    float& result = dst[(od * os.h + oh) * os.w + ow];
                    if (d.start >= d.end || h.start >= h.end || w.start >= w.end) {
                        result = 0.0f;
                        continue;
                    }
                    Accumulator sum = 0;
                    for (int64_t id = d.start; id < d.end; ++id)
                        for (int64_t ih = h.start; ih < h.end; ++ih)
                            for (int64_t iw = w.start; iw < w.end; ++iw)
                                sum += src[(id * is.h + ih) * is.w + iw];
                    const int64_t divisor = spec.divisor_override ? *spec.divisor_override
                        : spec.count_include_pad                  ? d.padded * h.padded * w.padded
                                                 : (d.end - d.start) * (h.end - h.start) * (w.end - w.start);
                    result = static_cast<float>(sum / static_cast<Accumulator>(divisor));
                }
            }
        }
    }

} // namespace

void direct::avgPool3d(const Tensor& in, const AvgPool3d& spec, const Padding3d& pad, Tensor& out)
{
    checkAvgPool(in, spec, out);
    const Shape& is = in.shape();
    const Shape& os = out.shape();
    const int64_t inVolume = is.d * is.h * is.w, outVolume = os.d * os.h * os.w;
    for (int64_t v = 0; v < is.n * is.c; ++v)
        avgPoolVolume<double>(in.data() + v * inVolume, is, spec, pad, out.data() + v * outVolume, os);
}

void fast::avgPool3d(const Tensor& in, const AvgPool3d& spec, const Padding3d& pad, Tensor& out)
{
    checkAvgPool(in, spec, out);
    const Shape& is = in.shape();
    const Shape& os = out.shape();
    const int64_t inVolume = is.d * is.h * is.w, outVolume = os.d * os.h * os.w;
    const int64_t volumes = is.n * is.c;
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
    for (int64_t v = 0; v < volumes; ++v)
        avgPoolVolume<float>(in.data() + v * inVolume, is, spec, pad, out.data() + v * outVolume, os);
}

} // namespace convscope::cpu
