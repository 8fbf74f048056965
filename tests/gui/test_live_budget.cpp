// The live preview's time budget (gui/document/live_budget.h): judged in time at a rate per CPU thread until a large
// live run measures the machine, and small runs never lower the rate.
#include "compute/cpu_threads.h"
#include "gui/document/live_budget.h"

#include <catch2/catch.hpp>

using namespace convscope;
using namespace convscope::gui;

TEST_CASE("live budget: a time estimate, measured by large live runs only", "[live]")
{
    setCpuThreadCount(2);
    LiveBudget budget;
    CHECK(LiveBudget::selection().str() == "cpu.tap_gemm");
    // Before any run: 10 GFLOP/s a thread, so ResNet-18 (3.6 GFLOP) is live on 2 threads and VGG-16 (31) is not.
    CHECK(budget.rateGflops() == Approx(20.0));
    CHECK(budget.fits(3.6e9));
    CHECK_FALSE(budget.fits(31e9));
    // A LeNet-sized run (overhead-bound) leaves the rate alone.
    budget.record(4e5, 0.5);
    CHECK(budget.rateGflops() == Approx(20.0));
    // A large run measures the machine: 3.6 GFLOP in 6 ms is 600 GFLOP/s, so VGG-16 becomes live.
    budget.record(3.6e9, 6.0);
    CHECK(budget.rateGflops() == Approx(600.0));
    CHECK(budget.estimateMs(31e9) == Approx(31e9 / 600e6));
    CHECK(budget.fits(31e9));
    // And a slow machine keeps large networks off the live preview.
    budget.record(3.6e9, 400.0);
    CHECK_FALSE(budget.fits(3.6e9));
    setCpuThreadCount(0);
}
