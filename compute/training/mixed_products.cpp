// The tensor-wide rounding of mixed_products.h, across the CPU's threads (OpenMP, as the fast CPU path's loops).
#include "compute/training/mixed_products.h"

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

} // namespace convscope::cpu_training
