// What a result must say about the machine it was measured on: CPU model, threads, library versions.
#pragma once

#include <map>
#include <string>

namespace convscope {

std::string cpuModel(); // from /proc/cpuinfo, "unknown CPU" otherwise
int cpuThreads(); // threads every CPU selection uses (cpu_threads.h: one OpenMP pool)
int64_t physicalMemoryBytes();
// "openblas": its config string, "openmp": version, "cpu_isa": the CPU's vector extensions (compute/cpu_features.h)
std::map<std::string, std::string> cpuLibraries();
std::string utcTimestamp(); // ISO 8601, seconds

} // namespace convscope
