#include "kernels/common/device_info.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/probe_kernel.h"

#include <cstdlib>
#include <mutex>

namespace convscope::gpu {

namespace {
    std::mutex g_poisonMutex;
    std::string g_poisonReason;
    bool g_poisoned = false;

    Availability queryOnce()
    {
        int driverVersion = 0;
        // With the runtime linked statically this is the first call that touches libcuda.so.1; it reports 0
        // when no driver is installed at all.
        if (cudaDriverGetVersion(&driverVersion) != cudaSuccess || driverVersion == 0) {
            (void)cudaGetLastError();
            return { false, "no CUDA driver found (libcuda.so.1 is not installed or cannot be loaded)" };
        }
        int count = 0;
        const cudaError_t status = cudaGetDeviceCount(&count);
        if (status != cudaSuccess) {
            (void)cudaGetLastError();
            switch (status) {
            case cudaErrorNoDevice:
                return { false, "no CUDA device" };
            case cudaErrorInsufficientDriver:
                return { false,
                    "the NVIDIA driver (CUDA " + cudaVersionString(driverVersion)
                        + ") is older than this build needs (CUDA " + cudaVersionString(CUDART_VERSION)
                        + "); update the driver" };
            case cudaErrorSystemDriverMismatch:
            case cudaErrorCompatNotSupportedOnDevice:
                return { false,
                    std::string("the NVIDIA kernel driver and libcuda do not match: ") + cudaGetErrorString(status)
                        + "; reinstall or reboot after a driver update" };
            default:
                return { false,
                    std::string("CUDA cannot start: ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status)
                        + ")" };
            }
        }
        if (count == 0)
            return { false, "no CUDA device" };
        int device = 0;
        try {
            device = selectDevice();
        } catch (const std::exception& e) {
            return { false, e.what() };
        }
        const cudaError_t probe = probeKernelImage();
        if (probe != cudaSuccess) {
            (void)cudaGetLastError();
            cudaDeviceProp prop {};
            std::string name = "?";
            int major = 0, minor = 0;
            if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
                name = prop.name;
                major = prop.major;
                minor = prop.minor;
            }
            if (probe == cudaErrorNoKernelImageForDevice || probe == cudaErrorInvalidDeviceFunction)
                return { false,
                    "GPU '" + name + "' (compute capability " + std::to_string(major) + "." + std::to_string(minor)
                        + ") is not supported by this build; rebuild with -DCMAKE_CUDA_ARCHITECTURES="
                        + std::to_string(major) + std::to_string(minor) };
            return { false,
                std::string("CUDA cannot run kernels here: ") + cudaGetErrorName(probe) + " ("
                    + cudaGetErrorString(probe) + ")" };
        }
        return { true, {} };
    }
} // namespace

std::string cudaVersionString(int version)
{
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

void markPoisoned(const std::string& reason)
{
    std::lock_guard lock(g_poisonMutex);
    if (!g_poisoned) {
        g_poisoned = true;
        g_poisonReason = reason;
    }
}

bool isPoisoned()
{
    std::lock_guard lock(g_poisonMutex);
    return g_poisoned;
}

std::string poisonReason()
{
    std::lock_guard lock(g_poisonMutex);
    return g_poisonReason;
}

int selectDevice()
{
    int device = 0;
    if (const char* env = std::getenv("CONVSCOPE_CUDA_DEVICE"))
        device = std::atoi(env);
    int count = 0;
    CONVSCOPE_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
        throw UnsupportedError("CONVSCOPE_CUDA_DEVICE=" + std::to_string(device) + " but there are "
            + std::to_string(count) + " CUDA devices");
    CONVSCOPE_CUDA_CHECK(cudaSetDevice(device));
    return device;
}

Availability queryAvailability()
{
    // Device presence does not change while the program runs; ask once (thread-safe static).
    static const Availability once = queryOnce();
    if (!once.available)
        return once;
    if (isPoisoned())
        return { false, poisonReason() };
    return once;
}

void requireUsable()
{
    const Availability a = queryAvailability();
    if (!a.available)
        throw UnsupportedError(a.reason);
}

std::map<std::string, std::string> deviceInfo()
{
    std::map<std::string, std::string> info;
    if (!queryAvailability().available)
        return info;
    int device = 0, driver = 0, runtime = 0;
    if (cudaGetDevice(&device) != cudaSuccess)
        return info;
    cudaDeviceProp prop {};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return info;
    }
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    info["device"] = prop.name;
    info["device_index"] = std::to_string(device);
    info["compute_capability"] = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    info["sm_count"] = std::to_string(prop.multiProcessorCount);
    info["memory"] = mib(prop.totalGlobalMem);
    info["l2_cache"] = mib(static_cast<size_t>(prop.l2CacheSize));
    info["driver"] = "CUDA " + cudaVersionString(driver);
    info["cuda_runtime"] = cudaVersionString(runtime) + " (static)";
    return info;
}

} // namespace convscope::gpu
