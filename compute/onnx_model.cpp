// The always-built face of ONNX support: it forwards to compute/onnx/ when that was built and says why not
// otherwise, so callers never need the config header.
#include "compute/onnx_model.h"

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/network_json.h"

#include "convscope_config.h"

#if CONVSCOPE_WITH_ONNX
#include "compute/onnx/onnx_export.h"
#include "compute/onnx/onnx_import.h"
#endif

#include <fstream>

namespace convscope {

bool onnxSupported() { return CONVSCOPE_WITH_ONNX; }

std::string onnxUnsupportedReason() { return CONVSCOPE_WITH_ONNX ? std::string() : std::string(CONVSCOPE_ONNX_WHY); }

bool isOnnxFile(const std::filesystem::path& path)
{
    std::string ext = path.extension().string();
    for (char& c : ext)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    if (ext == ".onnx")
        return true;
    std::ifstream in(path, std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    head.resize(size_t(in.gcount()));
    return describeNonNetworkFile(head).find("ONNX") != std::string::npos;
}

#if !CONVSCOPE_WITH_ONNX
namespace {
    [[noreturn]] void notBuilt(const std::string& what)
    {
        throw UnsupportedError(what + ": an ONNX model, but this ConvScope was built without ONNX support ("
            + onnxUnsupportedReason() + ")");
    }
}
#endif

Network importOnnxModel(const std::filesystem::path& path, int64_t batch)
{
    const std::string what = path.filename().empty() ? path.string() : path.filename().string();
#if CONVSCOPE_WITH_ONNX
    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    Network net = onnx::importModel(readFile(path, path.string()), what, dir, batch);
    // PyTorch's exporter names every graph "main_graph" (older ones "torch-jit-export"): the file says more.
    if (net.name == "main_graph" || net.name == "torch-jit-export" || net.name == what)
        net.name = path.stem().string();
    return net;
#else
    (void)batch;
    notBuilt(what);
#endif
}

Network importOnnxBytes(
    const std::string& bytes, const std::string& what, const std::filesystem::path& baseDir, int64_t batch)
{
#if CONVSCOPE_WITH_ONNX
    return onnx::importModel(bytes, what, baseDir, batch);
#else
    (void)bytes, (void)baseDir, (void)batch;
    notBuilt(what);
#endif
}

std::string exportOnnxBytes(const Network& net)
{
#if CONVSCOPE_WITH_ONNX
    return onnx::exportModelBytes(net);
#else
    notBuilt(net.name);
#endif
}

void exportOnnxModel(const Network& net, const std::filesystem::path& path)
{
    writeFileAtomically(path, exportOnnxBytes(net));
}

std::string onnxSupportedOperators()
{
#if CONVSCOPE_WITH_ONNX
    return onnx::supportedOperators();
#else
    return {};
#endif
}

} // namespace convscope
