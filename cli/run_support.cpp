#include "cli/run_support.h"

#include "compute/network_json.h"
#include "compute/onnx_model.h"

#include "cli/text_table.h"

#include "compute/error.h"
#include "compute/report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace convscope::cli {

Network openNetwork(const std::string& path, int64_t batch)
{
    if (isOnnxFile(path))
        return importOnnxModel(path, batch);
    Network net = loadNetwork(path);
    if (batch > 0)
        net.input.batch = batch;
    return net;
}

void addBatchOption(CLI::App* cmd, int64_t& batch)
{
    cmd->add_option(
           "--batch", batch, "batch size: an ONNX model's symbolic batch dimension, or a network file's input batch")
        ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
}

std::vector<Selection> parseSelections(const std::string& commaSeparated, bool withFusedTwins)
{
    std::vector<Selection> out;
    std::stringstream ss(commaSeparated);
    std::string item;
    auto add = [&](const Selection& s) {
        if (std::find(out.begin(), out.end(), s) == out.end())
            out.push_back(s);
    };
    while (std::getline(ss, item, ','))
        if (!item.empty()) {
            const Selection s = Selection::parse(item);
            add(s);
            if (withFusedTwins && !s.fused)
                add({ s.backend, s.algorithm, true });
        }
    if (out.empty())
        throw InputError("--backends names no selection (e.g. cpu.direct,cpu.im2col_gemm)");
    return out;
}

std::optional<Selection> parseReference(const std::string& text, const std::vector<Selection>& selections)
{
    if (text == "none")
        return std::nullopt;
    if (text == "auto") {
        const Selection direct { "cpu", "direct" };
        for (const auto& s : selections)
            if (s == direct)
                return direct;
        return Selection { "cpu", "im2col_gemm" };
    }
    return Selection::parse(text);
}

double parseNumber(const std::string& text, const std::string& option)
{
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(v))
        throw InputError(option + " " + text + ": not a number (expected a finite decimal such as 0.01)");
    return v;
}

std::map<std::string, std::string> parseBackendOptions(const std::vector<std::string>& keyValues)
{
    std::map<std::string, std::string> out;
    for (const auto& kv : keyValues) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
            throw InputError("--option " + kv + ": expected KEY=VALUE");
        out[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return out;
}

void printResultTable(std::ostream& out, const Network& net, const RunResult& run)
{
    std::vector<std::string> header = { "#", "layer", "type", "output", "GFLOP" };
    std::vector<bool> right = { true, false, false, false, true };
    std::vector<const SelectionResult*> ok;
    for (const auto& s : run.selections)
        if (s.ok) {
            ok.push_back(&s);
            header.push_back(s.selection.str() + " ms");
            header.push_back("GFLOP/s");
            header.push_back("rel L2");
            right.insert(right.end(), { true, true, true });
        }
    TextTable table(header, right);
    auto fmt = [](const char* f, double v) {
        char buf[48];
        std::snprintf(buf, sizeof buf, f, v);
        return std::string(buf);
    };
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const auto& sh = run.shapes.layers[i];
        std::vector<std::string> row = { std::to_string(i), net.layers[i].name, layerTypeName(net.layers[i].spec),
            sh.out.str(), fmt("%.4g", sh.cost.flops / 1e9) };
        for (const auto* s : ok) {
            const auto& lr = s->layers[i];
            row.push_back(formatMs(lr.computeMs.median));
            row.push_back(lr.computeMs.median > 0 ? fmt("%.2f", sh.cost.flops / (lr.computeMs.median * 1e6)) : "");
            row.push_back(lr.error.valid
                    ? fmt("%.2e", lr.error.relL2) + (lr.error.bound > 0 ? fmt(" ≤%.1e", lr.error.bound) : "")
                    : (lr.error.note.empty() ? "—" : "FAIL"));
        }
        table.addRow(row);
    }
    table.print(out);
    for (const auto* s : ok) {
        out << s->selection.str() << ": total " << formatMs(s->totalMs.median) << " ms median (min "
            << formatMs(s->totalMs.min) << ", max " << formatMs(s->totalMs.max) << ")";
        if (s->h2dMs.max > 0 || s->d2hMs.max > 0)
            out << ", of which host→device " << formatMs(s->h2dMs.median) << " ms and device→host "
                << formatMs(s->d2hMs.median) << " ms";
        out << "\n";
        if (const auto it = s->metadata.find("graph_pass_us"); it != s->metadata.end())
            out << "  CUDA Graph replayed without per-layer events: " << it->second << " µs per pass, "
                << s->metadata.at("graph_layer_us") << " µs per layer (" << s->metadata.at("graph_layers")
                << " launched layers, median)\n";
        for (size_t i = 0; i < s->layers.size(); ++i) {
            if (!s->layers[i].note.empty())
                out << "  L" << i << ": " << s->layers[i].note << "\n";
            if (!s->layers[i].error.valid && !s->layers[i].error.note.empty())
                out << "  L" << i << " differs from the reference: " << s->layers[i].error.note << "\n";
        }
    }
    out << "math " << run.meta.mathMode << ", " << run.meta.warmup << " warm-up + " << run.meta.repeat
        << " timed passes" << (run.meta.interleaved ? " (interleaved)" : "") << ", reference " << run.meta.reference
        << ", CPU " << run.meta.cpuModel << " (" << run.meta.cpuThreads << " threads)\n";
}

int reportFailures(std::ostream& err, const RunResult& run)
{
    int rc = 0;
    for (const auto& s : run.selections) {
        if (s.ok)
            continue;
        err << "convscope-cli: " << s.selection.str() << " did not run: " << s.failure << "\n";
        rc = s.unsupported ? 3 : (rc == 3 ? 3 : 1);
    }
    return rc;
}

} // namespace convscope::cli
