// What a GPU backend says about the machine: is there a driver and a device this build can run on
// (availability), which device, driver and runtime (info / run metadata), and whether an earlier fault
// poisoned the CUDA context (then the backend stays unavailable, with that reason, for the rest of the
// process instead of taking the program down).
#pragma once

#include "compute/backend.h"

#include <map>
#include <string>

namespace convscope::gpu {

// Available, or a reason a person can act on: "no CUDA driver found", "no CUDA device",
// "the NVIDIA driver (CUDA 12.2) is older than this build needs (CUDA 13.0); update the driver",
// "GPU 'Tesla T4' (compute capability 7.5) is not supported by this build (needs 8.0+)",
// or the poisoned-context reason. The device query runs once per process; the poisoned flag is read live.
Availability queryAvailability();

// "device", "compute_capability", "sm_count", "memory", "driver", "cuda_runtime" for the selected device.
std::map<std::string, std::string> deviceInfo();

// Sticky CUDA errors call this; the first reason wins.
void markPoisoned(const std::string& reason);
bool isPoisoned();
std::string poisonReason();

// Throws UnsupportedError with the availability reason unless the device can be used now.
void requireUsable();

// The device ConvScope's GPU backends run on (CONVSCOPE_CUDA_DEVICE, default 0), made current on the
// calling thread.
int selectDevice();

// "13.0" from 13000.
std::string cudaVersionString(int version);

} // namespace convscope::gpu
