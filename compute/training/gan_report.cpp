// The DCGAN loop's reports (gan_run.h): CSV (RFC 4180: one row per phase, then one per network layer and phase, then
// the losses of every step), JSON (every step's phases and losses), Markdown (the phase table, the losses, and each
// network's layers with their forward / backward / update medians).
#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/report.h"
#include "compute/stats.h"
#include "compute/training/gan_run.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

namespace convscope {

namespace {

    using nlohmann::ordered_json;

    struct PhaseField {
        const char* name;
        double GanPhaseMs::*ms;
    };
    const PhaseField kPhases[] = {
        { "D real: forward", &GanPhaseMs::dRealForward },
        { "D real: backward", &GanPhaseMs::dRealBackward },
        { "G: forward", &GanPhaseMs::gForward },
        { "D fake: forward", &GanPhaseMs::dFakeForward },
        { "D fake: backward", &GanPhaseMs::dFakeBackward },
        { "D: update", &GanPhaseMs::dUpdate },
        { "G step, D: forward", &GanPhaseMs::gdForward },
        { "G step, D: backward", &GanPhaseMs::gdBackward },
        { "G: backward", &GanPhaseMs::gBackward },
        { "G: update", &GanPhaseMs::gUpdate },
        { "losses", &GanPhaseMs::loss },
    };

    std::string num(double v)
    {
        std::ostringstream s;
        s.precision(6);
        s << v;
        return s.str();
    }

    // The statistics of one value of every step (a phase, the step's total, its wall clock).
    template <typename Value> Stats statsOf(const std::vector<GanStep>& steps, Value value)
    {
        std::vector<double> v;
        for (const GanStep& s : steps)
            v.push_back(value(s));
        return Stats::of(v);
    }
    Stats phaseStatsOf(const std::vector<GanStep>& steps, double GanPhaseMs::*ms)
    {
        return statsOf(steps, [ms](const GanStep& s) { return s.phases.*ms; });
    }
    Stats phaseStats(const GanResult& r, double GanPhaseMs::*ms) { return phaseStatsOf(r.steps, ms); }
    Stats stepStatsOf(const std::vector<GanStep>& steps)
    {
        return statsOf(steps, [](const GanStep& s) { return s.phases.total(); });
    }
    Stats stepStats(const GanResult& r) { return stepStatsOf(r.steps); }
    Stats wallStatsOf(const std::vector<GanStep>& steps)
    {
        return statsOf(steps, [](const GanStep& s) { return s.wallMs; });
    }

    // Median of one layer's phase over the steps (-1 where it never ran).
    double layerMedian(const GanResult& r, bool generator, size_t layer, double LayerPhaseMs::*phase)
    {
        std::vector<double> v;
        for (const GanStep& s : r.steps) {
            const auto& t = generator ? s.generator : s.discriminator;
            if (layer < t.size() && t[layer].*phase >= 0)
                v.push_back(t[layer].*phase);
        }
        return v.empty() ? -1 : Stats::of(v).median;
    }

    const std::pair<const char*, double LayerPhaseMs::*> kLayerPhases[] = {
        { "forward", &LayerPhaseMs::forward },
        { "backward-data", &LayerPhaseMs::backwardData },
        { "backward-weights", &LayerPhaseMs::backwardWeights },
        { "update", &LayerPhaseMs::update },
    };

    const Network& netOf(const GanResult& r, bool generator) { return generator ? r.generator : r.discriminator; }
    size_t trainedLayers(const GanResult& r, bool generator)
    {
        return netOf(r, generator).layers.size() - (!generator && r.sigmoidFolded ? 1 : 0);
    }

    bool lossScaled(const GanResult& r) { return !r.steps.empty() && r.steps.front().lossScale > 0; }

    // Data parallel: the all-reduces, which overlap the backward phases (not part of the step's total).
    const PhaseField kAllReducePhases[] = {
        { "all-reduce", &GanPhaseMs::allReduce },
        { "all-reduce hidden", &GanPhaseMs::allReduceHidden },
    };
    bool dataParallel(const GanResult& r) { return r.worldSize > 1; }

} // namespace

std::string ganDataParallelLine(const GanResult& r)
{
    if (!dataParallel(r))
        return {};
    std::string line = "data parallel: " + std::to_string(r.worldSize) + " ranks, a batch of "
        + std::to_string(r.options.batch) + " split " + std::to_string(r.localBatch()) + " per rank; all-reduce "
        + num(phaseStats(r, &GanPhaseMs::allReduce).median) + " ms a step (median, D's fake pass and G's), "
        + num(phaseStats(r, &GanPhaseMs::allReduceHidden).median) + " of it hidden behind the backward";
    if (!r.rankSteps.empty()) {
        line += "; step median by rank:";
        for (size_t k = 0; k < r.rankSteps.size(); ++k)
            line += (k ? ", " : " ") + num(stepStatsOf(r.rankSteps[k]).median) + " ms";
        line += "; the ranks' parameters differ by " + num(r.maxParamRelL2) + " (relative L2, at most)";
    }
    return line;
}

std::string ganLossScaleLine(const GanResult& r)
{
    if (!lossScaled(r))
        return {};
    int dSkipped = 0, gSkipped = 0;
    for (const GanStep& s : r.steps) {
        dSkipped += s.dSkipped ? 1 : 0;
        gSkipped += s.gSkipped ? 1 : 0;
    }
    return "loss scale " + num(r.steps.front().lossScale) + " (step 1) → " + num(r.steps.back().lossScale) + " (step "
        + std::to_string(r.steps.size()) + "); updates skipped (a gradient overflowed FP16, the scale halved): the "
        + "discriminator's at " + std::to_string(dSkipped) + " of " + std::to_string(r.steps.size())
        + " steps, the generator's at " + std::to_string(gSkipped);
}

std::string ganReportCsv(const GanResult& r)
{
    std::ostringstream out;
    out << "selection,network,layer_index,layer,type,phase,median_ms,min_ms,mean_ms,steps\n";
    const std::string sel = csvField(r.options.selection.str());
    for (const PhaseField& p : kPhases) {
        const Stats st = phaseStats(r, p.ms);
        out << sel << ",,,,," << csvField(p.name) << ',' << num(st.median) << ',' << num(st.min) << ',' << num(st.mean)
            << ',' << st.count << '\n';
    }
    const Stats total = stepStats(r), wall = wallStatsOf(r.steps);
    out << sel << ",,,,,step," << num(total.median) << ',' << num(total.min) << ',' << num(total.mean) << ','
        << total.count << '\n';
    out << sel << ",,,,,step (wall clock)," << num(wall.median) << ',' << num(wall.min) << ',' << num(wall.mean) << ','
        << wall.count << '\n';
    if (dataParallel(r)) { // the all-reduces (overlapping the backward) and each rank's step
        for (const PhaseField& p : kAllReducePhases) {
            const Stats st = phaseStats(r, p.ms);
            out << sel << ",,,,," << csvField(p.name) << ',' << num(st.median) << ',' << num(st.min) << ','
                << num(st.mean) << ',' << st.count << '\n';
        }
        for (size_t k = 0; k < r.rankSteps.size(); ++k) {
            const Stats st = stepStatsOf(r.rankSteps[k]);
            out << sel << ",,,,,rank " << k << " step," << num(st.median) << ',' << num(st.min) << ',' << num(st.mean)
                << ',' << st.count << '\n';
        }
    }
    for (const bool generator : { true, false })
        for (size_t i = 0; i < trainedLayers(r, generator); ++i)
            for (const auto& [name, phase] : kLayerPhases) {
                const double ms = layerMedian(r, generator, i, phase);
                if (ms < 0)
                    continue;
                const Layer& l = netOf(r, generator).layers[i];
                out << sel << ',' << (generator ? "generator" : "discriminator") << ',' << i << ',' << csvField(l.name)
                    << ',' << layerKind(l.spec).type << ',' << name << ',' << num(ms) << ",,," << r.steps.size()
                    << '\n';
            }
    const bool scaled = lossScaled(r);
    out << "\nstep,loss_d,loss_g,d_real,d_fake" << (scaled ? ",loss_scale,d_skipped,g_skipped" : "") << "\n";
    for (size_t s = 0; s < r.steps.size(); ++s) {
        const GanStep& st = r.steps[s];
        out << s + 1 << ',' << num(st.lossD) << ',' << num(st.lossG) << ',' << num(st.dReal) << ',' << num(st.dFake);
        if (scaled)
            out << ',' << num(st.lossScale) << ',' << (st.dSkipped ? 1 : 0) << ',' << (st.gSkipped ? 1 : 0);
        out << '\n';
    }
    return out.str();
}

std::string ganReportJson(const GanResult& r)
{
    ordered_json j;
    j["format"] = "convscope-gan-training";
    j["version"] = 1;
    j["selection"] = r.options.selection.str();
    j["generator"] = r.generator.name;
    j["discriminator"] = r.discriminator.name;
    j["batch"] = r.options.batch;
    j["warmup"] = r.options.warmup;
    j["steps"] = r.options.steps;
    j["loss"] = r.sigmoidFolded ? "bce_with_logits (the discriminator's sigmoid folded in)" : "bce_with_logits";
    j["metadata"] = r.metadata;
    if (dataParallel(r)) {
        ordered_json dp;
        dp["world_size"] = r.worldSize;
        dp["batch_per_rank"] = r.localBatch();
        dp["max_param_rel_l2"] = r.maxParamRelL2;
        ordered_json ranks = ordered_json::array();
        for (size_t k = 0; k < r.rankSteps.size(); ++k) {
            const Stats st = stepStatsOf(r.rankSteps[k]);
            ranks.push_back({ { "rank", k }, { "step_median_ms", st.median }, { "step_min_ms", st.min },
                { "wall_median_ms", wallStatsOf(r.rankSteps[k]).median },
                { "all_reduce_median_ms", phaseStatsOf(r.rankSteps[k], &GanPhaseMs::allReduce).median },
                { "hidden_median_ms", phaseStatsOf(r.rankSteps[k], &GanPhaseMs::allReduceHidden).median } });
        }
        dp["ranks"] = ranks;
        j["data_parallel"] = dp;
    }
    ordered_json steps = ordered_json::array();
    for (const GanStep& s : r.steps) {
        ordered_json o;
        o["loss_d"] = s.lossD;
        o["loss_g"] = s.lossG;
        o["d_real"] = s.dReal;
        o["d_fake"] = s.dFake;
        if (lossScaled(r)) { // FP16: GradScaler's scale this step ran with, and the updates it skipped
            o["loss_scale"] = s.lossScale;
            o["d_skipped"] = s.dSkipped;
            o["g_skipped"] = s.gSkipped;
        }
        for (const PhaseField& p : kPhases)
            o["ms"][p.name] = s.phases.*(p.ms);
        o["ms"]["step"] = s.phases.total();
        o["ms"]["step (wall clock)"] = s.wallMs;
        o["ms"]["data (host, not in the step)"] = s.dataMs;
        if (dataParallel(r))
            for (const PhaseField& p : kAllReducePhases)
                o["ms"][p.name] = s.phases.*(p.ms);
        steps.push_back(o);
    }
    j["step_results"] = steps;
    for (const bool generator : { true, false }) {
        ordered_json layers = ordered_json::array();
        for (size_t i = 0; i < trainedLayers(r, generator); ++i) {
            const Layer& l = netOf(r, generator).layers[i];
            ordered_json o;
            o["name"] = l.name;
            o["type"] = layerKind(l.spec).type;
            for (const auto& [name, phase] : kLayerPhases)
                if (const double ms = layerMedian(r, generator, i, phase); ms >= 0)
                    o["median_ms"][name] = ms;
            layers.push_back(o);
        }
        j[generator ? "generator_layers" : "discriminator_layers"] = layers;
    }
    return j.dump(2) + "\n";
}

std::string ganReportMarkdown(const GanResult& r)
{
    std::ostringstream out;
    out << "# DCGAN training step: " << r.generator.name << " + " << r.discriminator.name << "\n\n"
        << "Selection `" << r.options.selection.str() << "`, batch " << r.options.batch << ", " << r.options.steps
        << " timed steps after " << r.options.warmup << " warm-up" << (r.options.warmup == 1 ? "" : "s")
        << (r.sigmoidFolded ? "; the discriminator's sigmoid is folded into BCE-with-logits" : "") << ".\n\n"
        << "| phase | median ms | min ms | mean ms |\n|---|---:|---:|---:|\n";
    for (const PhaseField& p : kPhases) {
        const Stats st = phaseStats(r, p.ms);
        out << "| " << p.name << " | " << num(st.median) << " | " << num(st.min) << " | " << num(st.mean) << " |\n";
    }
    const Stats total = stepStats(r), wall = wallStatsOf(r.steps);
    out << "| **step** | " << num(total.median) << " | " << num(total.min) << " | " << num(total.mean) << " |\n";
    out << "| step (wall clock) | " << num(wall.median) << " | " << num(wall.min) << " | " << num(wall.mean)
        << " |\n\n";
    if (const std::string scale = ganLossScaleLine(r); !scale.empty())
        out << "FP16: " << scale << ".\n\n";
    if (dataParallel(r)) {
        out << "Data parallel: " << r.worldSize << " ranks, a batch of " << r.options.batch << " split "
            << r.localBatch() << " per rank (the losses below are the ranks' mean); the ranks' parameters differ by "
            << num(r.maxParamRelL2) << " (relative L2, at most).\n\n"
            << "| rank | step median ms | step min ms | wall clock median ms | all-reduce ms | hidden ms |\n"
            << "|---:|---:|---:|---:|---:|---:|\n";
        for (size_t k = 0; k < r.rankSteps.size(); ++k)
            out << "| " << k << " | " << num(stepStatsOf(r.rankSteps[k]).median) << " | "
                << num(stepStatsOf(r.rankSteps[k]).min) << " | " << num(wallStatsOf(r.rankSteps[k]).median) << " | "
                << num(phaseStatsOf(r.rankSteps[k], &GanPhaseMs::allReduce).median) << " | "
                << num(phaseStatsOf(r.rankSteps[k], &GanPhaseMs::allReduceHidden).median) << " |\n";
        out << "\n";
    }
    out << "| step | loss D | loss G | D(real) | D(fake) |\n|---:|---:|---:|---:|---:|\n";
    for (size_t s = 0; s < r.steps.size(); ++s)
        out << "| " << s + 1 << " | " << num(r.steps[s].lossD) << " | " << num(r.steps[s].lossG) << " | "
            << num(r.steps[s].dReal) << " | " << num(r.steps[s].dFake) << " |\n";
    for (const bool generator : { true, false }) {
        out << "\n## " << (generator ? "Generator" : "Discriminator")
            << " layers (median ms per step, all passes)\n\n| layer | type | forward | backward-data | "
               "backward-weights | update |\n|---|---|---:|---:|---:|---:|\n";
        for (size_t i = 0; i < trainedLayers(r, generator); ++i) {
            const Layer& l = netOf(r, generator).layers[i];
            out << "| " << l.name << " | " << layerKind(l.spec).type;
            for (const auto& [name, phase] : kLayerPhases) {
                const double ms = layerMedian(r, generator, i, phase);
                out << " | " << (ms < 0 ? std::string("–") : num(ms));
            }
            out << " |\n";
        }
    }
    return out.str();
}

void writeGanReport(const std::filesystem::path& path, const GanResult& r)
{
    const std::string ext = path.extension().string();
    if (ext == ".csv")
        writeFileAtomically(path, ganReportCsv(r));
    else if (ext == ".json")
        writeFileAtomically(path, ganReportJson(r));
    else if (ext == ".md")
        writeFileAtomically(path, ganReportMarkdown(r));
    else
        throw InputError(path.string() + ": a GAN report is .csv, .json or .md");
}

} // namespace convscope
