// The CPU side's threading model (cpu_threads.h): one OpenMP pool, OpenBLAS on the calling thread.
#include "compute/cpu_threads.h"

#include "compute/cpu_features.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>

namespace convscope {

namespace {

    int defaultThreadCount()
    {
        static const int threads = [] {
            if (const char* env = std::getenv("CONVSCOPE_THREADS")) {
                char* end = nullptr;
                const long n = std::strtol(env, &end, 10);
                if (end != env && *end == '\0' && n >= 1 && n <= 4096)
                    return int(n);
            }
            return omp_get_max_threads();
        }();
        return threads;
    }

    std::atomic<int> g_override { 0 };

} // namespace

// OpenBLAS's openmp flavour implements openblas_set_num_threads with omp_set_num_threads, which would shrink the
// calling thread's team too: its own size is put back.
void keepBlasOnCallingThread()
{
    static std::once_flag once;
    std::call_once(once, [] {
        const int team = omp_get_max_threads();
        openblas_set_num_threads(1);
        omp_set_num_threads(team);
    });
}

int cpuThreadCount()
{
    const int n = g_override.load(std::memory_order_relaxed);
    return n > 0 ? n : defaultThreadCount();
}

void setCpuThreadCount(int threads) { g_override.store(threads > 0 ? threads : 0, std::memory_order_relaxed); }

void enterCpuThreadPolicy()
{
    keepBlasOnCallingThread();
    const int n = cpuThreadCount();
    if (omp_get_max_threads() != n)
        omp_set_num_threads(n);
}

std::string blasThreading()
{
    switch (openblas_get_parallel()) {
    case 0:
        return "serial";
    case 1:
        return "pthread";
    case 2:
        return "openmp";
    default:
        return "unknown";
    }
}

int blasThreadCount() { return openblas_get_num_threads(); }

bool chooseKnownBlasCore()
{
    if (std::getenv("OPENBLAS_CORETYPE"))
        return false;
    std::string core = blasCoreName();
    std::transform(core.begin(), core.end(), core.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (core != "prescott")
        return false;
    const CpuFeatures& f = cpuFeatures();
    const char* better = f.avx512f ? "SkylakeX" : f.avx2 && f.fma ? "Haswell" : nullptr;
    if (!better)
        return false;
    setenv("OPENBLAS_CORETYPE", better, 1);
    return true;
}

std::string blasCoreName()
{
    const char* name = openblas_get_corename();
    return name ? name : "unknown";
}

} // namespace convscope
