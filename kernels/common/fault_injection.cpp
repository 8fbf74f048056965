#include "kernels/common/fault_injection.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"

#include <cstdlib>

namespace convscope::gpu {

// fault_kernels.cu
void launchInvalidConfiguration(cudaStream_t stream);
void launchIllegalAddress(cudaStream_t stream);

namespace {
    Fault parseKind(const std::string& kind, const std::string& spec)
    {
        if (kind == "oom")
            return Fault::OutOfMemory;
        if (kind == "unsupported")
            return Fault::Unsupported;
        if (kind == "launch")
            return Fault::Launch;
        if (kind == "poison")
            return Fault::Poison;
        throw InputError("fault injection \"" + spec + "\": unknown kind \"" + kind
            + "\" (oom, unsupported, launch or poison, optionally @backend.algorithm)");
    }
} // namespace

Fault injectedFault(const std::string& backend, const std::string& algorithm, const SessionOptions& options)
{
    std::string spec;
    if (const auto it = options.extra.find("fault_inject"); it != options.extra.end())
        spec = it->second;
    else if (const char* env = std::getenv("CONVSCOPE_FAULT_INJECT"))
        spec = env;
    const std::string selection = backend + "." + algorithm;
    size_t start = 0;
    while (start <= spec.size() && !spec.empty()) {
        const size_t comma = spec.find(',', start);
        const std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
        if (item.empty())
            continue;
        const size_t at = item.find('@');
        const Fault fault = parseKind(item.substr(0, at), spec);
        if (at == std::string::npos || item.substr(at + 1) == selection || item.substr(at + 1) == backend)
            return fault;
    }
    return Fault::None;
}

void injectPrepareFault(Fault fault, const std::string& selection)
{
    if (fault == Fault::OutOfMemory) {
        // A real allocation that cannot succeed, so the message and the error state are the runtime's own.
        DeviceBuffer impossible(size_t(1) << 50, selection + " (injected out-of-memory fault)");
        throw Error("internal error: a 1 PiB device allocation succeeded");
    }
    if (fault == Fault::Unsupported)
        throw UnsupportedError(selection
            + ": this configuration is unsupported (injected fault: fault_inject / "
              "CONVSCOPE_FAULT_INJECT)");
}

void injectPassFault(Fault fault, const std::string& selection, cudaStream_t stream)
{
    if (fault == Fault::Launch) {
        launchInvalidConfiguration(stream);
        CONVSCOPE_CUDA_CHECK_LAUNCH((selection + " injected launch fault").c_str());
    } else if (fault == Fault::Poison) {
        launchIllegalAddress(stream);
        CONVSCOPE_CUDA_CHECK_LAUNCH((selection + " injected poison fault").c_str());
    }
}

} // namespace convscope::gpu
