// batchnorm3d in inference mode: y = (x − running_mean[c]) / sqrt(running_var[c] + eps) · weight[c] + bias[c] at
// every voxel of channel c (weight 1 and bias 0 when not affine). batchnorm2d.cpp's two versions over a volume:
// direct:: evaluates the formula term by term in double, fast:: folds it per channel into x · scale + shift and
// applies that in float over the N·C volumes split across OpenMP threads (PyTorch's CPU inference kernel does this).
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/volume_common.h"

#include <cmath>

namespace convscope::cpu {

namespace {

    void checkBatchNorm(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight,
        const Tensor* bias, double eps, const Tensor& out)
    {
        const std::string op = "batchnorm3d";
        detail::requireVolumes(in, out, op);
        detail::require(out.shape() == in.shape(), op, "output shape differs from the input's");
        const int64_t channels = in.shape().c;
        detail::requireVector(&mean, channels, op, "running_mean");
        detail::requireVector(&var, channels, op, "running_var");
        detail::requireVector(weight, channels, op, "weight");
        detail::requireVector(bias, channels, op, "bias");
        detail::require(eps >= 0, op, "eps must not be negative");
    }

} // namespace

void direct::batchNorm3d(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight,
    const Tensor* bias, double eps, Tensor& out)
{
    checkBatchNorm(in, mean, var, weight, bias, eps, out);
    const Shape& s = in.shape();
    for (int64_t n = 0; n < s.n; ++n)
        for (int64_t c = 0; c < s.c; ++c) {
            const double mu = mean.data()[c];
            const double sigma = std::sqrt(double(var.data()[c]) + eps);
            const double gamma = weight ? weight->data()[c] : 1.0;
            const double beta = bias ? bias->data()[c] : 0.0;
            for (int64_t d = 0; d < s.d; ++d)
                for (int64_t h = 0; h < s.h; ++h)
                    for (int64_t w = 0; w < s.w; ++w)
                        out.at(n, c, d, h, w) = static_cast<float>((in.at(n, c, d, h, w) - mu) / sigma * gamma + beta);
        }
}

void fast::batchNorm3d(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight,
    const Tensor* bias, double eps, Tensor& out)
{
    checkBatchNorm(in, mean, var, weight, bias, eps, out);
    const Shape& s = in.shape();
    detail::batchNormPlanes(in, mean, var, weight, bias, eps, out, s.d * s.h * s.w);
}

} // namespace convscope::cpu
