// batchnorm2d in inference mode: y = (x − running_mean[c]) / sqrt(running_var[c] + eps) · weight[c] + bias[c],
// with weight 1 and bias 0 when the layer is not affine.
//
// direct:: evaluates that formula term by term in double, in PyTorch's order. fast:: folds it per channel
// (in double) into y = x · scale + shift and applies that in float over planes split across OpenMP threads,
// which is what PyTorch's own CPU inference kernel does.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <cmath>

namespace convscope::cpu {

namespace {

    void checkBatchNorm(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight,
        const Tensor* bias, double eps, const Tensor& out)
    {
        const std::string op = "batchnorm2d";
        detail::requireNonEmpty(in, out, op);
        detail::require(
            out.numel() == in.numel() && out.shape().c == in.shape().c, op, "output shape differs from the input's");
        const int64_t channels = in.shape().c;
        detail::requireVector(&mean, channels, op, "running_mean");
        detail::requireVector(&var, channels, op, "running_var");
        detail::requireVector(weight, channels, op, "weight");
        detail::requireVector(bias, channels, op, "bias");
        detail::require(eps >= 0, op, "eps must not be negative");
    }

} // namespace

void direct::batchNorm2d(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight,
    const Tensor* bias, double eps, Tensor& out)
{
    checkBatchNorm(in, mean, var, weight, bias, eps, out);
    const Shape& s = in.shape();
    for (int64_t n = 0; n < s.n; ++n) {
        for (int64_t c = 0; c < s.c; ++c) {
            const double mu = mean.data()[c];
            const double sigma = std::sqrt(double(var.data()[c]) + eps);
            const double gamma = weight ? weight->data()[c] : 1.0;
            const double beta = bias ? bias->data()[c] : 0.0;
            for (int64_t h = 0; h < s.h; ++h)
                for (int64_t w = 0; w < s.w; ++w)
                    out.at(n, c, h, w) = static_cast<float>((in.at(n, c, h, w) - mu) / sigma * gamma + beta);
        }
    }
}

void fast::batchNorm2d(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight,
    const Tensor* bias, double eps, Tensor& out)
{
    checkBatchNorm(in, mean, var, weight, bias, eps, out);
    detail::batchNormPlanes(in, mean, var, weight, bias, eps, out, in.shape().h * in.shape().w);
}

void detail::batchNormPlanes(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight,
    const Tensor* bias, double eps, Tensor& out, int64_t planeSize)
{
    const int64_t channels = in.shape().c;
    const int64_t planes = in.shape().n * channels;
#pragma omp parallel for schedule(static) if (in.numel() >= detail::kMinParallelElements)
    for (int64_t plane = 0; plane < planes; ++plane) {
        const int64_t c = plane % channels;
        const double gamma = weight ? weight->data()[c] : 1.0;
        const double beta = bias ? bias->data()[c] : 0.0;
        const double invStd = 1.0 / std::sqrt(double(var.data()[c]) + eps);
        const float scale = static_cast<float>(gamma * invStd);
        const float shift = static_cast<float>(beta - double(mean.data()[c]) * gamma * invStd);
        const float* src = in.data() + plane * planeSize;
        float* dst = out.data() + plane * planeSize;
        for (int64_t i = 0; i < planeSize; ++i)
            dst[i] = src[i] * scale + shift;
    }
}

} // namespace convscope::cpu
