// The GPU's clocks, temperature, power and clock-event (throttle) reasons for the run metadata, so a report says
// whether a slow figure came from the code or from a GPU that was idling down, capped or hot. Read through NVML,
// which is loaded at run time (dlopen of libnvidia-ml.so.1, never linked): a build or a machine without the NVIDIA
// driver is unaffected and gets one entry saying why nothing was read.
#pragma once

#include <map>
#include <string>

namespace convscope::gpu {

// For the CUDA device current on the calling thread, matched to its NVML device by PCI bus id:
//   clock_sm_mhz, clock_mem_mhz            current SM and memory clocks
//   clock_sm_max_mhz, clock_mem_max_mhz    the highest clocks the GPU supports
//   clock_sm_app_mhz, clock_mem_app_mhz    the application clocks (the target clocks when not boosting)
//   gpu_temperature_c, gpu_power_w, gpu_power_limit_w (enforced), gpu_pstate ("P0")
//   clock_event_reasons                    describeClockEventReasons of the current reasons
//   clocks_read                            "NVML at the end of the run"
// A value NVML cannot give on this GPU reads "unavailable: <NVML's reason>". When nothing can be read (no
// libnvidia-ml.so.1, a symbol missing from it, nvmlInit_v2 failing, no CUDA device, no NVML device at that bus
// id) the map holds the single entry gpu_clocks = "unavailable: <why>". Never throws.
//
// These are instantaneous samples taken when called; GpuSessionBase::metadata() calls it after the timed passes
// (and the output fetches), so they describe the GPU as the run left it, not an average over the passes.
std::map<std::string, std::string> gpuClocks();

// NVML's clock-event reasons bit mask (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*) in words,
// comma-separated in bit order: 0 → "none", 0x1 → "gpu idle", 0x4 → "sw power cap", 0x24 → "sw power cap, sw
// thermal slowdown"; bits NVML had not defined when this was written read "other (0x...)".
std::string describeClockEventReasons(unsigned long long mask);

} // namespace convscope::gpu
