// The CPU's roofline ceilings, measured in well under a second: the compute ceiling is the best of a few
// OpenBLAS sgemm calls (the fastest FP32 code on this machine, with every thread the backend uses); the
// bandwidth ceiling is the best of a few memcpy calls over buffers far larger than the last-level cache,
// counting bytes read plus bytes written. Best, not median: a ceiling is what the hardware can reach.
#include "compute/cpu/cpu_backend.h"

#include "compute/system_info.h"

#include <cblas.h>

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
    auto gemm = [&] {
        cblas_sgemm(
            CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, out.data(), n);
    };
    gemm(); // threads up, pages touched
    const double gemmS = bestSeconds(5, gemm);
    c.peakGflops = 2.0 * n * n * double(n) / gemmS / 1e9;
    c.computeMethod
        = "OpenBLAS sgemm " + std::to_string(n) + "×" + std::to_string(n) + "×" + std::to_string(n) + ", best of 5";

    constexpr size_t bytes = size_t(256) << 20;
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    std::memcpy(dst.data(), src.data(), bytes);
    const double copyS = bestSeconds(4, [&] { std::memcpy(dst.data(), src.data(), bytes); });
    c.bandwidthGBs = 2.0 * double(bytes) / copyS / 1e9;
    c.bandwidthMethod = "memcpy of 256 MiB (one thread), best of 4, bytes read + written";
    return c;
}

} // namespace convscope
