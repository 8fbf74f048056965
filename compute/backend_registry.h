// Every backend is registered here: the CPU backend is built in; GPU backends and oneDNN are loadable modules
// (libconvscope_cuda.so, libconvscope_cudnn.so, libconvscope_onednn.so) found next to the executable, in
// ../lib/convscope, or in the build tree. A module that is missing or fails to load still shows up, as an unavailable
// backend whose reason says why ("not built", "libcudnn.so.9: cannot open shared object file"), so
// ConvScope starts and works on a machine with no NVIDIA driver.
#pragma once

#include "compute/backend.h"

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace convscope {

// The module entry point. A module exports
//   extern "C" int convscope_register_module(convscope::BackendRegistry* registry, int abiVersion);
// returns 0 on success; it must not throw across the boundary.
// 2: Backend gained createTrainingSession (the training step), a new vtable slot a module built before it lacks.
inline constexpr int kModuleAbiVersion = 2;
class BackendRegistry;
using ModuleEntryPoint = int (*)(BackendRegistry*, int);
#define CONVSCOPE_MODULE_ENTRY "convscope_register_module"

class BackendRegistry {
public:
    // The process-wide registry with the CPU backend and every module it could find (loaded once).
    static BackendRegistry& instance();

    void add(std::shared_ptr<Backend> backend); // replaces a backend of the same name
    std::shared_ptr<Backend> find(const std::string& name) const; // null if none
    std::vector<std::shared_ptr<Backend>> backends() const; // in registration order

    // Looks for the known modules in `dirs` (in order) and loads each one found.
    void loadModules(const std::vector<std::filesystem::path>& dirs);
    // The folders modules are searched in: CONVSCOPE_MODULE_PATH (colon-separated), then the executable's
    // folder, ../lib/convscope beside it, and the build tree's module folder.
    static std::vector<std::filesystem::path> defaultModuleDirs();

    // Resolves a selection to its backend, checking that the backend exists, is available and has the
    // algorithm. Throws UnsupportedError naming the selection and the reason.
    std::shared_ptr<Backend> resolve(const Selection& selection) const;

private:
    mutable std::mutex m_mutex;
    std::vector<std::shared_ptr<Backend>> m_backends;
};

// A backend that could not be loaded: listed with its reason, never available.
std::shared_ptr<Backend> makeUnavailableBackend(
    const std::string& name, const std::string& description, const std::string& reason);

// What every module's entry point does: check the ABI (a mismatch registers the backend as unavailable with
// the reason), add the backend `make()` builds, and let no exception cross the C boundary.
template <typename Make>
int registerModuleBackend(BackendRegistry* registry, int abiVersion, const std::string& name,
    const std::string& description, const std::string& file, Make&& make) noexcept
{
    try {
        if (!registry)
            return 2;
        if (abiVersion != kModuleAbiVersion) {
            registry->add(makeUnavailableBackend(name, description,
                file + " was built for module ABI " + std::to_string(kModuleAbiVersion) + ", the program uses "
                    + std::to_string(abiVersion) + "; rebuild the module"));
            return 0;
        }
        registry->add(make());
        return 0;
    } catch (...) {
        return 1;
    }
}

} // namespace convscope
