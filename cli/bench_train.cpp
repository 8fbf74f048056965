// `convscope-cli bench --train`: each case of a suite (or a network file) runs the training step — forward, loss,
// backward, update (compute/training/train_run.h) — on every selection instead of inference, and the table gives each
// layer's forward, backward-data, backward-weights and update medians side by side, the whole step per case with
// its ratio against the first selection, and how far each selection's parameters drifted from the first's.
#include "cli/bench_suites.h"
#include "cli/text_table.h"

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/load_input.h"
#include "compute/report.h"
#include "compute/stats.h"
#include "compute/training/phase_sums.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace convscope::cli {

namespace {
    // A target for the loss that every run of the bench reproduces: class n mod C for cross-entropy, else values in
    // [0, 1) from a 64-bit LCG (bce takes them as probabilities, mse as numbers near the outputs' scale).
    Tensor benchTarget(LossKind loss, const Shape& out)
    {
        if (loss == LossKind::CrossEntropy) {
            Tensor t(Shape::features(out.n, 1));
            for (int64_t n = 0; n < out.n; ++n)
                t.data()[n] = float(n % std::max<int64_t>(1, out.c));
            return t;
        }
        Tensor t(out);
        uint64_t x = 0x5eed;
        for (int64_t i = 0; i < t.numel(); ++i) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            t.data()[i] = float(double(x >> 40) / double(1ULL << 24));
        }
        return t;
    }

    double trainPhaseMs(const LayerPhaseMs& t, int phase)
    {
        return phase == 0 ? t.forward : phase == 1 ? t.backwardData : phase == 2 ? t.backwardWeights : t.update;
    }

    // Medians over the steps: the layer's phase (−1 when the layer has none), or per step the sums.
    double trainMedianPhase(const SelectionTraining& sel, size_t layer, int phase)
    {
        std::vector<double> v;
        for (const StepResult& s : sel.steps)
            if (const double ms = trainPhaseMs(s.layers[layer], phase); ms >= 0)
                v.push_back(ms);
        return v.empty() ? -1 : Stats::of(v).median;
    }

    struct TrainStepSums {
        double forward = 0, backward = 0, update = 0, step = 0; // forward includes the loss
    };
    TrainStepSums trainMedianSums(const SelectionTraining& sel)
    {
        std::vector<double> f, b, u, t;
        for (const StepResult& s : sel.steps) {
            const PhaseSums p = sumPhases(s.layers);
            f.push_back(s.lossMs + p.forward);
            b.push_back(p.backward);
            u.push_back(p.update);
            t.push_back(s.lossMs + p.total());
        }
        return { Stats::of(f).median, Stats::of(b).median, Stats::of(u).median, Stats::of(t).median };
    }

    std::string trainCell(double ms) { return ms < 0 ? "—" : formatMs(ms); }

    // One report over the cases: CSV (each case's training CSV with a case column), JSON (each case's training JSON),
    // Markdown (each case's training Markdown, its headings one level down).
    std::string combinedCsv(const std::vector<std::pair<std::string, TrainResult>>& runs)
    {
        std::string phases = "case,selection,layer_index,layer,type,phase,median_ms,min_ms,mean_ms,steps\n";
        std::string losses = "case,selection,step,loss\n";
        for (const auto& [name, r] : runs) {
            const std::string csv = trainingReportCsv(r);
            const auto split = csv.find("\n\n");
            std::istringstream a(csv.substr(0, split)), b(split == std::string::npos ? "" : csv.substr(split + 2));
            std::string line;
            for (std::getline(a, line); std::getline(a, line);)
                phases += csvField(name) + "," + line + "\n";
            for (std::getline(b, line); std::getline(b, line);)
                if (!line.empty())
                    losses += csvField(name) + "," + line + "\n";
        }
        return phases + "\n" + losses;
    }

    std::string combinedMarkdown(const std::string& title, const std::vector<std::pair<std::string, TrainResult>>& runs)
    {
        std::string out = "# bench --train: " + title + "\n";
        for (const auto& [name, r] : runs) {
            std::istringstream md(trainingReportMarkdown(r));
            std::string line;
            out += "\n";
            while (std::getline(md, line))
                out += (line.rfind('#', 0) == 0 ? "#" : "") + line + "\n";
        }
        return out;
    }
} // namespace

int runTrainBench(std::vector<BenchCase> cases, const std::vector<size_t>& chosen, const TrainBenchOptions& o)
{
    if (!o.report.empty()) {
        const std::string ext = std::filesystem::path(o.report).extension().string();
        if (ext != ".csv" && ext != ".json" && ext != ".md")
            throw InputError("--report " + o.report + ": bench --train writes .csv, .json or .md reports");
    }
    TrainRunOptions run;
    run.selections = o.selections;
    run.session = o.session;
    run.warmup = o.warmup;
    run.steps = o.steps;
    run.training.loss = parseLossKind(o.loss);
    run.training.optimizer.kind = parseOptimizerKind(o.optimizer);
    run.training.optimizer.lr = o.lr;
    checkOptimizer(run.training.optimizer);

    std::vector<std::string> header = { "case", "layer" };
    std::vector<bool> right = { false, false };
    for (const Selection& s : o.selections) {
        for (const char* p : { " fwd", " bwd-data", " bwd-weights", " update" })
            header.push_back(s.str() + p);
        right.insert(right.end(), { true, true, true, true });
    }
    TextTable table(header, right);
    std::vector<std::string> lines;
    std::vector<std::vector<double>> ratios(o.selections.size());
    std::vector<std::pair<std::string, TrainResult>> runs;
    nlohmann::ordered_json json = { { "format", "convscope-bench-train" }, { "version", 1 }, { "suite", o.title },
        { "loss", o.loss }, { "optimizer", o.optimizer }, { "lr", o.lr }, { "warmup", o.warmup }, { "steps", o.steps },
        { "cases", nlohmann::ordered_json::array() } };

    for (size_t c : chosen) {
        BenchCase& bc = cases[c];
        const ShapeReport shapes = inferShapes(bc.network);
        if (!shapes.ok())
            throw InputError(bc.name + ": " + shapes.firstError());
        const Tensor input = loadInput(bc.network.input, bc.network.baseDir);
        const Shape& out = shapes.layers.back().out;
        if (run.training.loss == LossKind::CrossEntropy)
            checkLossTarget(run.training.loss, out, { out.n });
        const Tensor target = benchTarget(run.training.loss, out);
        std::cerr << "bench --train: " << bc.name << " …\n";
        TrainResult r = trainNetwork(bc.network, input, target, run);
        r.options.stepDone = nullptr;
        for (size_t i = 0; i < r.network.layers.size(); ++i) {
            std::vector<std::string> row
                = { bc.name, r.network.layers[i].name + " " + layerKind(r.network.layers[i].spec).type };
            for (const SelectionTraining& sel : r.selections)
                for (int p = 0; p < 4; ++p)
                    row.push_back(trainCell(trainMedianPhase(sel, i, p)));
            table.addRow(row);
        }
        const TrainStepSums first = trainMedianSums(r.selections.front());
        std::string line = bc.name + " step:";
        for (size_t k = 0; k < r.selections.size(); ++k) {
            const SelectionTraining& sel = r.selections[k];
            const TrainStepSums s = trainMedianSums(sel);
            line += (k ? "; " : " ") + sel.selection.str() + " " + formatMs(s.step) + " ms (forward + loss "
                + formatMs(s.forward) + ", backward " + formatMs(s.backward) + ", update " + formatMs(s.update) + ")";
            if (k > 0 && s.step > 0) {
                ratios[k].push_back(first.step / s.step);
                line += " " + fixedDigits(first.step / s.step, 2) + "×, parameters within "
                    + shortScientific(sel.maxParamRelL2) + " of the first's";
            }
        }
        lines.push_back(line);
        json["cases"].push_back(
            { { "name", bc.name }, { "report", nlohmann::ordered_json::parse(trainingReportJson(r)) } });
        runs.emplace_back(bc.name, std::move(r));
    }

    std::cout << "\n";
    table.print(std::cout);
    for (const std::string& line : lines)
        std::cout << line << "\n";
    for (size_t k = 1; k < ratios.size(); ++k) {
        if (ratios[k].empty())
            continue;
        std::vector<double> v = ratios[k];
        double logSum = 0;
        for (double x : v)
            logSum += std::log(x);
        const double median = Stats::of(v).median, geomean = std::exp(logSum / double(v.size()));
        std::cout << "t(" << o.selections[0].str() << " step) / t(" << o.selections[k].str() << " step): median "
                  << fixedDigits(median, 2) << "×, geometric mean " << fixedDigits(geomean, 2) << "× over " << v.size()
                  << " cases\n";
        json["ratios"][o.selections[0].str() + "/" + o.selections[k].str()]
            = { { "median", median }, { "geomean", geomean }, { "per_case", ratios[k] } };
    }
    std::cout << "training step: loss " << o.loss << ", " << o.optimizer << " lr " << o.lr << ", " << o.warmup
              << " warm-up + " << o.steps
              << " timed steps per selection, selections one after another from the same weights; medians in ms\n";
    if (!o.json.empty())
        writeFileAtomically(o.json, json.dump(2) + "\n");
    if (!o.report.empty()) {
        const std::string ext = std::filesystem::path(o.report).extension().string();
        writeFileAtomically(o.report,
            ext == ".csv"      ? combinedCsv(runs)
                : ext == ".md" ? combinedMarkdown(o.title, runs)
                               : json.dump(2) + "\n");
    }
    return 0;
}

} // namespace convscope::cli
