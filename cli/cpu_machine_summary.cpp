// bench's CPU machine line (cpu_machine_summary.h).
#include "cli/cpu_machine_summary.h"

#include "compute/cpu/cpu_backend.h"
#include "compute/cpu_threads.h"
#include "compute/system_info.h"

#include <algorithm>
#include <sstream>
#include <thread>

namespace convscope::cli {

std::string cpuMachineSummary(const std::vector<Selection>& selections, nlohmann::ordered_json* json)
{
    std::vector<std::string> onCpu;
    for (const Selection& s : selections)
        if (s.backend == "cpu" || s.backend == "onednn")
            onCpu.push_back(s.str());
    if (onCpu.empty())
        return {};
    const DeviceCeilings c = calibrateCpu(); // after the run: the run's timings never share the cores with it
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const int threads = cpuThreadCount();
    std::ostringstream line;
    line.setf(std::ios::fixed);
    line.precision(1);
    line << "CPU: " << cpuModel() << ", " << cores << " logical cores; threads";
    for (const std::string& s : onCpu)
        line << " " << s << " " << threads;
    line << "; copy bandwidth " << c.bandwidthGBs << " GB/s (" << c.bandwidthMethod << "); sgemm " << c.peakGflops
         << " GFLOP/s; OpenBLAS core " << blasCoreName() << " (built " << blasThreading() << ", one thread per call)";
    if (json) {
        (*json)["cpu_machine"] = { { "model", cpuModel() }, { "logical_cores", cores }, { "threads", threads },
            { "selections", onCpu }, { "copy_bandwidth_gb_per_s", c.bandwidthGBs },
            { "bandwidth_method", c.bandwidthMethod }, { "sgemm_gflop_per_s", c.peakGflops },
            { "openblas_core", blasCoreName() }, { "openblas_threading", blasThreading() } };
    }
    return line.str();
}

} // namespace convscope::cli
