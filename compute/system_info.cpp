#include "compute/system_info.h"

#include "compute/cpu_features.h"
#include "compute/cpu_threads.h"

#include <cblas.h>
#include <chrono>
#include <ctime>
#include <fstream>
#include <unistd.h>

namespace convscope {

std::string cpuModel()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos)
                return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    }
    return "unknown CPU";
}

int cpuThreads() { return cpuThreadCount(); }

int64_t physicalMemoryBytes()
{
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? int64_t(pages) * int64_t(size) : int64_t(8) << 30;
}

std::map<std::string, std::string> cpuLibraries()
{
    std::map<std::string, std::string> libs;
    libs["openblas"] = openblas_get_config();
    libs["openblas_threads"] = "1 per OpenMP thread (built " + blasThreading() + ", core " + blasCoreName() + ")";
    libs["openmp"] = std::to_string(_OPENMP);
    // The vector and matrix extensions (CPUID): whether BF16/FP16 can run natively on this CPU (onednn --math bf16).
    libs["cpu_isa"] = cpuFeatures().str();
    // The clock the kernel reports for the first core (under a hypervisor often the nominal TSC rate; the measured
    // one is in docs/PERFORMANCE.md, tools/cpu_fma_peak.cpp).
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("cpu MHz", 0) == 0 && line.find(':') != std::string::npos) {
            libs["cpu_mhz"] = line.substr(line.find(':') + 2);
            break;
        }
    return libs;
}

std::string utcTimestamp()
{
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm {};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

} // namespace convscope
