// `convscope-cli export IN OUT`: a network file or an ONNX model, written as
//   OUT.onnx  an ONNX model (opset 17, weights included, checked by ONNX's checker) that onnxruntime and PyTorch run;
//   OUT.json  ConvScope's network file, with an imported model's weights as .npy in OUT's folder (OUT.weights/).
// Open → save → export gives the same outputs; the tests check both round trips.
#include "cli/commands.h"
#include "cli/run_support.h"

#include "compute/error.h"
#include "compute/network_weights.h"
#include "compute/onnx_model.h"

#include <filesystem>
#include <iostream>

namespace convscope::cli {

Command addExportCommand(CLI::App& app)
{
    auto* cmd = app.add_subcommand("export", "Write a network as an ONNX model (.onnx) or as ConvScope JSON (.json)");
    struct Args {
        std::string in, out;
        int64_t batch = 0;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("network", a->in, "network file (.json) or ONNX model (.onnx)")->required();
    cmd->add_option("output", a->out, "model.onnx, or network.json (weights as .npy beside it)")->required();
    addBatchOption(cmd, a->batch);
    return [a]() {
        const Network net = openNetwork(a->in, a->batch);
        std::string ext = std::filesystem::path(a->out).extension().string();
        for (char& c : ext)
            c = char(std::tolower(static_cast<unsigned char>(c)));
        if (ext == ".onnx") {
            exportOnnxModel(net, a->out);
            std::cout << "wrote " << a->out << ": " << net.layers.size() << " layers as an ONNX model (opset 17)\n";
        } else if (ext == ".json") {
            saveNetworkWithWeights(net, a->out);
            std::cout << "wrote " << a->out << ": " << net.layers.size() << " layers"
                      << (hasEmbeddedWeights(net)
                                 ? ", weights in " + std::filesystem::path(a->out).stem().string() + ".weights/"
                                 : std::string())
                      << "\n";
        } else {
            throw InputError(
                "export writes .onnx (an ONNX model) or .json (a ConvScope network), not \"" + a->out + "\"");
        }
        return 0;
    };
}

} // namespace convscope::cli
