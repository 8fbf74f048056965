// The tensor-wide rounding of mixed_products.h, across the CPU's threads (OpenMP, as the fast CPU path's loops).
#include "compute/training/mixed_products.h"

#include <cmath>

namespace convscope::cpu_training {

namespace {
    constexpr int64_t kParallelFrom = int64_t(1) << 16; // smaller tensors round faster than a team starts
}

void roundInPlace(Tensor& t, MathMode math)
{
    float* p = t.data();
    const int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelFrom)
    for (int64_t i = 0; i < n; ++i)
        p[i] = roundedTo(p[i], math);
}

Tensor roundedCopy(const Tensor& t, MathMode math)
{
    Tensor r(t.shape());
    const float* src = t.data();
    float* dst = r.data();
    const int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelFrom)
    for (int64_t i = 0; i < n; ++i)
        dst[i] = roundedTo(src[i], math);
    return r;
}

void scaleInPlace(Tensor& t, float factor)
{
    float* p = t.data();
    const int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelFrom)
    for (int64_t i = 0; i < n; ++i)
        p[i] *= factor;
}

std::string mixedTrainingMath(
    MathMode math, const std::string& layers, const std::string& sums, double lossScale, const std::string& model)
{
    if (!mixedProducts(math))
        return math == MathMode::TF32 ? "fp32 (the CPU has no TF32)" : "fp32";
    const std::string mode = mathModeName(math);
    const auto scaleText = [](double scale) {
        return scale == std::floor(scale) && scale < 1e15 ? std::to_string(int64_t(scale)) : std::to_string(scale);
    };
    return mode + " mixed precision, " + model + ": " + layers
        + " read their input, weights and output gradient rounded to " + mode
        + ", write their output and input gradient rounded to " + mode + " (" + sums
        + "), and their weight and bias gradients in fp32; every other layer, the loss, the parameters and the "
          "optimizer stay fp32"
        + (lossScale > 0 ? "; the loss scaled as torch.amp.GradScaler (" + scaleText(lossScale)
                    + " at first, halved at a step whose gradients overflow, whose update is skipped; doubled after "
                      "2000 steps without one)"
                         : "");
}

} // namespace convscope::cpu_training
