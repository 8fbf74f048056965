// Shape inference of a whole network: each layer's sources and their shapes, the totals, and the memory alive while
// each layer runs; apart from shape_inference.cpp, which holds the per-layer rules this walk applies.
#include "compute/shape_inference.h"

#include "compute/error.h"

#include <algorithm>
#include <limits>

namespace convscope {

ShapeReport inferShapes(const Network& net)
{
    ShapeReport report;
    const InputSpec& i = net.input;
    report.input = i.shape();
    if (i.batch < 1 || i.channels < 1 || (!i.flat && (i.height < 1 || i.width < 1))) {
        report.inputError
            = "input: batch, channels, height and width must all be at least 1, got " + report.input.str();
    } else {
        try {
            report.input.bytes();
        } catch (const InputError& e) {
            report.inputError = std::string("input: ") + e.what();
        }
    }
    const bool inputOk = report.inputError.empty();
    std::vector<int> lastUse(net.layers.size() + 1, -2); // index 0: the network's input; k + 1: layer k's output
    for (size_t k = 0; k < net.layers.size(); ++k) {
        const Layer& layer = net.layers[k];
        LayerShape s;
        std::vector<int> sources;
        try {
            sources = resolveLayerInputs(net, k);
        } catch (const InputError& e) {
            s.error = e.what();
        }
        std::vector<Shape> ins;
        std::vector<std::string> names;
        for (int src : sources) {
            const bool ok = src < 0 ? inputOk : report.layers[size_t(src)].ok;
            if (!ok) {
                s.error = src < 0 ? "no valid input: the network's input is invalid"
                                  : "no valid input: layer " + std::to_string(src) + " (" + net.layers[size_t(src)].name
                        + ") is invalid";
                break;
            }
            ins.push_back(src < 0 ? report.input : report.layers[size_t(src)].out);
            names.push_back(src < 0 ? std::string(kNetworkInputName) : net.layers[size_t(src)].name);
        }
        if (s.error.empty()) {
            s = inferLayer(layer.spec, ins, names);
            if (s.ok) {
                report.total.params += s.cost.params;
                report.total.flops += s.cost.flops;
                report.total.bytesRead += s.cost.bytesRead;
                report.total.bytesWritten += s.cost.bytesWritten;
                for (int src : sources)
                    lastUse[size_t(src + 1)] = int(k);
            }
        } else if (!ins.empty()) {
            s.in = ins[0];
        }
        s.sources = sources;
        s.name = layer.name;
        report.layers.push_back(std::move(s));
    }
    // Liveness: a tensor lives from the layer that makes it to the last layer that reads it; the network's output
    // (the last layer's) lives to the end.
    if (!net.layers.empty())
        lastUse.back() = std::max(lastUse.back(), int(net.layers.size()) - 1);
    // Saturating: a file can describe more memory than an int64 counts, and that must not be undefined behaviour.
    const auto plus = [](int64_t a, int64_t b) {
        int64_t sum = 0;
        return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
    };
    report.peakBytes = inputOk ? report.input.bytes() : 0;
    for (size_t k = 0; k < report.layers.size(); ++k) {
        LayerShape& s = report.layers[k];
        if (!s.ok)
            continue;
        int64_t live = s.out.bytes();
        if (inputOk && lastUse[0] >= int(k))
            live = plus(live, report.input.bytes());
        for (size_t t = 0; t < k; ++t)
            if (report.layers[t].ok && lastUse[t + 1] >= int(k))
                live = plus(live, report.layers[t].out.bytes());
        s.liveBytes = live;
        report.peakBytes = std::max(report.peakBytes, live);
    }
    return report;
}

bool ShapeReport::readsLayerAbove(size_t i) const
{
    return i < layers.size() && layers[i].sources == std::vector<int> { int(i) - 1 };
}

bool ShapeReport::ok() const
{
    if (!inputError.empty())
        return false;
    for (const auto& l : layers)
        if (!l.ok)
            return false;
    return true;
}

std::string ShapeReport::firstError() const
{
    if (!inputError.empty())
        return inputError;
    for (size_t k = 0; k < layers.size(); ++k)
        if (!layers[k].ok)
            return "layer " + std::to_string(k) + " (" + layers[k].name + "): " + layers[k].error;
    return {};
}

} // namespace convscope
