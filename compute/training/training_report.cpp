// The training run's reports, in the forms `run` writes (compute/report.cpp) with a phase column: CSV (RFC 4180, one
// row per selection, layer and phase, then one row per step's loss), JSON (every step's every sample), Markdown (a
// table per selection: each layer's four phases side by side).
#include "compute/training/train_run.h"

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/report.h"
#include "compute/stats.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

namespace convscope {

namespace {

    using nlohmann::ordered_json;

    std::string num(double v)
    {
        if (!std::isfinite(v))
            return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
        std::ostringstream s;
        s.precision(7);
        s << v;
        return s.str();
    }

    const char* const kPhases[] = { "forward", "backward-data", "backward-weights", "update" };

    double phaseOf(const LayerPhaseMs& t, int phase)
    {
        return phase == 0 ? t.forward : phase == 1 ? t.backwardData : phase == 2 ? t.backwardWeights : t.update;
    }

    // The samples of one layer's phase over the timed steps; empty when the phase does not exist for the layer.
    std::vector<double> samples(const SelectionTraining& sel, size_t layer, int phase)
    {
        std::vector<double> v;
        for (const StepResult& s : sel.steps) {
            const double ms = phaseOf(s.layers.at(layer), phase);
            if (ms >= 0)
                v.push_back(ms);
        }
        return v;
    }

    double stepTotal(const StepResult& s)
    {
        double total = s.lossMs;
        for (const LayerPhaseMs& t : s.layers)
            for (int p = 0; p < 4; ++p)
                total += std::max(0.0, phaseOf(t, p));
        return total;
    }

    std::string optimizerText(const OptimizerSpec& o)
    {
        std::ostringstream s;
        s << (o.kind == OptimizerSpec::Kind::SGD ? "sgd" : "adam") << " lr " << o.lr;
        if (o.kind == OptimizerSpec::Kind::SGD && o.momentum != 0)
            s << " momentum " << o.momentum;
        if (o.weightDecay != 0)
            s << " weight_decay " << o.weightDecay;
        return s.str();
    }

} // namespace

std::string trainingReportCsv(const TrainResult& r)
{
    std::ostringstream out;
    out << "selection,layer_index,layer,type,phase,median_ms,min_ms,mean_ms,steps\n";
    for (const SelectionTraining& sel : r.selections) {
        for (size_t i = 0; i < r.network.layers.size(); ++i)
            for (int p = 0; p < 4; ++p) {
                const std::vector<double> v = samples(sel, i, p);
                if (v.empty())
                    continue;
                const Stats st = Stats::of(v);
                out << csvField(sel.selection.str()) << ',' << i << ',' << csvField(r.network.layers[i].name) << ','
                    << layerKind(r.network.layers[i].spec).type << ',' << kPhases[p] << ',' << num(st.median) << ','
                    << num(st.min) << ',' << num(st.mean) << ',' << st.count << '\n';
            }
        std::vector<double> lossMs, totals;
        for (const StepResult& s : sel.steps) {
            lossMs.push_back(s.lossMs);
            totals.push_back(stepTotal(s));
        }
        const Stats l = Stats::of(lossMs), t = Stats::of(totals);
        out << csvField(sel.selection.str()) << ",,(loss)," << lossKindName(r.options.training.loss) << ",loss,"
            << num(l.median) << ',' << num(l.min) << ',' << num(l.mean) << ',' << l.count << '\n';
        out << csvField(sel.selection.str()) << ",,(step),,step," << num(t.median) << ',' << num(t.min) << ','
            << num(t.mean) << ',' << t.count << '\n';
    }
    out << "\nselection,step,loss\n";
    for (const SelectionTraining& sel : r.selections)
        for (size_t s = 0; s < sel.steps.size(); ++s)
            out << csvField(sel.selection.str()) << ',' << s + 1 << ',' << num(sel.steps[s].loss) << '\n';
    return out.str();
}

std::string trainingReportJson(const TrainResult& r)
{
    ordered_json j;
    j["format"] = "convscope-training";
    j["version"] = 1;
    j["network"] = r.network.name;
    j["input"] = r.shapes.input.str();
    j["loss"] = lossKindName(r.options.training.loss);
    j["optimizer"] = optimizerText(r.options.training.optimizer);
    j["warmup"] = r.options.warmup;
    j["steps"] = r.options.steps;
    j["selections"] = ordered_json::array();
    for (const SelectionTraining& sel : r.selections) {
        ordered_json s;
        s["selection"] = sel.selection.str();
        s["metadata"] = sel.metadata;
        s["max_param_rel_l2_vs_first"] = sel.maxParamRelL2;
        ordered_json losses = ordered_json::array(), lossMs = ordered_json::array();
        for (const StepResult& st : sel.steps) {
            losses.push_back(st.loss);
            lossMs.push_back(st.lossMs);
        }
        s["loss"] = losses;
        s["loss_ms"] = lossMs;
        ordered_json layers = ordered_json::array();
        for (size_t i = 0; i < r.network.layers.size(); ++i) {
            ordered_json l;
            l["index"] = i;
            l["name"] = r.network.layers[i].name;
            l["type"] = layerKind(r.network.layers[i].spec).type;
            for (int p = 0; p < 4; ++p) {
                const std::vector<double> v = samples(sel, i, p);
                if (v.empty())
                    continue;
                const Stats st = Stats::of(v);
                l[kPhases[p]]
                    = { { "median_ms", st.median }, { "min_ms", st.min }, { "mean_ms", st.mean }, { "samples_ms", v } };
            }
            layers.push_back(l);
        }
        s["layers"] = layers;
        j["selections"].push_back(s);
    }
    return j.dump(2) + "\n";
}

std::string trainingReportMarkdown(const TrainResult& r)
{
    std::ostringstream out;
    out << "# " << r.network.name << " — training step\n\n";
    out << "Input " << r.shapes.input.str() << ", loss " << lossKindName(r.options.training.loss) << ", "
        << optimizerText(r.options.training.optimizer) << ", " << r.options.steps << " timed steps after "
        << r.options.warmup << " warm-up. Times are medians in ms; — where a layer has no such phase.\n";
    for (const SelectionTraining& sel : r.selections) {
        out << "\n## " << sel.selection.str() << "\n\n";
        out << "| # | layer | type | forward | backward-data | backward-weights | update |\n";
        out << "|---|---|---|---|---|---|---|\n";
        double phaseTotals[4] = {};
        for (size_t i = 0; i < r.network.layers.size(); ++i) {
            out << "| " << i << " | " << r.network.layers[i].name << " | " << layerKind(r.network.layers[i].spec).type;
            for (int p = 0; p < 4; ++p) {
                const std::vector<double> v = samples(sel, i, p);
                if (v.empty()) {
                    out << " | —";
                    continue;
                }
                const double median = Stats::of(v).median;
                phaseTotals[p] += median;
                out << " | " << formatMs(median);
            }
            out << " |\n";
        }
        out << "| | **total** | |";
        for (double t : phaseTotals)
            out << " **" << formatMs(t) << "** |";
        out << "\n\nLoss: " << num(sel.steps.front().loss) << " (step 1) → " << num(sel.steps.back().loss) << " (step "
            << sel.steps.size() << ")";
        if (&sel != &r.selections.front())
            out << "; parameters after the steps differ from " << r.selections.front().selection.str()
                << "'s by at most " << shortScientific(sel.maxParamRelL2) << " (relative L2)";
        out << ".\n";
    }
    return out.str();
}

std::string trainingChromeTrace(const TrainResult& r)
{
    ordered_json events = ordered_json::array();
    events.push_back({ { "name", "process_name" }, { "ph", "M" }, { "pid", 1 }, { "args", { { "name", "train" } } } });
    for (size_t k = 0; k < r.selections.size(); ++k) {
        const SelectionTraining& sel = r.selections[k];
        const int tid = int(k) + 1;
        events.push_back({ { "name", "thread_name" }, { "ph", "M" }, { "pid", 1 }, { "tid", tid },
            { "args", { { "name", sel.selection.str() } } } });
        double t = 0;
        const auto emit = [&](const std::string& name, const char* phase, double ms, ordered_json args) {
            events.push_back({ { "name", name }, { "cat", phase }, { "ph", "X" }, { "ts", t * 1000.0 },
                { "dur", ms * 1000.0 }, { "pid", 1 }, { "tid", tid }, { "args", std::move(args) } });
            t += ms;
        };
        for (size_t s = 0; s < sel.steps.size(); ++s) {
            const StepResult& step = sel.steps[s];
            const auto label = [&](size_t i, int phase) {
                return "L" + std::to_string(i) + " " + r.network.layers[i].name + " · " + kPhases[phase];
            };
            for (size_t i = 0; i < step.layers.size(); ++i)
                emit(label(i, 0), kPhases[0], step.layers[i].forward, { { "step", s + 1 } });
            emit("loss (" + lossKindName(r.options.training.loss) + ")", "loss", step.lossMs,
                { { "step", s + 1 }, { "loss", step.loss } });
            for (size_t i = step.layers.size(); i-- > 0;)
                for (int p = 1; p < 4; ++p)
                    if (phaseOf(step.layers[i], p) >= 0)
                        emit(label(i, p), kPhases[p], phaseOf(step.layers[i], p), { { "step", s + 1 } });
        }
    }
    ordered_json j = { { "traceEvents", events }, { "displayTimeUnit", "ms" },
        { "otherData",
            { { "network", r.network.name },
                { "note",
                    "training steps laid out back to back from measured durations, phases in the order they "
                    "ran" } } } };
    return j.dump(1) + "\n";
}

void writeTrainingReport(const std::filesystem::path& path, const TrainResult& result)
{
    const auto ext = path.extension().string();
    std::string body;
    if (ext == ".csv")
        body = trainingReportCsv(result);
    else if (ext == ".json")
        body = trainingReportJson(result);
    else if (ext == ".md")
        body = trainingReportMarkdown(result);
    else
        throw InputError("--report " + path.string() + ": unknown format \"" + ext + "\" (use .csv, .json or .md)");
    writeFileAtomically(path, body);
}

} // namespace convscope
