// The memory budget: the host memory one tensor and one run may take. Every size is checked against it before
// anything is allocated, so a network file, a weight file or an image that asks for a petabyte is refused with
// a message saying how much it would need, instead of taking the machine into swap or the OOM killer.
//
// It is a setting, in this order: setHostMemoryBudget() (convscope-cli --memory-budget, the window's setting
// "limits/memoryBudget"), else the environment variable CONVSCOPE_MEMORY_BUDGET, else half of the physical
// memory. A size is written "8G", "512MiB", "1.5GiB", "4000000000" (bytes) or "25%" (of physical memory).
// The device budget is the GPU modules' (SessionOptions::memoryBudgetBytes, default: the free device memory
// less a margin).
#pragma once

#include <cstdint>
#include <string>

namespace convscope {

inline constexpr double kDefaultHostMemoryShare = 0.5;

int64_t physicalMemory(); // bytes; 8 GiB when the system does not say
int64_t hostMemoryBudget(); // bytes, always > 0
void setHostMemoryBudget(int64_t bytes); // 0 = back to the default (environment, then share of RAM)
// "8G", "512MiB", "25%": bytes. Throws InputError naming `what` for anything else.
int64_t parseMemorySize(const std::string& text, const std::string& what);
std::string formatBytes(int64_t bytes); // "1.50 GiB", "12.0 MiB", "512 bytes"

// Throws InputError before an allocation of `bytes` larger than the budget: "<what> would need 1.50 TiB of
// host memory but the memory budget is 31.2 GiB (...)". Negative sizes are an InputError too.
void checkHostAllocation(int64_t bytes, const std::string& what);

} // namespace convscope
