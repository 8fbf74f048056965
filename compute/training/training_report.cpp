// The training run's reports, in the forms `run` writes (compute/report.cpp) with a phase column: CSV (RFC 4180, one
// row per selection, layer and phase, then one row per step's loss), JSON (every step's every sample), Markdown (a
// table per selection: each layer's four phases side by side).
#include "compute/training/train_run.h"

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/report.h"
#include "compute/stats.h"
#include "compute/training/phase_sums.h"

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

    double stepTotal(const StepResult& s) { return s.lossMs + sumPhases(s.layers).total(); }

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

    // Data parallel: bucket b's all-reduce and hidden milliseconds over the timed steps.
    struct BucketSamples {
        const BucketTiming* first = nullptr; // its layers and bytes (the same every step)
        std::vector<double> allReduce, hidden;
    };
    std::vector<BucketSamples> bucketSamples(const SelectionTraining& sel)
    {
        std::vector<BucketSamples> out;
        for (const StepResult& s : sel.steps)
            for (size_t b = 0; b < s.buckets.size(); ++b) {
                if (out.size() <= b)
                    out.push_back({ &s.buckets[b], {}, {} });
                out[b].allReduce.push_back(s.buckets[b].allReduceMs);
                out[b].hidden.push_back(s.buckets[b].hiddenMs);
            }
        return out;
    }

    std::string bucketName(size_t b, const BucketTiming& t)
    {
        return "bucket " + std::to_string(b) + " (L" + std::to_string(t.firstLayer) + "–L" + std::to_string(t.lastLayer)
            + ", " + num(double(t.bytes) / 1e6) + " MB)";
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
                out << csvField(sel.label()) << ',' << i << ',' << csvField(r.network.layers[i].name) << ','
                    << layerKind(r.network.layers[i].spec).type << ',' << kPhases[p] << ',' << num(st.median) << ','
                    << num(st.min) << ',' << num(st.mean) << ',' << st.count << '\n';
            }
        std::vector<double> lossMs, totals;
        for (const StepResult& s : sel.steps) {
            lossMs.push_back(s.lossMs);
            totals.push_back(stepTotal(s));
        }
        const Stats l = Stats::of(lossMs), t = Stats::of(totals);
        out << csvField(sel.label()) << ",,(loss)," << lossKindName(r.options.training.loss) << ",loss,"
            << num(l.median) << ',' << num(l.min) << ',' << num(l.mean) << ',' << l.count << '\n';
        out << csvField(sel.label()) << ",,(step),,step," << num(t.median) << ',' << num(t.min) << ',' << num(t.mean)
            << ',' << t.count << '\n';
        const std::vector<BucketSamples> buckets = bucketSamples(sel);
        for (size_t b = 0; b < buckets.size(); ++b)
            for (const auto& [phase, v] : { std::pair { "all-reduce", &buckets[b].allReduce },
                     std::pair { "all-reduce-hidden", &buckets[b].hidden } }) {
                const Stats st = Stats::of(*v);
                out << csvField(sel.label()) << ',' << b << ',' << csvField(bucketName(b, *buckets[b].first))
                    << ",bucket," << phase << ',' << num(st.median) << ',' << num(st.min) << ',' << num(st.mean) << ','
                    << st.count << '\n';
            }
    }
    out << "\nselection,step,loss\n";
    for (const SelectionTraining& sel : r.selections)
        for (size_t s = 0; s < sel.steps.size(); ++s)
            out << csvField(sel.label()) << ',' << s + 1 << ',' << num(sel.steps[s].loss) << '\n';
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
    j["math"] = mathModeName(r.options.session.math);
    j["warmup"] = r.options.warmup;
    j["steps"] = r.options.steps;
    if (r.worldSize > 1) {
        j["world_size"] = r.worldSize;
        j["global_batch"] = r.globalBatch;
    }
    j["selections"] = ordered_json::array();
    for (const SelectionTraining& sel : r.selections) {
        ordered_json s;
        s["selection"] = sel.label();
        s["metadata"] = sel.metadata;
        s["max_param_rel_l2_vs_first"] = sel.maxParamRelL2;
        ordered_json losses = ordered_json::array(), lossMs = ordered_json::array();
        for (const StepResult& st : sel.steps) {
            losses.push_back(st.loss);
            lossMs.push_back(st.lossMs);
        }
        s["loss"] = losses;
        s["loss_ms"] = lossMs;
        ordered_json wall = ordered_json::array();
        for (const StepResult& st : sel.steps)
            wall.push_back(st.wallMs);
        s["step_wall_ms"] = wall; // the host clock around each step, waits and gaps included
        if (!sel.steps.empty() && sel.steps.front().lossScale > 0) { // FP16: GradScaler's scale and skipped steps
            ordered_json scale = ordered_json::array(), skipped = ordered_json::array();
            for (const StepResult& st : sel.steps) {
                scale.push_back(st.lossScale);
                skipped.push_back(st.skipped);
            }
            s["loss_scale"] = scale;
            s["step_skipped"] = skipped;
        }
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
        if (sel.rank >= 0) {
            s["rank"] = sel.rank;
            s["world_size"] = sel.worldSize;
            ordered_json buckets = ordered_json::array();
            for (const BucketSamples& b : bucketSamples(sel)) {
                const Stats ar = Stats::of(b.allReduce), hid = Stats::of(b.hidden);
                buckets.push_back({ { "first_layer", b.first->firstLayer }, { "last_layer", b.first->lastLayer },
                    { "bytes", b.first->bytes }, { "all_reduce_median_ms", ar.median },
                    { "hidden_median_ms", hid.median }, { "all_reduce_samples_ms", b.allReduce },
                    { "hidden_samples_ms", b.hidden } });
            }
            s["buckets"] = buckets;
            ordered_json backward = ordered_json::array();
            for (const StepResult& st : sel.steps)
                backward.push_back(st.backwardMs);
            s["backward_span_ms"] = backward;
        }
        j["selections"].push_back(s);
    }
    return j.dump(2) + "\n";
}

std::string trainingReportMarkdown(const TrainResult& r)
{
    std::ostringstream out;
    out << "# " << r.network.name << " — training step\n\n";
    if (r.worldSize > 1)
        out << "Data parallel over " << r.worldSize << " ranks (one GPU each), a batch of " << r.globalBatch
            << " split among them; the input below is one rank's slice.\n\n";
    out << "Input " << r.shapes.input.str() << ", loss " << lossKindName(r.options.training.loss) << ", "
        << optimizerText(r.options.training.optimizer) << ", math " << mathModeName(r.options.session.math) << ", "
        << r.options.steps << " timed steps after " << r.options.warmup
        << " warm-up. Times are medians in ms; — where a layer has no such phase.\n";
    for (const SelectionTraining& sel : r.selections) {
        out << "\n## " << sel.label() << "\n\n";
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
            out << "; parameters after the steps differ from " << r.selections.front().label() << "'s by at most "
                << shortScientific(sel.maxParamRelL2) << " (relative L2)";
        out << ".\n";
        const std::vector<BucketSamples> buckets = bucketSamples(sel);
        if (buckets.empty())
            continue;
        out << "\nGradient all-reduce (NCCL, average over " << sel.worldSize
            << " ranks) on the communication stream, medians in ms; hidden = the part that ran while the backward "
               "was still running.\n\n| bucket | all-reduce | hidden | exposed |\n|---|---|---|---|\n";
        double total = 0, hidden = 0;
        for (size_t b = 0; b < buckets.size(); ++b) {
            const double ar = Stats::of(buckets[b].allReduce).median, hid = Stats::of(buckets[b].hidden).median;
            total += ar;
            hidden += hid;
            out << "| " << bucketName(b, *buckets[b].first) << " | " << formatMs(ar) << " | " << formatMs(hid) << " | "
                << formatMs(std::max(0.0, ar - hid)) << " |\n";
        }
        out << "| **total** | **" << formatMs(total) << "** | **" << formatMs(hidden) << "** ("
            << num(total > 0 ? 100.0 * hidden / total : 0) << " %) | **" << formatMs(std::max(0.0, total - hidden))
            << "** |\n";
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
            { "args", { { "name", sel.label() } } } });
        if (!sel.steps.empty() && !sel.steps.front().buckets.empty())
            events.push_back({ { "name", "thread_name" }, { "ph", "M" }, { "pid", 1 }, { "tid", 1000 + tid },
                { "args", { { "name", sel.label() + " · all-reduce (NCCL stream)" } } } });
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
            // Data parallel: the buckets' all-reduces on a track of their own, from the backward's start.
            for (size_t b = 0; b < step.buckets.size(); ++b) {
                const BucketTiming& bt = step.buckets[b];
                events.push_back({ { "name", bucketName(b, bt) }, { "cat", "all-reduce" }, { "ph", "X" },
                    { "ts", (t + bt.startMs) * 1000.0 }, { "dur", bt.allReduceMs * 1000.0 }, { "pid", 1 },
                    { "tid", 1000 + tid }, { "args", { { "step", s + 1 }, { "hidden_ms", bt.hiddenMs } } } });
            }
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
