#include "compute/backend_registry.h"

#include "compute/cpu/cpu_backend.h"
#include "compute/error.h"
#include "compute/runtime_paths.h"

#include "convscope_config.h"

#include <dlfcn.h>

namespace convscope {

namespace {

    struct KnownModule {
        const char* backend;
        const char* file;
        const char* description;
        bool built;
        const char* notBuiltWhy; // configure's reason, when !built
    };
    const KnownModule kModules[] = {
        { "cuda", "libconvscope_cuda.so", "our CUDA kernels (direct, tiled, implicit GEMM)", CONVSCOPE_WITH_CUDA,
            CONVSCOPE_CUDA_WHY },
        { "cudnn", "libconvscope_cudnn.so", "NVIDIA cuDNN (and cuBLAS for linear layers)", CONVSCOPE_WITH_CUDNN,
            CONVSCOPE_CUDNN_WHY },
        { "onednn", "libconvscope_onednn.so", "Intel oneDNN, the CPU library baseline", CONVSCOPE_WITH_ONEDNN,
            CONVSCOPE_ONEDNN_WHY },
    };

    class UnavailableBackend final : public Backend {
    public:
        UnavailableBackend(std::string name, std::string description, std::string reason)
            : m_name(std::move(name))
            , m_description(std::move(description))
            , m_reason(std::move(reason))
        {
        }
        std::string name() const override { return m_name; }
        std::string description() const override { return m_description; }
        std::vector<AlgorithmInfo> algorithms() const override { return {}; }
        Availability availability() const override { return { false, m_reason }; }
        Support supports(const std::string&, const LayerSpec&, const LayerShape&) const override
        {
            return { false, m_reason };
        }
        std::unique_ptr<BackendSession> createSession(const std::string&, const SessionOptions&) override
        {
            throw UnsupportedError(m_name + " is unavailable: " + m_reason);
        }

    private:
        std::string m_name, m_description, m_reason;
    };

} // namespace

std::shared_ptr<Backend> makeUnavailableBackend(
    const std::string& name, const std::string& description, const std::string& reason)
{
    return std::make_shared<UnavailableBackend>(name, description, reason);
}

BackendRegistry& BackendRegistry::instance()
{
    static BackendRegistry* registry = [] {
        auto* r = new BackendRegistry; // never destroyed: modules stay loaded until exit
        r->add(makeCpuBackend());
        r->loadModules(defaultModuleDirs());
        return r;
    }();
    return *registry;
}

void BackendRegistry::add(std::shared_ptr<Backend> backend)
{
    std::lock_guard lock(m_mutex);
    for (auto& b : m_backends)
        if (b->name() == backend->name()) {
            b = std::move(backend);
            return;
        }
    m_backends.push_back(std::move(backend));
}

std::shared_ptr<Backend> BackendRegistry::find(const std::string& name) const
{
    std::lock_guard lock(m_mutex);
    for (const auto& b : m_backends)
        if (b->name() == name)
            return b;
    return nullptr;
}

std::vector<std::shared_ptr<Backend>> BackendRegistry::backends() const
{
    std::lock_guard lock(m_mutex);
    return m_backends;
}

std::vector<std::filesystem::path> BackendRegistry::defaultModuleDirs() { return moduleSearchDirs(); }

void BackendRegistry::loadModules(const std::vector<std::filesystem::path>& dirs)
{
    for (const KnownModule& m : kModules) {
        if (!m.built) {
            add(makeUnavailableBackend(m.backend, m.description,
                std::string("not built: this ConvScope was built without the ") + m.backend + " module ("
                    + m.notBuiltWhy + ")"));
            continue;
        }
        std::filesystem::path found;
        for (const auto& dir : dirs) {
            std::error_code ec;
            if (std::filesystem::exists(dir / m.file, ec)) {
                found = dir / m.file;
                break;
            }
        }
        if (found.empty()) {
            add(makeUnavailableBackend(m.backend, m.description,
                std::string("not found: ") + m.file
                    + " is not next to the engine library or the program (set CONVSCOPE_MODULE_PATH)"));
            continue;
        }
        dlerror();
        void* handle = dlopen(found.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* err = dlerror();
            add(makeUnavailableBackend(m.backend, m.description,
                std::string("cannot load ") + m.file + ": " + (err ? err : "unknown dlopen error")));
            continue;
        }
        auto entry = reinterpret_cast<ModuleEntryPoint>(dlsym(handle, CONVSCOPE_MODULE_ENTRY));
        if (!entry) {
            add(makeUnavailableBackend(
                m.backend, m.description, std::string(m.file) + " has no entry point " CONVSCOPE_MODULE_ENTRY));
            continue;
        }
        const int rc = entry(this, kModuleAbiVersion);
        if (rc != 0 || !find(m.backend))
            add(makeUnavailableBackend(m.backend, m.description,
                std::string(m.file) + " failed to register (code " + std::to_string(rc) + ")"));
    }
}

std::shared_ptr<Backend> BackendRegistry::resolve(const Selection& selection) const
{
    auto backend = find(selection.backend);
    if (!backend) {
        std::string names;
        for (const auto& b : backends())
            names += (names.empty() ? "" : ", ") + b->name();
        throw UnsupportedError(
            "unknown backend \"" + selection.backend + "\" in " + selection.str() + " (known: " + names + ")");
    }
    const Availability a = backend->availability();
    if (!a.available)
        throw UnsupportedError(selection.str() + ": backend " + selection.backend + " is unavailable: " + a.reason);
    std::string names;
    for (const auto& alg : backend->algorithms()) {
        if (alg.name == selection.algorithm)
            return backend;
        names += (names.empty() ? "" : ", ") + alg.name;
    }
    throw UnsupportedError(selection.str() + ": backend " + selection.backend + " has no algorithm \""
        + selection.algorithm + "\" (it has: " + names + ")");
}

} // namespace convscope
