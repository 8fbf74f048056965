#include "compute/report.h"

#include "compute/atomic_file.h"
#include "compute/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace convscope {

namespace {

    using nlohmann::ordered_json;

    std::string num(double v, int precision = 6)
    {
        if (!std::isfinite(v))
            return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
        std::ostringstream s;
        s.precision(precision);
        s << v;
        return s.str();
    }

    double gflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e6) : 0; }

    // Visits every (selection, layer) row in report order.
    template <typename F> void forEachRow(const Network& net, const RunResult& run, F&& f)
    {
        for (const auto& sel : run.selections) {
            if (!sel.ok)
                continue;
            for (size_t i = 0; i < sel.layers.size() && i < net.layers.size(); ++i)
                f(sel, sel.layers[i], net.layers[i], run.shapes.layers[i]);
        }
    }

    ordered_json statsJson(const Stats& s)
    {
        return { { "median", s.median }, { "min", s.min }, { "max", s.max }, { "mean", s.mean }, { "stddev", s.stddev },
            { "count", s.count } };
    }

    ordered_json errorJson(const ErrorMetrics& e)
    {
        if (!e.valid && e.note.empty())
            return nullptr;
        ordered_json j
            = { { "max_abs", e.maxAbs }, { "max_rel", e.maxRel }, { "rel_l2", e.relL2 }, { "valid", e.valid } };
        if (!e.note.empty())
            j["note"] = e.note;
        if (e.bound > 0)
            j["rounding_bound"] = e.bound; // compute/rounding_bound.h
        return j;
    }

} // namespace

std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\r\n") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"')
            out += '"';
        out += c;
    }
    return out + "\"";
}

std::string humanCount(double v)
{
    const char* units[] = { "", " k", " M", " G", " T", " P" };
    int u = 0;
    while (std::fabs(v) >= 1000 && u < 5) {
        v /= 1000;
        ++u;
    }
    std::ostringstream s;
    s.precision(u ? 3 : 6);
    s << v << units[u];
    return s.str();
}

std::string formatMs(double ms)
{
    char buf[32];
    if (ms >= 100)
        std::snprintf(buf, sizeof buf, "%.1f", ms);
    else if (ms >= 1)
        std::snprintf(buf, sizeof buf, "%.3f", ms);
    else
        std::snprintf(buf, sizeof buf, "%.4f", ms);
    return buf;
}

std::string shortScientific(double v)
{
    if (!std::isfinite(v))
        return num(v);
    if (v == 0)
        return "0";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1e", v); // "3.1e-03"
    std::string s = buf;
    const size_t e = s.find('e');
    std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
    const bool negative = exponent[0] == '-';
    exponent = exponent.substr(1);
    exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
    if (exponent == "0")
        return mantissa;
    return mantissa + "e" + (negative ? "-" : "") + exponent;
}

std::string relL2Text(const ErrorMetrics& e)
{
    if (!e.valid)
        return {};
    std::string s = shortScientific(e.relL2);
    if (e.bound > 0)
        s += " (bound " + shortScientific(e.bound) + ")";
    return s;
}

bool exceedsBound(const ErrorMetrics& e) { return e.valid && e.bound > 0 && !(e.relL2 <= e.bound); }

std::string reportCsv(const Network& net, const RunResult& run)
{
    std::ostringstream out;
    out << "selection,backend,algorithm,math_mode,layer_index,layer_name,layer_type,output_shape,parameters,flops,"
           "median_ms,min_ms,max_ms,mean_ms,stddev_ms,gflop_per_s,max_abs_error,rel_l2_error,rounding_bound,note\r\n";
    forEachRow(
        net, run, [&](const SelectionResult& sel, const LayerResult& lr, const Layer& layer, const LayerShape& sh) {
            const auto math = sel.metadata.count("math") ? sel.metadata.at("math") : run.meta.mathMode;
            out << csvField(sel.selection.str()) << ',' << csvField(sel.selection.backend) << ','
                << csvField(sel.selection.algorithm) << ',' << csvField(math) << ',' << lr.index << ','
                << csvField(layer.name) << ',' << layerTypeName(layer.spec) << ',' << csvField(sh.out.str()) << ','
                << sh.cost.params << ',' << num(sh.cost.flops, 12) << ',' << num(lr.computeMs.median) << ','
                << num(lr.computeMs.min) << ',' << num(lr.computeMs.max) << ',' << num(lr.computeMs.mean) << ','
                << num(lr.computeMs.stddev) << ',' << num(gflops(sh.cost.flops, lr.computeMs.median)) << ','
                << (lr.error.valid ? num(lr.error.maxAbs) : "") << ','
                << (lr.error.valid ? num(lr.error.relL2) : "")
                // The relL2 the math mode's rounding may cause (compute/rounding_bound.h); empty in FP32 (none stated).
                << ',' << (lr.error.valid && lr.error.bound > 0 ? num(lr.error.bound) : "") << ',' << csvField(lr.note)
                << "\r\n";
        });
    return out.str();
}

std::string reportJson(const Network& net, const RunResult& run)
{
    ordered_json j;
    j["format"] = "convscope-report";
    j["version"] = 1;
    j["network"] = run.networkName;
    const auto& m = run.meta;
    j["metadata"] = { { "date", m.date }, { "convscope", m.convscopeVersion }, { "cpu", m.cpuModel },
        { "cpu_threads", m.cpuThreads }, { "math_mode", m.mathMode }, { "warmup", m.warmup }, { "repeat", m.repeat },
        { "interleaved", m.interleaved }, { "reference", m.reference }, { "timing", m.timing },
        { "libraries", m.libraries } };
    ordered_json layers = ordered_json::array();
    for (size_t i = 0; i < net.layers.size() && i < run.shapes.layers.size(); ++i) {
        const auto& s = run.shapes.layers[i];
        layers.push_back(
            { { "index", i }, { "name", net.layers[i].name }, { "type", layerTypeName(net.layers[i].spec) },
                { "input_shape", s.in.str() }, { "output_shape", s.out.str() }, { "formula", s.formula },
                { "parameters", s.cost.params }, { "flops", s.cost.flops }, { "bytes_read", s.cost.bytesRead },
                { "bytes_written", s.cost.bytesWritten }, { "arithmetic_intensity", s.cost.intensity() } });
    }
    j["layers"] = layers;
    ordered_json sels = ordered_json::array();
    for (const auto& sel : run.selections) {
        ordered_json sj = { { "selection", sel.selection.str() }, { "backend", sel.selection.backend },
            { "algorithm", sel.selection.algorithm }, { "ok", sel.ok } };
        if (!sel.ok) {
            sj["failure"] = sel.failure;
            sels.push_back(sj);
            continue;
        }
        sj["metadata"] = sel.metadata;
        sj["h2d_ms"] = statsJson(sel.h2dMs);
        sj["d2h_ms"] = statsJson(sel.d2hMs);
        sj["total_ms"] = statsJson(sel.totalMs);
        ordered_json ls = ordered_json::array();
        for (size_t i = 0; i < sel.layers.size(); ++i) {
            const auto& lr = sel.layers[i];
            const double flops = i < run.shapes.layers.size() ? run.shapes.layers[i].cost.flops : 0;
            ordered_json lj = { { "index", lr.index }, { "compute_ms", statsJson(lr.computeMs) },
                { "samples_ms", lr.samplesMs }, { "gflop_per_s", gflops(flops, lr.computeMs.median) },
                { "fetch_ms", lr.fetchMs }, { "error", errorJson(lr.error) } };
            if (!lr.note.empty())
                lj["note"] = lr.note;
            if (!lr.explorerJson.empty())
                lj["algorithm_explorer"] = ordered_json::parse(lr.explorerJson, nullptr, false);
            ls.push_back(lj);
        }
        sj["layers"] = ls;
        sels.push_back(sj);
    }
    j["selections"] = sels;
    return j.dump(2) + "\n";
}

std::string reportMarkdown(const Network& net, const RunResult& run)
{
    std::ostringstream out;
    const auto& m = run.meta;
    out << "# ConvScope report: " << run.networkName << "\n\n";
    out << "- Date: " << m.date << "\n- CPU: " << m.cpuModel << " (" << m.cpuThreads << " threads)\n";
    out << "- Math mode: " << m.mathMode << "; warm-ups " << m.warmup << ", repeats " << m.repeat
        << (m.interleaved ? ", interleaved" : "") << "; reference " << m.reference << "\n";
    out << "- Timing: " << m.timing << "\n";
    for (const auto& sel : run.selections) {
        if (!sel.ok) {
            out << "- **" << sel.selection.str() << "** did not run: " << sel.failure << "\n";
            continue;
        }
        for (const auto& [k, v] : sel.metadata)
            if (k == "device" || k == "driver" || k == "cudnn" || k == "cuda")
                out << "- " << sel.selection.str() << " " << k << ": " << v << "\n";
    }
    out << "\n| # | layer | type | output | params | FLOPs | selection | median ms | min ms | max ms | GFLOP/s | "
           "rel L2 error | note |\n";
    // The error column carries the math mode's rounding bound where one is stated, and flags a layer above it.
    out << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    auto esc = [](std::string s) {
        std::string r;
        for (char c : s)
            r += c == '|' ? std::string("\\|") : std::string(1, c);
        return r;
    };
    forEachRow(
        net, run, [&](const SelectionResult& sel, const LayerResult& lr, const Layer& layer, const LayerShape& sh) {
            out << "| " << lr.index << " | " << esc(layer.name) << " | " << layerTypeName(layer.spec) << " | "
                << sh.out.str() << " | " << humanCount(double(sh.cost.params)) << " | " << humanCount(sh.cost.flops)
                << " | " << sel.selection.str() << " | " << formatMs(lr.computeMs.median) << " | "
                << formatMs(lr.computeMs.min) << " | " << formatMs(lr.computeMs.max) << " | "
                << num(gflops(sh.cost.flops, lr.computeMs.median), 4) << " | "
                << (lr.error.valid ? relL2Text(lr.error) : "—")
                << (exceedsBound(lr.error) ? " **⚠ above the bound**" : "") << " | " << esc(lr.note) << " |\n";
        });
    return out.str();
}

std::string reportChromeTrace(const Network& net, const RunResult& run)
{
    // The trace is laid out from the measured durations: each selection's passes back to back on its own
    // track (pid = backend, tid = selection), copies and layers as complete ("X") events in microseconds.
    ordered_json events = ordered_json::array();
    std::map<std::string, int> pids;
    for (size_t k = 0; k < run.selections.size(); ++k) {
        const auto& sel = run.selections[k];
        if (!sel.ok)
            continue;
        if (!pids.count(sel.selection.backend)) {
            const int pid = int(pids.size()) + 1;
            pids[sel.selection.backend] = pid;
            events.push_back({ { "name", "process_name" }, { "ph", "M" }, { "pid", pid },
                { "args", { { "name", sel.selection.backend } } } });
        }
        const int pid = pids[sel.selection.backend];
        const int tid = int(k) + 1;
        events.push_back({ { "name", "thread_name" }, { "ph", "M" }, { "pid", pid }, { "tid", tid },
            { "args", { { "name", sel.selection.str() } } } });
        const size_t passes = sel.layers.empty() ? 0 : sel.layers[0].samplesMs.size();
        double t = 0;
        auto emit = [&](const std::string& name, const std::string& cat, double ms, ordered_json args) {
            events.push_back({ { "name", name }, { "cat", cat }, { "ph", "X" }, { "ts", t * 1000.0 },
                { "dur", ms * 1000.0 }, { "pid", pid }, { "tid", tid }, { "args", std::move(args) } });
            t += ms;
        };
        for (size_t p = 0; p < passes; ++p) {
            if (sel.h2dMs.max > 0)
                emit("H2D input", "copy", sel.h2dMs.median, ordered_json::object());
            for (size_t i = 0; i < sel.layers.size() && i < net.layers.size(); ++i)
                emit(sel.selection.str() + " · L" + std::to_string(i) + " " + layerSummary(net.layers[i].spec), "layer",
                    sel.layers[i].samplesMs[p],
                    { { "layer", net.layers[i].name }, { "pass", p }, { "output", run.shapes.layers[i].out.str() } });
            if (sel.d2hMs.max > 0)
                emit("D2H output", "copy", sel.d2hMs.median, ordered_json::object());
        }
    }
    ordered_json j = { { "traceEvents", events }, { "displayTimeUnit", "ms" },
        { "otherData",
            { { "network", run.networkName }, { "date", run.meta.date },
                { "note", "passes laid out back to back from measured durations" } } } };
    return j.dump(1) + "\n";
}

void writeReport(const std::filesystem::path& path, const Network& net, const RunResult& run)
{
    const auto ext = path.extension().string();
    std::string body;
    if (ext == ".csv")
        body = reportCsv(net, run);
    else if (ext == ".json")
        body = reportJson(net, run);
    else if (ext == ".md")
        body = reportMarkdown(net, run);
    else
        throw InputError("report " + path.string() + ": unknown format \"" + ext + "\" (use .csv, .json or .md)");
    writeFileAtomically(path, body);
}

} // namespace convscope
