#include "kernels/common/gpu_clocks.h"

#include <cuda_runtime_api.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>

namespace convscope::gpu {

namespace {
    // The few NVML C declarations this file uses, mirrored by hand so that the build needs neither nvml.h (the
    // CUDA toolkit does not always ship it) nor libnvidia-ml (it comes with the driver, not the toolkit). Each
    // names the NVML API it mirrors; NVML's enums are C enums, passed and returned as int.
    using NvmlDevice = struct NvmlDeviceOpaque*; // nvmlDevice_t (a pointer to the opaque struct nvmlDevice_st)
    constexpr int kNvmlSuccess = 0; // nvmlReturn_t NVML_SUCCESS
    constexpr int kNvmlClockSm = 1; // nvmlClockType_t NVML_CLOCK_SM
    constexpr int kNvmlClockMem = 2; // nvmlClockType_t NVML_CLOCK_MEM
    constexpr int kNvmlTemperatureGpu = 0; // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU
    constexpr int kNvmlPstateUnknown = 32; // nvmlPstates_t NVML_PSTATE_UNKNOWN (P0..P15 are 0..15)

    using NvmlInit = int (*)(); // nvmlReturn_t nvmlInit_v2(void)
    using NvmlErrorString = const char* (*)(int); // const char* nvmlErrorString(nvmlReturn_t)
    // nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device)
    using NvmlHandleByPciBusId = int (*)(const char*, NvmlDevice*);
    // nvmlReturn_t nvmlDeviceGetClockInfo / nvmlDeviceGetMaxClockInfo / nvmlDeviceGetApplicationsClock
    //     (nvmlDevice_t, nvmlClockType_t, unsigned int* clockMHz)
    using NvmlClock = int (*)(NvmlDevice, int, unsigned int*);
    // nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int* temp)
    using NvmlTemperature = int (*)(NvmlDevice, int, unsigned int*);
    // nvmlReturn_t nvmlDeviceGetPowerUsage / nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t, unsigned int* milliwatts)
    using NvmlMilliwatts = int (*)(NvmlDevice, unsigned int*);
    // nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t, nvmlPstates_t* pState)
    using NvmlPstate = int (*)(NvmlDevice, int*);
    // nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t, unsigned long long* clocksEventReasons),
    // called nvmlDeviceGetCurrentClocksThrottleReasons before driver 535 (same signature, same bits)
    using NvmlReasons = int (*)(NvmlDevice, unsigned long long*);

    constexpr const char* kLibrary = "libnvidia-ml.so.1";

    // The library, loaded and initialised once per process and kept (no nvmlShutdown: NVML is cheap to leave
    // initialised, and the process may read clocks again for the next selection).
    struct Nvml {
        std::string failure; // why nothing can be read; empty when NVML is ready
        NvmlErrorString errorString = nullptr;
        NvmlHandleByPciBusId handleByPciBusId = nullptr;
        NvmlClock clock = nullptr;
        NvmlClock maxClock = nullptr;
        NvmlClock appClock = nullptr;
        NvmlTemperature temperature = nullptr;
        NvmlMilliwatts power = nullptr;
        NvmlMilliwatts powerLimit = nullptr;
        NvmlPstate pstate = nullptr;
        NvmlReasons reasons = nullptr;

        // NVML's words for a status: "Not Supported".
        std::string text(int status) const
        {
            const char* words = errorString ? errorString(status) : nullptr;
            return words ? std::string(words) : "NVML error " + std::to_string(status);
        }
        // The entry for a failed query: "unavailable: Not Supported".
        std::string failed(int status) const { return "unavailable: " + text(status); }
    };

    template <class Fn> Fn symbol(void* library, const char* name)
    {
        // POSIX guarantees a function's dlsym address converts to a function pointer.
        return reinterpret_cast<Fn>(dlsym(library, name));
    }

    Nvml load()
    {
        Nvml n;
        (void)dlerror();
        void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            const char* error = dlerror();
            if (!error || std::strstr(error, "No such file"))
                n.failure = std::string(kLibrary) + " not found (no NVIDIA driver installed)";
            else
                n.failure = std::string("cannot load ") + kLibrary + ": " + error;
            return n;
        }
        const auto init = symbol<NvmlInit>(library, "nvmlInit_v2");
        n.errorString = symbol<NvmlErrorString>(library, "nvmlErrorString");
        n.handleByPciBusId = symbol<NvmlHandleByPciBusId>(library, "nvmlDeviceGetHandleByPciBusId_v2");
        const char* lacking = !init ? "nvmlInit_v2"
            : !n.errorString        ? "nvmlErrorString"
            : !n.handleByPciBusId   ? "nvmlDeviceGetHandleByPciBusId_v2"
                                    : nullptr;
        if (lacking) {
            n.failure = std::string(kLibrary) + " has no " + lacking + " (the NVIDIA driver is too old)";
            dlclose(library);
            return n;
        }
        const int status = init();
        if (status != kNvmlSuccess) {
            n.failure = "nvmlInit_v2 failed: " + n.text(status);
            dlclose(library);
            return n;
        }
        // The readings: each one missing only makes its own entries unavailable.
        n.clock = symbol<NvmlClock>(library, "nvmlDeviceGetClockInfo");
        n.maxClock = symbol<NvmlClock>(library, "nvmlDeviceGetMaxClockInfo");
        n.appClock = symbol<NvmlClock>(library, "nvmlDeviceGetApplicationsClock");
        n.temperature = symbol<NvmlTemperature>(library, "nvmlDeviceGetTemperature");
        n.power = symbol<NvmlMilliwatts>(library, "nvmlDeviceGetPowerUsage");
        n.powerLimit = symbol<NvmlMilliwatts>(library, "nvmlDeviceGetEnforcedPowerLimit");
        n.pstate = symbol<NvmlPstate>(library, "nvmlDeviceGetPerformanceState");
        n.reasons = symbol<NvmlReasons>(library, "nvmlDeviceGetCurrentClocksEventReasons");
        if (!n.reasons)
            n.reasons = symbol<NvmlReasons>(library, "nvmlDeviceGetCurrentClocksThrottleReasons");
        return n;
    }

    const Nvml& nvml()
    {
        static std::once_flag once;
        static Nvml n;
        std::call_once(once, [] {
            try {
                n = load();
            } catch (const std::exception& e) { // std::string allocation; keep the promise never to throw
                n = Nvml {};
                n.failure = e.what();
            }
        });
        return n;
    }

    std::map<std::string, std::string> unavailable(const std::string& why)
    {
        return { { "gpu_clocks", "unavailable: " + why } };
    }

    std::string missing(const char* name) { return std::string("unavailable: ") + kLibrary + " has no " + name; }

    std::string clockMhz(const Nvml& n, NvmlClock fn, const char* name, NvmlDevice device, int type)
    {
        if (!fn)
            return missing(name);
        unsigned int mhz = 0;
        const int status = fn(device, type, &mhz);
        return status == kNvmlSuccess ? std::to_string(mhz) : n.failed(status);
    }

    std::string watts(const Nvml& n, NvmlMilliwatts fn, const char* name, NvmlDevice device)
    {
        if (!fn)
            return missing(name);
        unsigned int milliwatts = 0;
        const int status = fn(device, &milliwatts);
        if (status != kNvmlSuccess)
            return n.failed(status);
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", milliwatts / 1000.0);
        return buf;
    }

    std::map<std::string, std::string> read()
    {
        const Nvml& n = nvml();
        if (!n.failure.empty())
            return unavailable(n.failure);

        int cudaDevice = 0;
        cudaError_t cudaStatus = cudaGetDevice(&cudaDevice);
        char busId[64] = {};
        if (cudaStatus == cudaSuccess)
            cudaStatus = cudaDeviceGetPCIBusId(busId, sizeof busId, cudaDevice);
        if (cudaStatus != cudaSuccess) {
            (void)cudaGetLastError(); // not to be mistaken for a launch error by a later checkLaunch
            return unavailable(
                std::string("no PCI bus id for the current CUDA device (") + cudaGetErrorName(cudaStatus) + ")");
        }
        NvmlDevice device = nullptr;
        if (const int status = n.handleByPciBusId(busId, &device); status != kNvmlSuccess)
            return unavailable("NVML has no device at PCI bus id " + std::string(busId) + " (CUDA device "
                + std::to_string(cudaDevice) + "): " + n.text(status));

        std::map<std::string, std::string> out;
        out["clock_sm_mhz"] = clockMhz(n, n.clock, "nvmlDeviceGetClockInfo", device, kNvmlClockSm);
        out["clock_mem_mhz"] = clockMhz(n, n.clock, "nvmlDeviceGetClockInfo", device, kNvmlClockMem);
        out["clock_sm_max_mhz"] = clockMhz(n, n.maxClock, "nvmlDeviceGetMaxClockInfo", device, kNvmlClockSm);
        out["clock_mem_max_mhz"] = clockMhz(n, n.maxClock, "nvmlDeviceGetMaxClockInfo", device, kNvmlClockMem);
        out["clock_sm_app_mhz"] = clockMhz(n, n.appClock, "nvmlDeviceGetApplicationsClock", device, kNvmlClockSm);
        out["clock_mem_app_mhz"] = clockMhz(n, n.appClock, "nvmlDeviceGetApplicationsClock", device, kNvmlClockMem);

        std::string& temperature = out["gpu_temperature_c"];
        if (!n.temperature) {
            temperature = missing("nvmlDeviceGetTemperature");
        } else {
            unsigned int celsius = 0;
            const int status = n.temperature(device, kNvmlTemperatureGpu, &celsius);
            temperature = status == kNvmlSuccess ? std::to_string(celsius) : n.failed(status);
        }

        out["gpu_power_w"] = watts(n, n.power, "nvmlDeviceGetPowerUsage", device);
        out["gpu_power_limit_w"] = watts(n, n.powerLimit, "nvmlDeviceGetEnforcedPowerLimit", device);

        std::string& pstate = out["gpu_pstate"];
        if (!n.pstate) {
            pstate = missing("nvmlDeviceGetPerformanceState");
        } else {
            int p = kNvmlPstateUnknown;
            const int status = n.pstate(device, &p);
            if (status != kNvmlSuccess)
                pstate = n.failed(status);
            else
                pstate = p >= 0 && p < kNvmlPstateUnknown ? "P" + std::to_string(p) : "unknown";
        }

        std::string& reasons = out["clock_event_reasons"];
        if (!n.reasons) {
            reasons = missing("nvmlDeviceGetCurrentClocksEventReasons");
        } else {
            unsigned long long mask = 0;
            const int status = n.reasons(device, &mask);
            reasons = status == kNvmlSuccess ? describeClockEventReasons(mask) : n.failed(status);
        }

        out["clocks_read"] = "NVML at the end of the run";
        return out;
    }
} // namespace

std::map<std::string, std::string> gpuClocks()
{
    try {
        return read();
    } catch (const std::exception& e) {
        return unavailable(e.what());
    } catch (...) {
        return unavailable("unknown error");
    }
}

std::string describeClockEventReasons(unsigned long long mask)
{
    // nvmlClocksEventReason* (nvml.h; the older nvmlClocksThrottleReason* names have the same bits).
    struct Reason {
        unsigned long long bit;
        const char* words;
    };
    static constexpr Reason kReasons[] = {
        { 0x1ULL, "gpu idle" }, // nvmlClocksEventReasonGpuIdle
        { 0x2ULL, "applications clocks setting" }, // nvmlClocksEventReasonApplicationsClocksSetting
        { 0x4ULL, "sw power cap" }, // nvmlClocksEventReasonSwPowerCap
        { 0x8ULL, "hw slowdown" }, // nvmlClocksThrottleReasonHwSlowdown
        { 0x10ULL, "sync boost" }, // nvmlClocksEventReasonSyncBoost
        { 0x20ULL, "sw thermal slowdown" }, // nvmlClocksEventReasonSwThermalSlowdown
        { 0x40ULL, "hw thermal slowdown" }, // nvmlClocksThrottleReasonHwThermalSlowdown
        { 0x80ULL, "hw power brake" }, // nvmlClocksThrottleReasonHwPowerBrakeSlowdown
        { 0x100ULL, "display clock setting" }, // nvmlClocksEventReasonDisplayClockSetting
    };
    if (mask == 0)
        return "none"; // nvmlClocksEventReasonNone
    std::string words;
    unsigned long long rest = mask;
    for (const auto& r : kReasons) {
        if (mask & r.bit) {
            words += (words.empty() ? "" : ", ") + std::string(r.words);
            rest &= ~r.bit;
        }
    }
    if (rest) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "other (0x%llx)", rest);
        words += (words.empty() ? "" : ", ") + std::string(buf);
    }
    return words;
}

} // namespace convscope::gpu
