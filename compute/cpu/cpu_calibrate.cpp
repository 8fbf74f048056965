// The CPU's roofline ceilings, measured in well under a second: the compute ceiling is the best of a few
// OpenBLAS sgemm calls (split across every thread the backend uses); the bandwidth ceiling is the best of a few
// memcpy calls, each split across those threads, over buffers far larger than the last-level cache,
// counting bytes read plus bytes written. Best, not median: a ceiling is what the hardware can reach.
#include "compute/cpu/cpu_backend.h"

#include "compute/cpu/op_common.h"
#include "compute/cpu_threads.h"
#include "compute/system_info.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace convscope {

namespace {
    template <class F> double bestSeconds(int runs, F&& f)
    {
        double best = 1e30;
        for (int i = 0; i < runs; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            f();
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return best;
    }
} // namespace

DeviceCeilings calibrateCpu()
{
    DeviceCeilings c;
    c.device = cpuModel() + " (" + std::to_string(cpuThreads()) + " threads)";

    constexpr int n = 1024;
    std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), out(size_t(n) * n, 0.f);
    enterCpuThreadPolicy();
    auto gemm
        = [&] { cpu::detail::parallelSgemm(false, false, n, n, n, a.data(), n, b.data(), n, 0.f, out.data(), n); };
    gemm(); // threads up, pages touched
    const double gemmS = bestSeconds(5, gemm);
    c.peakGflops = 2.0 * n * n * double(n) / gemmS / 1e9;
    c.computeMethod = "OpenBLAS sgemm (split across the OpenMP team) " + std::to_string(n) + "×" + std::to_string(n)
        + "×" + std::to_string(n) + ", best of 5";

    constexpr size_t bytes = size_t(256) << 20;
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    // Every thread copies its own slice, as a parallel element-wise layer streams its share: one thread alone reaches
    // a fraction of a many-core machine's bandwidth.
    const int threads = cpuThreadCount();
    const auto copy = [&] {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int t = 0; t < threads; ++t) {
            const size_t begin = bytes / size_t(threads) * size_t(t);
            const size_t end = t + 1 == threads ? bytes : begin + bytes / size_t(threads);
            std::memcpy(dst.data() + begin, src.data() + begin, end - begin);
        }
    };
    copy();
    const double copyS = bestSeconds(4, copy);
    c.bandwidthGBs = 2.0 * double(bytes) / copyS / 1e9;
    c.bandwidthMethod
        = "memcpy of 256 MiB split across " + std::to_string(threads) + " threads, best of 4, bytes read + written";
    return c;
}

} // namespace convscope
