#include "kernels/common/cuda_check.h"

#include "compute/error.h"
#include "kernels/common/device_info.h"

#include <cstdio>
#include <filesystem>

namespace convscope::gpu {

bool isStickyError(cudaError_t status)
{
    switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorContextIsDestroyed:
    case cudaErrorDevicesUnavailable:
    case cudaErrorExternalDevice:
        return true;
    default:
        return false;
    }
}

std::string mib(size_t bytes)
{
    char buf[64];
    const double m = static_cast<double>(bytes) / (1024.0 * 1024.0);
    if (m >= 10 || m == 0)
        std::snprintf(buf, sizeof buf, "%.0f MiB", m);
    else
        std::snprintf(buf, sizeof buf, "%.1f MiB", m);
    return buf;
}

void throwOutOfMemory(const std::string& what, size_t askedBytes)
{
    // The failed allocation left no sticky error, so asking what is free is safe; clear the error state
    // first so it does not leak into the next call.
    (void)cudaGetLastError();
    size_t freeBytes = 0, totalBytes = 0;
    std::string tail;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess)
        tail = ", " + mib(freeBytes) + " free (of " + mib(totalBytes) + ")";
    else
        (void)cudaGetLastError();
    throw OutOfMemoryError(what + ": out of device memory: asked " + mib(askedBytes) + tail);
}

void check(cudaError_t status, const char* what, const char* file, int line)
{
    if (status == cudaSuccess)
        return;
    const std::string where = std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
    const std::string message
        = std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ") in " + what + " at " + where;
    if (status == cudaErrorMemoryAllocation)
        throw OutOfMemoryError("out of device memory: " + message);
    if (isStickyError(status)) {
        markPoisoned("the CUDA context is unusable after " + message + "; restart ConvScope to use the GPU again");
        throw Error(message + " — the CUDA context is now unusable; restart ConvScope to use the GPU again");
    }
    // Non-sticky errors are returned once and then cleared, so the next call starts clean.
    (void)cudaGetLastError();
    throw Error("CUDA error " + message);
}

void checkLaunch(const char* kernel, const char* file, int line)
{
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess)
        check(status, (std::string("launch of ") + kernel).c_str(), file, line);
}

} // namespace convscope::gpu
