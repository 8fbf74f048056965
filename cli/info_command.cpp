// `convscope-cli info`: backends, algorithms, availability with reasons, CPU, devices, library versions.
#include "cli/commands.h"

#include "compute/backend_registry.h"
#include "compute/cpu_features.h"
#include "compute/nvtx.h"
#include "compute/runtime_paths.h"
#include "compute/system_info.h"

#include "convscope_config.h"

#include <iostream>

namespace convscope::cli {

Command addInfoCommand(CLI::App& app)
{
    app.add_subcommand("info", "Backends, algorithms, availability, CPU, devices and library versions");
    return []() {
        std::cout << "ConvScope " << CONVSCOPE_VERSION << "\n";
        std::cout << "CPU: " << cpuModel() << ", " << cpuThreads() << " threads\n";
        for (const auto& [k, v] : cpuLibraries())
            std::cout << k << ": " << v << "\n";
        // Which half-precision formats the CPU computes natively (the onednn backend's --math bf16 / fp16 need it).
        const CpuFeatures& f = cpuFeatures();
        std::cout << "CPU BF16: " << (f.nativeBf16() ? f.bf16Units() : "none (no AVX512-BF16, no AMX-BF16)")
                  << "\nCPU FP16: " << (f.nativeFp16() ? f.fp16Units() : "none (no AVX512-FP16, no AMX-FP16)")
                  << "\nCPU AMX: " << (f.amxTile ? "yes" : "no") << "\n";
        std::cout << "NVTX ranges: " << (nvtx::enabled() ? "on (domain ConvScope)" : "off (built without NVTX)")
                  << "\n";
        std::cout << "ONNX import and export: "
                  << (CONVSCOPE_WITH_ONNX ? std::string("built (libonnx ") + CONVSCOPE_ONNX_VERSION + ")"
                                          : std::string("not built: ") + CONVSCOPE_ONNX_WHY)
                  << "\n";
        std::cout << "data-parallel training (train --nproc-per-node / --distributed): "
                  << (CONVSCOPE_WITH_NCCL ? std::string("built with NCCL (cudnn.auto)")
                                          : std::string("not built: ") + CONVSCOPE_NCCL_WHY)
                  << "\n";
        std::cout << "module folders:";
        for (const auto& d : BackendRegistry::defaultModuleDirs())
            std::cout << " " << d.string();
        std::cout << "\ndata folder: " << (dataDir().empty() ? "(none found)" : dataDir().string());
        std::cout << "\n\nbackends:\n";
        for (const auto& b : BackendRegistry::instance().backends()) {
            const Availability a = b->availability();
            std::cout << "  " << b->name() << " — " << b->description() << "\n";
            std::cout << "    " << (a.available ? "available" : "unavailable: " + a.reason) << "\n";
            for (const auto& alg : b->algorithms())
                std::cout << "    " << b->name() << "." << alg.name << "  " << alg.description << "\n";
            for (const auto& [k, v] : b->info())
                std::cout << "    " << k << ": " << v << "\n";
        }
        return 0;
    };
}

} // namespace convscope::cli
