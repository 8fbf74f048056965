// Batch norm in training mode on the fast CPU path: the (channel, image) planes split across the OpenMP team, float
// lanes inside chunks summed in double, the element-wise passes one float FMA each (batch_norm_fast.cpp says why).
// cpu_backward_ops.h's batchNorm2dTrainForward / batchNorm2dData / batchNorm2dWeights call these when `parallel`
// (the fast algorithms) after their own checks; the reference path stays as PyTorch writes it, in double.
#pragma once

#include "compute/training/cpu_backward_ops.h"

#include <cstdint>
#include <vector>

namespace convscope::cpu::grad {

// A batch norm input [N, C, (D,) H, W] as N·C planes of D·H·W elements.
struct Planes {
    int64_t batch, channels, area;
    explicit Planes(const Shape& s)
        : batch(s.n)
        , channels(s.c)
        , area(s.d * s.h * s.w)
    {
    }
};

namespace fast_bn {
    // The batch statistics into `stats`, the running statistics moved, y written. weight / bias null: affine off.
    void trainForward(const Planes& p, const float* x, const float* weight, const float* bias, double eps,
        double momentum, float* runningMean, float* runningVar, float* y, BatchStats& stats);
    // Per channel {Σ gy, Σ gy·x̂} (dβ and dγ), interleaved.
    std::vector<double> gradientSums(const Planes& p, const float* gy, const float* x, const BatchStats& stats);
    // gx from gy, x, the forward's statistics and gradientSums's `sums` of the same gy and x.
    void data(const Planes& p, const float* gy, const float* x, const float* weight, const BatchStats& stats,
        const std::vector<double>& sums, float* gx);
} // namespace fast_bn

} // namespace convscope::cpu::grad
