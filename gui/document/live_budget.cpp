// The live preview's time budget (live_budget.h).
#include "gui/document/live_budget.h"

#include "compute/cpu_threads.h"

#include <algorithm>

namespace convscope::gui {

namespace {

    // Before any measurement: 10 GFLOP/s a thread, about a third of what cpu.tap_gemm reached on ResNet-18 per
    // thread on the 2- and 16-core machines (docs/PERFORMANCE.md): so ResNet-18 (3.6 GFLOP) is live on 2 threads
    // and VGG-16 (31 GFLOP) is not, until a measurement says the machine is faster.
    constexpr double kDefaultGflopsPerThread = 10.0;
    constexpr double kMinFlopsToMeasure = 1e8;

} // namespace

double LiveBudget::rateGflops() const
{
    return m_measuredGflops > 0 ? m_measuredGflops : kDefaultGflopsPerThread * std::max(1, cpuThreadCount());
}

double LiveBudget::estimateMs(double flops) const { return flops / (rateGflops() * 1e6); }

void LiveBudget::record(double flops, double ms)
{
    if (flops >= kMinFlopsToMeasure && ms > 0)
        m_measuredGflops = flops / (ms * 1e6);
}

} // namespace convscope::gui
