// `convscope-cli shapes NET.json`: per layer the type, the layers it reads when they are not the one above, output
// shape, parameters, FLOPs, the memory alive while it runs (a skip keeps its tensor alive) and the output-size
// formula with the numbers filled in; totals and the peak; invalid layers flagged with the reason (exit status 2).
#include "cli/commands.h"
#include "cli/run_support.h"
#include "cli/text_table.h"

#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/report.h"
#include "compute/shape_inference.h"

#include <iostream>

namespace convscope::cli {

namespace {
    std::string joinLines(const std::string& s)
    {
        std::string out;
        for (char c : s)
            out += c == '\n' ? std::string("; ") : std::string(1, c);
        return out;
    }
} // namespace

Command addShapesCommand(CLI::App& app)
{
    auto* cmd = app.add_subcommand("shapes", "Output shape, formula and cost of every layer");
    auto path = std::make_shared<std::string>();
    auto batch = std::make_shared<int64_t>(0);
    cmd->add_option("network", *path, "network file (.json) or ONNX model (.onnx)")->required();
    addBatchOption(cmd, *batch);
    return [path, batch]() {
        const Network net = openNetwork(*path, *batch);
        const ShapeReport shapes = inferShapes(net);
        std::cout << net.name << " — input " << shapes.input.str() << " (" << net.input.source << ")\n\n";
        TextTable table(
            { "#", "layer", "type", "reads", "output", "params", "FLOPs", "bytes", "FLOP/byte", "live", "formula" },
            { true, false, false, false, false, true, true, true, true, true, false });
        for (size_t i = 0; i < net.layers.size(); ++i) {
            const auto& s = shapes.layers[i];
            // The sources, when they are not simply the layer above: "← conv1, pool2".
            std::string reads;
            if (!net.layers[i].inputs.empty() && !shapes.readsLayerAbove(i)) {
                for (const std::string& name : net.layers[i].inputs)
                    reads += (reads.empty() ? "← " : ", ") + name;
            }
            if (!s.ok) {
                table.addRow(
                    { std::to_string(i), net.layers[i].name, layerTypeName(net.layers[i].spec), reads, "invalid" });
                continue;
            }
            char ai[32];
            std::snprintf(ai, sizeof ai, "%.2f", s.cost.intensity());
            table.addRow({ std::to_string(i), net.layers[i].name, layerTypeName(net.layers[i].spec), reads, s.out.str(),
                humanCount(double(s.cost.params)), humanCount(s.cost.flops),
                humanCount(s.cost.bytesRead + s.cost.bytesWritten) + "B", ai, humanCount(double(s.liveBytes)) + "B",
                joinLines(s.formula) });
        }
        table.addSeparator();
        char ai[32];
        std::snprintf(ai, sizeof ai, "%.2f", shapes.total.intensity());
        table.addRow({ "", "total", "", "", "", humanCount(double(shapes.total.params)), humanCount(shapes.total.flops),
            humanCount(shapes.total.bytesRead + shapes.total.bytesWritten) + "B", ai,
            "peak " + humanCount(double(shapes.peakBytes)) + "B", "" });
        table.print(std::cout);
        if (!shapes.ok())
            throw InputError(*path + ": " + shapes.firstError());
        return 0;
    };
}

} // namespace convscope::cli
