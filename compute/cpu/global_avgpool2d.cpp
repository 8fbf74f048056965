// global_avgpool2d: one mean per (image, channel) plane, out[n, c] = Σ_{h,w} in[n, c, h, w] / (H·W)
// (nn.AdaptiveAvgPool2d(1)). Both sum in double: a plane can hold hundreds of thousands of values, enough
// for a float sum to drift past the 1e-5 tolerance. fast:: splits the planes across OpenMP threads. The
// output is [N, C, 1, 1], however shape inference labels it.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

namespace convscope::cpu {

namespace {

    void checkGlobalAvgPool(const Tensor& in, const Tensor& out)
    {
        detail::requireNonEmpty(in, out, "global_avgpool2d");
        detail::require(out.numel() == in.shape().n * in.shape().c, "global_avgpool2d",
            "the output must hold one value per input channel and image");
    }

} // namespace

void direct::globalAvgPool2d(const Tensor& in, Tensor& out)
{
    checkGlobalAvgPool(in, out);
    const int64_t area = in.shape().h * in.shape().w;
    for (int64_t plane = 0; plane < in.shape().n * in.shape().c; ++plane) {
        double sum = 0;
        for (int64_t i = 0; i < area; ++i)
            sum += in.data()[plane * area + i];
        out.data()[plane] = static_cast<float>(sum / static_cast<double>(area));
    }
}

void fast::globalAvgPool2d(const Tensor& in, Tensor& out)
{
    checkGlobalAvgPool(in, out);
    const int64_t area = in.shape().h * in.shape().w;
    const int64_t planes = in.shape().n * in.shape().c;
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
    for (int64_t plane = 0; plane < planes; ++plane) {
        const double sum = detail::sumInDouble(in.data() + plane * area, area);
        out.data()[plane] = static_cast<float>(sum / static_cast<double>(area));
    }
}

} // namespace convscope::cpu
