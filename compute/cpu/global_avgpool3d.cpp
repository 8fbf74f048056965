// global_avgpool3d: one mean per (item, channel) volume, out[n, c] = Σ_{d,h,w} in[n, c, d, h, w] / (D·H·W)
// (nn.AdaptiveAvgPool3d(1)); the output is [N, C, 1, 1, 1]. Both versions sum in double (a 64³ volume holds a
// quarter of a million values, enough for a float sum to drift); fast:: splits the volumes across OpenMP threads.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/volume_common.h"

namespace convscope::cpu {

namespace {

    void checkGlobalAvgPool(const Tensor& in, const Tensor& out)
    {
        detail::requireVolumes(in, out, "global_avgpool3d");
        detail::require(out.numel() == in.shape().n * in.shape().c, "global_avgpool3d",
            "the output must hold one value per input channel and item");
    }

    void meanOfVolume(const float* src, int64_t volume, float* dst)
    {
        double sum = 0;
        for (int64_t i = 0; i < volume; ++i)
            sum += src[i];
        *dst = static_cast<float>(sum / static_cast<double>(volume));
    }

} // namespace

void direct::globalAvgPool3d(const Tensor& in, Tensor& out)
{
    checkGlobalAvgPool(in, out);
    const int64_t volume = in.shape().d * in.shape().h * in.shape().w;
    for (int64_t v = 0; v < in.shape().n * in.shape().c; ++v)
        meanOfVolume(in.data() + v * volume, volume, out.data() + v);
}

void fast::globalAvgPool3d(const Tensor& in, Tensor& out)
{
    checkGlobalAvgPool(in, out);
    const int64_t volume = in.shape().d * in.shape().h * in.shape().w;
    const int64_t volumes = in.shape().n * in.shape().c;
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
    for (int64_t v = 0; v < volumes; ++v)
        out.data()[v]
            = static_cast<float>(detail::sumInDouble(in.data() + v * volume, volume) / static_cast<double>(volume));
}

} // namespace convscope::cpu
