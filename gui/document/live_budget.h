// The live preview's budget: which CPU selection reruns the network after an edit, and whether it is small enough
// to, judged in time rather than in FLOPs (a 1e8-FLOP limit kept ResNet-18 off the live preview even on 16 cores,
// where it runs in 6 ms).
#pragma once

#include "compute/backend.h"

namespace convscope::gui {

class LiveBudget {
public:
    // An edit reruns the network live when its estimated time is within this.
    static constexpr double kBudgetMs = 250.0;

    // The fastest of our CPU selections on any machine: cpu.tap_gemm (the AVX-512 register tile where the CPU has
    // it, per-tap OpenBLAS products or im2col otherwise). The window never waits for a GPU or an optional library.
    static Selection selection() { return { "cpu", "tap_gemm" }; }

    // flops at the rate the last large live run reached, or, before one, a conservative rate per CPU thread.
    double estimateMs(double flops) const;
    bool fits(double flops) const { return estimateMs(flops) <= kBudgetMs; }
    // A live run's FLOPs and whole-pass time. Runs under 1e8 FLOPs are dominated by per-layer overhead and would
    // underestimate a large network's rate, so they leave the rate alone.
    void record(double flops, double ms);
    double rateGflops() const;

private:
    double m_measuredGflops = 0; // 0: none yet
};

} // namespace convscope::gui
