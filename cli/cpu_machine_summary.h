// The line `bench` prints about the CPU a run's CPU selections used: cores, the threads each used, the measured copy
// bandwidth and GEMM rate, OpenBLAS's build and core, so figures from different machines read side by side.
#pragma once

#include "compute/backend.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace convscope::cli {

// Empty when no selection runs on the CPU (cpu.*, onednn.*); otherwise one line, and the same facts in *json.
std::string cpuMachineSummary(const std::vector<Selection>& selections, nlohmann::ordered_json* json);

} // namespace convscope::cli
