#include "compute/session.h"

#include "compute/atomic_file.h"
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/report.h"
#include "compute/shape_inference.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace convscope {

namespace {
    using nlohmann::json;

    std::string outputFile(size_t index, const std::string& layerName)
    {
        char prefix[32];
        std::snprintf(prefix, sizeof prefix, "%02zu_", index);
        return prefix + safeFileName(layerName) + ".npy";
    }

    std::vector<int64_t> dimsOf(const Shape& s) { return s.dims(); }

    Tensor tensorFrom(const NpyArray& a, const Shape& expected, const std::string& what)
    {
        if (a.numel() != expected.numel())
            throw InputError(what + ": holds " + std::to_string(a.numel()) + " values, the shape " + expected.str()
                + " needs " + std::to_string(expected.numel()));
        Tensor t(expected);
        std::memcpy(t.data(), a.data.data(), a.data.size() * sizeof(float));
        return t;
    }

    std::string readText(const std::filesystem::path& p)
    {
        std::ifstream in(p, std::ios::binary);
        if (!in)
            throw InputError(p.string() + ": cannot be read (is this a ConvScope session folder?)");
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }

    Stats statsFrom(const json& j)
    {
        Stats s;
        if (!j.is_object())
            return s;
        s.median = j.value("median", 0.0);
        s.min = j.value("min", 0.0);
        s.max = j.value("max", 0.0);
        s.mean = j.value("mean", 0.0);
        s.stddev = j.value("stddev", 0.0);
        s.count = j.value("count", 0);
        return s;
    }

    std::map<std::string, std::string> stringMap(const json& j)
    {
        std::map<std::string, std::string> m;
        if (j.is_object())
            for (auto it = j.begin(); it != j.end(); ++it)
                m[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
        return m;
    }
} // namespace

std::string ceilingsToJson(const std::vector<CeilingsEntry>& entries)
{
    json a = json::array();
    for (const auto& e : entries)
        a.push_back({ { "backend", e.backend }, { "device", e.ceilings.device },
            { "peak_gflop_per_s", e.ceilings.peakGflops }, { "bandwidth_gb_per_s", e.ceilings.bandwidthGBs },
            { "compute_method", e.ceilings.computeMethod }, { "bandwidth_method", e.ceilings.bandwidthMethod },
            // The Tensor Core ceilings by math mode ("tf32", "fp16", "bf16"), empty where none were measured.
            { "math_gflop_per_s", e.ceilings.mathGflops }, { "math_methods", e.ceilings.mathMethods } });
    return a.dump();
}

std::vector<CeilingsEntry> ceilingsFromJson(const std::string& text)
{
    std::vector<CeilingsEntry> out;
    const json a = json::parse(text, nullptr, false);
    if (!a.is_array())
        return out;
    for (const auto& e : a) {
        if (!e.is_object())
            continue;
        CeilingsEntry c;
        c.backend = e.value("backend", "");
        c.ceilings.device = e.value("device", "");
        c.ceilings.peakGflops = e.value("peak_gflop_per_s", 0.0);
        c.ceilings.bandwidthGBs = e.value("bandwidth_gb_per_s", 0.0);
        c.ceilings.computeMethod = e.value("compute_method", "");
        c.ceilings.bandwidthMethod = e.value("bandwidth_method", "");
        // Sessions saved before the Tensor Core ceilings have neither key; a value of the wrong type is skipped.
        if (const auto g = e.find("math_gflop_per_s"); g != e.end() && g->is_object())
            for (auto it = g->begin(); it != g->end(); ++it)
                if (it.value().is_number() && it.value().get<double>() > 0)
                    c.ceilings.mathGflops[it.key()] = it.value().get<double>();
        if (const auto m = e.find("math_methods"); m != e.end() && m->is_object())
            for (auto it = m->begin(); it != m->end(); ++it)
                if (it.value().is_string())
                    c.ceilings.mathMethods[it.key()] = it.value().get<std::string>();
        out.push_back(c);
    }
    return out;
}

std::string sweepToJson(const SweepResult& r)
{
    json points = json::array();
    for (const auto& p : r.spec.points) {
        json settings = json::object();
        for (const auto& [k, v] : p.settings)
            settings[sweepParameterName(k)] = v;
        points.push_back({ { "x", p.x }, { "label", p.label }, { "settings", settings } });
    }
    json sels = json::array();
    for (const auto& s : r.selections)
        sels.push_back(s.str());
    json samples = json::array();
    for (const auto& row : r.samples) {
        json jr = json::array();
        for (const auto& x : row) {
            json jx = { { "ok", x.ok } };
            if (!x.ok)
                jx["failure"] = x.failure;
            else
                jx.update({ { "layer_ms",
                                { { "median", x.layerMs.median }, { "min", x.layerMs.min }, { "max", x.layerMs.max },
                                    { "mean", x.layerMs.mean }, { "stddev", x.layerMs.stddev },
                                    { "count", x.layerMs.count } } },
                    { "network_compute_ms", x.networkComputeMs }, { "network_with_copies_ms", x.networkWithCopiesMs },
                    { "flops", x.flops } });
            jr.push_back(jx);
        }
        samples.push_back(jr);
    }
    const json doc = { { "format", "convscope-sweep" }, { "version", 1 }, { "title", r.spec.title },
        { "layer", r.spec.layer }, { "parameter", sweepParameterName(r.spec.parameter) }, { "note", r.spec.note },
        { "points", points }, { "selections", sels }, { "warmup", r.warmup }, { "repeat", r.repeat },
        { "math_mode", r.mathMode }, { "samples", samples } };
    return doc.dump(1) + "\n";
}

SweepResult sweepFromJson(const std::string& text, const std::string& what)
{
    const json j = json::parse(text, nullptr, false);
    if (!j.is_object() || j.value("format", "") != "convscope-sweep")
        throw InputError(what + ": not a ConvScope sweep");
    auto parameter = [&](const std::string& name) {
        for (SweepParameter p : allSweepParameters())
            if (sweepParameterName(p) == name)
                return p;
        throw InputError(what + ": unknown sweep parameter \"" + name + "\"");
    };
    SweepResult r;
    r.spec.title = j.value("title", "");
    r.spec.layer = j.value("layer", size_t(0));
    r.spec.parameter = parameter(j.value("parameter", "out channels"));
    r.spec.note = j.value("note", "");
    for (const auto& p : j.value("points", json::array())) {
        SweepPoint pt;
        pt.x = p.value("x", 0.0);
        pt.label = p.value("label", "");
        for (auto it = p["settings"].begin(); it != p["settings"].end(); ++it)
            pt.settings[parameter(it.key())] = it.value().get<int64_t>();
        r.spec.points.push_back(pt);
    }
    for (const auto& s : j.value("selections", json::array()))
        r.selections.push_back(Selection::parse(s.get<std::string>()));
    r.warmup = j.value("warmup", 0);
    r.repeat = j.value("repeat", 0);
    r.mathMode = j.value("math_mode", "");
    for (const auto& row : j.value("samples", json::array())) {
        std::vector<SweepSample> out;
        for (const auto& x : row) {
            SweepSample s;
            s.ok = x.value("ok", false);
            s.failure = x.value("failure", "");
            if (s.ok) {
                s.layerMs = statsFrom(x["layer_ms"]);
                s.networkComputeMs = x.value("network_compute_ms", 0.0);
                s.networkWithCopiesMs = x.value("network_with_copies_ms", 0.0);
                s.flops = x.value("flops", 0.0);
            }
            out.push_back(s);
        }
        if (out.size() != r.selections.size())
            throw InputError(what + ": a row of samples does not match the selections");
        r.samples.push_back(std::move(out));
    }
    if (r.samples.size() > r.spec.points.size())
        throw InputError(what + ": more rows of samples than points");
    return r;
}

void writeSessionSweep(const std::filesystem::path& dir, const SweepResult& sweep)
{
    writeFileAtomically(dir / "sweep.json", sweepToJson(sweep));
}

std::vector<CeilingsEntry> calibrateBackends(const std::vector<Selection>& selections, const SessionOptions& options)
{
    std::vector<CeilingsEntry> out;
    std::set<std::string> done;
    for (const auto& s : selections) {
        if (!done.insert(s.backend).second)
            continue;
        auto backend = BackendRegistry::instance().find(s.backend);
        if (!backend || !backend->availability().available)
            continue;
        try {
            if (auto c = backend->calibrate(options))
                out.push_back({ s.backend, *c });
        } catch (const std::exception&) {
            // A ceiling is a help for reading the roofline, never a reason to lose the run.
        }
    }
    return out;
}

void writeSession(const std::filesystem::path& dir, const Network& net, const Tensor& input, const RunResult& run,
    const std::vector<CeilingsEntry>& ceilings)
{
    std::filesystem::create_directories(dir / "outputs");
    writeFileAtomically(dir / "network.json", serializeNetwork(net));
    writeFileAtomically(dir / "result.json", reportJson(net, run));
    if (!input.empty())
        writeNpy(dir / "input.npy", dimsOf(input.shape()), input.data());
    json outputs = json::object();
    for (const auto& sel : run.selections) {
        if (!sel.ok)
            continue;
        const std::string sub = safeFileName(sel.selection.str());
        json files = json::array();
        for (size_t i = 0; i < sel.layers.size() && i < net.layers.size(); ++i) {
            if (!sel.layers[i].output) {
                files.push_back(nullptr); // folded away by fusion: no output, but the index stays the layer's
                continue;
            }
            const Tensor& t = *sel.layers[i].output;
            std::filesystem::create_directories(dir / "outputs" / sub);
            const std::string name = outputFile(i, net.layers[i].name);
            writeNpy(dir / "outputs" / sub / name, dimsOf(t.shape()), t.data());
            files.push_back("outputs/" + sub + "/" + name);
        }
        outputs[sel.selection.str()] = files;
    }
    const json doc = { { "format", "convscope-session" }, { "version", 1 }, { "network", "network.json" },
        { "result", "result.json" }, { "input", input.empty() ? json() : json("input.npy") }, { "outputs", outputs },
        { "ceilings", json::parse(ceilingsToJson(ceilings)) } };
    writeFileAtomically(dir / "session.json", doc.dump(2) + "\n");
}

RunResult parseReportJson(const std::string& text, const ShapeReport& shapes, const std::string& what)
{
    const json j = json::parse(text, nullptr, false);
    if (!j.is_object() || j.value("format", "") != "convscope-report")
        throw InputError(what + ": not a ConvScope JSON report");
    RunResult r;
    r.networkName = j.value("network", "");
    r.shapes = shapes;
    const json m = j.value("metadata", json::object());
    r.meta.date = m.value("date", "");
    r.meta.convscopeVersion = m.value("convscope", "");
    r.meta.cpuModel = m.value("cpu", "");
    r.meta.cpuThreads = m.value("cpu_threads", 0);
    r.meta.mathMode = m.value("math_mode", "");
    r.meta.warmup = m.value("warmup", 0);
    r.meta.repeat = m.value("repeat", 0);
    r.meta.interleaved = m.value("interleaved", true);
    r.meta.reference = m.value("reference", "");
    r.meta.timing = m.value("timing", "");
    r.meta.libraries = stringMap(m.value("libraries", json::object()));
    for (const auto& sj : j.value("selections", json::array())) {
        SelectionResult s;
        s.selection = Selection::parse(sj.value("selection", ""));
        s.ok = sj.value("ok", false);
        if (!s.ok) {
            s.failure = sj.value("failure", "");
            r.selections.push_back(std::move(s));
            continue;
        }
        s.metadata = stringMap(sj.value("metadata", json::object()));
        s.h2dMs = statsFrom(sj.value("h2d_ms", json()));
        s.d2hMs = statsFrom(sj.value("d2h_ms", json()));
        s.totalMs = statsFrom(sj.value("total_ms", json()));
        for (const auto& lj : sj.value("layers", json::array())) {
            LayerResult l;
            l.index = lj.value("index", size_t(0));
            l.computeMs = statsFrom(lj.value("compute_ms", json()));
            if (lj.contains("samples_ms") && lj["samples_ms"].is_array())
                l.samplesMs = lj["samples_ms"].get<std::vector<double>>();
            l.fetchMs = lj.value("fetch_ms", 0.0);
            l.note = lj.value("note", "");
            const json e = lj.value("error", json());
            if (e.is_object()) {
                l.error.maxAbs = e.value("max_abs", 0.0);
                l.error.maxRel = e.value("max_rel", 0.0);
                l.error.relL2 = e.value("rel_l2", 0.0);
                l.error.valid = e.value("valid", false);
                l.error.note = e.value("note", "");
                l.error.bound = e.value("rounding_bound", 0.0);
            }
            if (lj.contains("algorithm_explorer") && !lj["algorithm_explorer"].is_null())
                l.explorerJson = lj["algorithm_explorer"].dump();
            s.layers.push_back(std::move(l));
        }
        r.selections.push_back(std::move(s));
    }
    return r;
}

SavedSession readSession(const std::filesystem::path& dir)
{
    const json doc = json::parse(readText(dir / "session.json"), nullptr, false);
    if (!doc.is_object() || doc.value("format", "") != "convscope-session")
        throw InputError(
            (dir / "session.json").string() + ": not a ConvScope session (format is not \"convscope-session\")");
    if (doc.value("version", 0) != 1)
        throw InputError((dir / "session.json").string() + ": session version "
            + std::to_string(doc.value("version", 0)) + " is not supported (this ConvScope reads version 1)");
    SavedSession s;
    s.dir = dir;
    s.network = parseNetwork(readText(dir / "network.json"), (dir / "network.json").string(), dir);
    const ShapeReport shapes = inferShapes(s.network);
    if (!shapes.ok())
        throw InputError((dir / "network.json").string() + ": " + shapes.firstError());
    s.result = parseReportJson(readText(dir / "result.json"), shapes, (dir / "result.json").string());
    if (doc.contains("input") && doc["input"].is_string())
        s.input = tensorFrom(readNpy(dir / doc["input"].get<std::string>()), shapes.input, "input.npy");
    const json outputs = doc.value("outputs", json::object());
    for (auto& sel : s.result.selections) {
        if (!sel.ok || !outputs.contains(sel.selection.str()))
            continue;
        const json files = outputs[sel.selection.str()];
        for (size_t i = 0; i < sel.layers.size() && i < files.size() && i < shapes.layers.size(); ++i) {
            if (!files[i].is_string())
                continue; // a layer without an output of its own (fused)
            const std::filesystem::path p = dir / files[i].get<std::string>();
            if (std::filesystem::exists(p))
                sel.layers[i].output = tensorFrom(readNpy(p), shapes.layers[i].out, p.string());
        }
    }
    s.ceilings = ceilingsFromJson(doc.value("ceilings", json::array()).dump());
    if (std::filesystem::exists(dir / "sweep.json"))
        s.sweep = sweepFromJson(readText(dir / "sweep.json"), (dir / "sweep.json").string());
    return s;
}

} // namespace convscope
