// `convscope-cli bench`: the benchmark harness. Built-in suites or a network file; every case is run with
// all selections interleaved pass by pass, so the ratio columns compare numbers measured side by side in
// one run. Outputs are validated against the reference before the timings are reported.
#include "cli/bench_bandwidth.h"
#include "cli/bench_suites.h"
#include "cli/commands.h"
#include "cli/cpu_machine_summary.h"
#include "cli/run_support.h"
#include "cli/text_table.h"
#include "compute/load_input.h"
#include "compute/materialize.h"

#include "compute/atomic_file.h"
#include "compute/cpu_threads.h"
#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/report.h"
#include "compute/session.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

namespace convscope::cli {

namespace {

    struct BenchArgs {
        std::string network;
        int64_t batch = 0;
        std::string suite;
        std::string backends = "cpu.im2col_gemm";
        bool fuse = false;
        bool graph = false;
        std::string cases;
        int64_t pairs = 0; // lecture-interpolation: only the first N ordered pairs
        int warmup = 3;
        int repeat = 10;
        std::string reference = "auto";
        std::string math = "fp32";
        std::string json;
        std::vector<std::string> backendOptions;
        int threads = 0; // CPU selections' threads; 0: every core (cpu_threads.h)
        bool train = false; // the training step instead of inference (bench_train.cpp)
        std::string loss = "mse", optimizer = "sgd";
        double lr = 0.001;
        std::string report;
    };

    // "0-2", "1,4,5" or "" (all).
    std::set<size_t> parseCases(const std::string& text, size_t count)
    {
        std::set<size_t> out;
        if (text.empty()) {
            for (size_t i = 0; i < count; ++i)
                out.insert(i);
            return out;
        }
        std::stringstream ss(text);
        std::string item;
        while (std::getline(ss, item, ',')) {
            try {
                const auto dash = item.find('-');
                const size_t a = std::stoul(item.substr(0, dash));
                const size_t b = dash == std::string::npos ? a : std::stoul(item.substr(dash + 1));
                for (size_t i = a; i <= b; ++i) {
                    if (i >= count)
                        throw InputError("");
                    out.insert(i);
                }
            } catch (const std::exception&) {
                throw InputError("--cases " + text + ": expected indices or ranges below " + std::to_string(count)
                    + ", like 0-2 or 1,4");
            }
        }
        return out;
    }

    // The backends whose layers are judged against the GPU's GEMM rate.
    bool onGpu(const std::string& backend) { return backend == "cuda" || backend == "cudnn"; }

    // The device's GEMM rates, measured in this run (issue 9, goal 2: custom kernels against cuBLAS SGEMM): the
    // cudnn backend's calibration (cuBLAS SGEMM 8192³, pedantic FP32, and the TF32/FP16/BF16 Tensor Core GEMMs),
    // else the cuda backend's (its FMA kernel and the same cuBLAS Tensor Core GEMMs).
    // Only when a GPU selection ran; nullopt when neither backend can measure.
    std::optional<CeilingsEntry> gpuGemmCeiling(const std::vector<Selection>& selections)
    {
        if (std::none_of(selections.begin(), selections.end(), [](const Selection& s) { return onGpu(s.backend); }))
            return std::nullopt;
        for (const char* backend : { "cudnn", "cuda" }) {
            const auto c = calibrateBackends({ Selection { backend, "auto" } }, SessionOptions {});
            if (!c.empty() && c.front().ceilings.peakGflops > 0)
                return c.front();
        }
        return std::nullopt;
    }

    struct GemmRate {
        double gflops = 0;
        std::string format; // "BF16", or "FP32" where the run's mode has no rate of its own
        std::string method;
    };
    GemmRate gemmRateFor(const DeviceCeilings& c, MathMode mode)
    {
        const std::string name = mathModeName(mode);
        const auto it = c.mathGflops.find(name);
        if (mode != MathMode::FP32 && it != c.mathGflops.end() && it->second > 0) {
            std::string upper = name;
            std::transform(
                upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return char(std::toupper(ch)); });
            const auto m = c.mathMethods.find(name);
            return { it->second, upper, m == c.mathMethods.end() ? "" : m->second };
        }
        std::string method = c.computeMethod;
        if (mode != MathMode::FP32) // say so rather than quietly judge a half-precision run against FP32
            method += "; no " + name + " GEMM rate was measured";
        return { c.peakGflops, "FP32", method };
    }

    // Layers this large count for the efficiency line (issue 9: "every unet-encoder layer of 38 GFLOP or more").
    constexpr double kEfficiencyMinGflop = 38.0;

} // namespace

namespace {

    // The table's columns: the layer, then each selection's median and rate, the ratios against the first, the error.
    TextTable makeTable(const std::vector<Selection>& selections)
    {
        std::vector<std::string> header = { "case", "layer", "output", "GFLOP" };
        std::vector<bool> right = { false, false, false, true };
        for (const auto& s : selections) {
            header.push_back(s.str() + " ms");
            header.push_back("GFLOP/s");
            right.insert(right.end(), { true, true });
        }
        for (size_t k = 1; k < selections.size(); ++k) {
            header.push_back(selections[0].str() + "/" + selections[k].str());
            right.push_back(true);
        }
        header.push_back("max rel L2");
        right.push_back(true);
        return TextTable(header, right);
    }

    // What a bench of network cases gathers over its cases: the table, the ratios, the lines printed under it, and
    // the JSON document.
    struct BenchReport {
        const BenchArgs& a;
        const ProfileOptions& opt;
        TextTable table;
        nlohmann::ordered_json json;
        std::vector<std::vector<double>> ratios;
        std::vector<std::string> graphLines; // CUDA Graph mode: the lean replay per case and selection
        std::vector<std::string> totalLines; // whole-pass medians per case
        std::vector<std::string> clockLines; // the GPU's clocks per case
        std::vector<std::string> fastestLines; // per layer, the fastest selection of each backend with several
        std::map<std::string, std::vector<size_t>> backendSelections;
        std::map<std::string, std::vector<double>> bestRatios;
        // GFLOP/s of each GPU selection (and of the best algorithm of each GPU backend) on conv layers of ≥ 38 GFLOP.
        std::map<std::string, std::vector<double>> bigLayerRates;
        BandwidthFractions bandwidth; // memory-bound layers against the copy bandwidth

        BenchReport(const BenchArgs& args, const ProfileOptions& options)
            : a(args)
            , opt(options)
            , table(makeTable(options.selections))
            , json({ { "format", "convscope-bench" }, { "version", 1 },
                  { "suite", args.suite.empty() ? args.network : args.suite }, { "selections", args.backends },
                  { "cases", nlohmann::ordered_json::array() } })
            , ratios(options.selections.size())
            , bandwidth(options)
        {
            for (size_t k = 1; k < opt.selections.size(); ++k)
                if (opt.selections[k].backend != opt.selections[0].backend)
                    backendSelections[opt.selections[k].backend].push_back(k);
            std::erase_if(backendSelections, [](const auto& item) { return item.second.size() < 2; });
        }

        void addCase(const BenchCase& bc, const RunResult& run);
        void addLayer(const BenchCase& bc, const RunResult& run, size_t i);
        void addCaseLines(const BenchCase& bc, const RunResult& run);
        void print();
        void printRatios();
        void printGemmFractions();
    };

    void BenchReport::addCase(const BenchCase& bc, const RunResult& run)
    {
        for (size_t i = 0; i < bc.network.layers.size(); ++i)
            addLayer(bc, run, i);
        addCaseLines(bc, run);
        bandwidth.addCase(bc.name, bc.network, run);
        json["cases"].push_back(
            { { "name", bc.name }, { "report", nlohmann::ordered_json::parse(reportJson(bc.network, run)) } });
    }

    void BenchReport::addLayer(const BenchCase& bc, const RunResult& run, size_t i)
    {
        const auto& sh = run.shapes.layers[i];
        std::vector<std::string> row
            = { bc.name, bc.network.layers[i].name + " " + layerTypeName(bc.network.layers[i].spec), sh.out.str(), [&] {
                   char b[32];
                   std::snprintf(b, sizeof b, "%.4g", sh.cost.flops / 1e9);
                   return std::string(b);
               }() };
        std::vector<double> median;
        double worst = 0;
        auto gflops = [&](double ms) { return sh.cost.flops / (ms * 1e6); };
        for (const auto& s : run.selections) {
            if (!s.ok) {
                row.insert(row.end(), { "failed", "" });
                median.push_back(0);
                continue;
            }
            const auto& lr = s.layers[i];
            median.push_back(lr.computeMs.median);
            row.push_back(formatMs(lr.computeMs.median));
            // A layer fusion folded into another takes no time of its own: no rate to show.
            row.push_back(lr.computeMs.median > 0 ? fixedDigits(gflops(lr.computeMs.median), 1) : "—");
            if (lr.error.valid)
                worst = std::max(worst, lr.error.relL2);
            else if (!lr.error.note.empty())
                worst = INFINITY;
        }
        if (std::holds_alternative<Conv2d>(bc.network.layers[i].spec) && sh.cost.flops >= kEfficiencyMinGflop * 1e9) {
            std::map<std::string, double> bestOfBackend;
            for (size_t k = 0; k < median.size(); ++k) {
                if (median[k] <= 0 || !onGpu(opt.selections[k].backend))
                    continue;
                const double rate = gflops(median[k]);
                bigLayerRates[opt.selections[k].str()].push_back(rate);
                double& best = bestOfBackend[opt.selections[k].backend];
                best = std::max(best, rate);
            }
            for (const auto& [backend, rate] : bestOfBackend)
                bigLayerRates["best " + backend + ".*"].push_back(rate);
        }
        // t(first) / t(fastest algorithm of a backend), for each other backend with several selections
        // ("onednn vs the best cpu algorithm", per layer).
        for (const auto& [backend, indices] : backendSelections) {
            double best = 0;
            size_t bestIndex = 0;
            for (size_t k : indices)
                if (median[k] > 0 && (best == 0 || median[k] < best)) {
                    best = median[k];
                    bestIndex = k;
                }
            if (median[0] > 0 && best > 0)
                bestRatios[backend].push_back(median[0] / best);
            // Name it ("with the best cuDNN algorithm beside it"), with what it ran (cudnn.auto's choice).
            if (best > 0) {
                const std::string& note = run.selections[bestIndex].layers[i].note;
                const std::string ratio = median[0] > 0
                    ? ", t(it) / t(" + opt.selections[0].str() + ") = " + fixedDigits(best / median[0], 2) + "×"
                    : "";
                fastestLines.push_back(bc.name + " " + bc.network.layers[i].name + ": fastest " + backend
                    + " selection " + opt.selections[bestIndex].str() + " " + formatMs(best) + " ms" + ratio
                    + (note.empty() ? "" : " (" + note + ")"));
            }
        }
        for (size_t k = 1; k < median.size(); ++k) {
            const bool ok = median[0] > 0 && median[k] > 0;
            row.push_back(ok ? fixedDigits(median[0] / median[k], 2) + "×" : "");
            if (ok)
                ratios[k].push_back(median[0] / median[k]);
        }
        if (!opt.reference)
            row.push_back("—");
        else if (!std::isfinite(worst))
            row.push_back("FAIL");
        else {
            char b[32];
            std::snprintf(b, sizeof b, "%.1e", worst);
            row.push_back(b);
        }
        table.addRow(row);
    }

    void BenchReport::addCaseLines(const BenchCase& bc, const RunResult& run)
    {
        // Whole passes (copies included): the fair comparison for a fused twin, whose folded layers take no
        // time of their own while its convolutions take theirs.
        if (run.selections.size() > 1 && bc.network.layers.size() > 1 && run.selections[0].ok) {
            std::string line = bc.name + " whole pass:";
            for (const auto& sel : run.selections)
                if (sel.ok)
                    line += " " + sel.selection.str() + " " + formatMs(sel.totalMs.median) + " ms ("
                        + fixedDigits(run.selections[0].totalMs.median / sel.totalMs.median, 2) + "×)";
            totalLines.push_back(line);
        }
        // The GPU's clocks as the case ended (NVML, gpu_clocks.h): a ratio measured at a throttled clock says so.
        for (const auto& sel : run.selections)
            if (const auto it = sel.metadata.find("clock_sm_mhz"); it != sel.metadata.end()) {
                auto get = [&](const char* key) {
                    const auto v = sel.metadata.find(key);
                    return v == sel.metadata.end() ? std::string("?") : v->second;
                };
                clockLines.push_back(bc.name + ": GPU at the end of the case: SM " + it->second + "/"
                    + get("clock_sm_max_mhz") + " MHz, memory " + get("clock_mem_mhz") + " MHz, " + get("gpu_pstate")
                    + ", " + get("gpu_temperature_c") + " °C, " + get("gpu_power_w")
                    + " W, clock events: " + get("clock_event_reasons"));
                break; // one line per case: every GPU selection shares the device
            }
        for (const auto& sel : run.selections)
            if (const auto it = sel.metadata.find("graph_pass_us"); it != sel.metadata.end())
                graphLines.push_back(bc.name + " " + sel.selection.str() + ": CUDA Graph replayed without per-layer "
                    + "events: " + it->second + " µs per pass, " + sel.metadata.at("graph_layer_us") + " µs per layer ("
                    + sel.metadata.at("graph_layers") + " launched layers, median)");
    }

    // Per selection (and per backend's best), the median and geometric mean of t(first) / t(it) over the layers.
    void BenchReport::printRatios()
    {
        std::vector<std::pair<std::string, std::vector<double>>> summaries;
        for (size_t k = 1; k < ratios.size(); ++k)
            summaries.emplace_back(opt.selections[k].str(), ratios[k]);
        for (const auto& [backend, r] : bestRatios)
            summaries.emplace_back("best " + backend + ".*", r);
        auto& out = json;
        for (const auto& [name, values] : summaries) {
            if (values.empty())
                continue;
            std::vector<double> r = values;
            std::sort(r.begin(), r.end());
            double logSum = 0;
            for (double v : r)
                logSum += std::log(v);
            const double median = r.size() % 2 ? r[r.size() / 2] : 0.5 * (r[r.size() / 2 - 1] + r[r.size() / 2]);
            std::cout << "t(" << opt.selections[0].str() << ") / t(" << name << "): median " << fixedDigits(median, 2)
                      << "×, geometric mean " << fixedDigits(std::exp(logSum / double(r.size())), 2) << "× over "
                      << r.size() << " layers\n";
            out["ratios"][opt.selections[0].str() + "/" + name]
                = { { "median", median }, { "geomean", std::exp(logSum / double(r.size())) }, { "per_layer", values } };
        }
    }

    // The big conv layers' rates as fractions of the device's GEMM rate measured in this run.
    void BenchReport::printGemmFractions()
    {
        if (bigLayerRates.empty())
            return;
        const auto ceiling = gpuGemmCeiling(opt.selections);
        if (!ceiling)
            return;
        auto& out = json;
        // The GEMM rate of the run's math mode: cuBLAS TF32/FP16/BF16 on Tensor Cores (issue 20's "≥ 60%
        // of the measured GEMM rate of that format"), SGEMM in FP32 or where no such rate was measured.
        const GemmRate rate = gemmRateFor(ceiling->ceilings, opt.session.math);
        const double gemm = rate.gflops;
        std::cout << rate.format << " GEMM rate measured in this run (" << rate.method
                  << "): " << fixedDigits(gemm / 1000.0, 1) << " TFLOP/s\n";
        out["gemm_ceiling"] = { { "gflops", gemm }, { "method", rate.method }, { "format", rate.format },
            { "math", mathModeName(opt.session.math) }, { "backend", ceiling->backend } };
        for (const auto& [name, rates] : bigLayerRates) {
            const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
            std::cout << "  " << name << " on conv layers of ≥ " << fixedDigits(kEfficiencyMinGflop, 0)
                      << " GFLOP: " << fixedDigits(100.0 * *lo / gemm, 0) << "–" << fixedDigits(100.0 * *hi / gemm, 0)
                      << "% of it (" << fixedDigits(*lo / 1000.0, 1) << "–" << fixedDigits(*hi / 1000.0, 1)
                      << " TFLOP/s counted as direct "
                      << "FLOPs, " << rates.size() << " layers)\n";
            std::vector<double> fractions;
            for (double r : rates)
                fractions.push_back(r / gemm);
            out["gemm_fraction"][name] = { { "min", *lo / gemm }, { "max", *hi / gemm }, { "per_layer", fractions } };
        }
    }

    void BenchReport::print()
    {
        std::cout << "\n";
        table.print(std::cout);
        printRatios();
        printGemmFractions();
        bandwidth.print(std::cout, json);
        for (const auto* lines : { &fastestLines, &totalLines, &graphLines, &clockLines })
            for (const auto& line : *lines)
                std::cout << line << "\n";
        if (const std::string cpu = cpuMachineSummary(opt.selections, &json); !cpu.empty())
            std::cout << cpu << "\n";
        std::cout << "math " << a.math << ", " << a.warmup << " warm-up + " << a.repeat
                  << " timed passes, selections interleaved; reference "
                  << (opt.reference ? opt.reference->str() : "none") << "\n";
        if (!a.json.empty())
            writeFileAtomically(a.json, json.dump(2) + "\n");
    }

    // The lecture-interpolation suite: the decoder of the 3-D autoencoder over pairs of latents, batched and one by
    // one.
    int runLectureSuite(const BenchArgs& a)
    {
        SessionOptions session;
        session.math = parseMathMode(a.math);
        session.extra = parseBackendOptions(a.backendOptions);
        return runLectureTable(autoencoder3dNetwork(1), "latent", parseSelections(a.backends), session, 50, a.pairs, 11,
            { DecodeMode::Batched, DecodeMode::OneByOne });
    }

    // Every other suite, or a network file: each case profiled with every selection interleaved, one table.
    int runCaseSuite(const BenchArgs& a)
    {
        std::vector<BenchCase> cases;
        if (!a.suite.empty()) {
            cases = makeSuite(a.suite);
        } else {
            Network n = openNetwork(a.network, a.batch);
            cases.push_back({ n.name, std::move(n) });
        }
        const auto chosen = parseCases(a.cases, cases.size());
        if (a.train) {
            TrainBenchOptions t;
            t.title = a.suite.empty() ? a.network : a.suite;
            t.selections = parseSelections(a.backends);
            t.session.math = parseMathMode(a.math);
            t.session.extra = parseBackendOptions(a.backendOptions);
            t.loss = a.loss;
            t.optimizer = a.optimizer;
            t.lr = a.lr;
            t.warmup = a.warmup;
            t.steps = a.repeat;
            t.report = a.report;
            t.json = a.json;
            return runTrainBench(std::move(cases), std::vector<size_t>(chosen.begin(), chosen.end()), t);
        }
        ProfileOptions opt;
        opt.selections = parseSelections(a.backends, a.fuse);
        opt.warmup = a.warmup;
        opt.repeat = a.repeat;
        opt.interleave = true;
        opt.reference = parseReference(a.reference, opt.selections);
        opt.session.math = parseMathMode(a.math);
        opt.session.extra = parseBackendOptions(a.backendOptions);
        if (a.graph)
            opt.session.extra["graph"] = "1";

        BenchReport report(a, opt);
        int rc = 0;
        for (size_t c : chosen) {
            BenchCase& bc = cases[c];
            const ShapeReport shapes = inferShapes(bc.network);
            if (!shapes.ok())
                throw InputError(bc.name + ": " + shapes.firstError());
            checkMemoryBudget(bc.name, shapes, opt);
            Tensor input = loadInput(bc.network.input, bc.network.baseDir);
            materializeParameters(bc.network, shapes);
            std::cerr << "bench: " << bc.name << " …\n";
            const RunResult run = profile(bc.network, input, opt);
            rc = std::max(rc, reportFailures(std::cerr, run));
            report.addCase(bc, run);
        }
        report.print();
        return rc;
    }

} // namespace

Command addBenchCommand(CLI::App& app)
{
    auto* cmd = app.add_subcommand("bench", "Benchmark selections side by side on a built-in suite or a network");
    auto a = std::make_shared<BenchArgs>();
    cmd->add_option("network", a->network, "network file (.json) or ONNX model (.onnx) instead of a suite");
    addBatchOption(cmd, a->batch);
    cmd->add_option("--suite", a->suite,
        "built-in suite: unet-encoder, lenet5, weak-shapes, fft, autoencoder3d (its convolutions at batch 64), "
        "lecture-interpolation (50 chairs, every ordered pair, 11 steps, batched and one by one), tensor-ops "
        "(transpose, resize and the normalisations on tensors of 256 MiB or more, against the copy bandwidth), "
        "norms (layer_norm, group_norm, instance_norm on 256 MiB tensors)");
    cmd->add_option("--pairs", a->pairs, "lecture-interpolation: only the first N ordered pairs (0: all 2450)")
        ->capture_default_str();
    cmd->add_option("--backends", a->backends, "comma-separated selections; ratios are against the first")
        ->capture_default_str();
    cmd->add_option("--cases", a->cases, "which cases of the suite, e.g. 0-2");
    cmd->add_option("--warmup", a->warmup, "untimed passes first")->capture_default_str();
    cmd->add_option("--repeat", a->repeat, "timed passes")->capture_default_str();
    cmd->add_option("--reference", a->reference, "auto, none, or a selection to validate against")
        ->capture_default_str();
    cmd->add_option("--math", a->math, kMathModeHelp)->capture_default_str();
    cmd->add_option("--json", a->json, "write the full result as JSON");
    cmd->add_flag("--graph", a->graph, "GPU sessions replay their layers from a CUDA Graph (option graph=1)");
    cmd->add_flag("--fuse", a->fuse,
        "also run each selection fused (+fused): batch norm folded, activation and residual add in the epilogue");
    cmd->add_option("--option", a->backendOptions, "backend option KEY=VALUE");
    cmd->add_flag("--train", a->train,
        "run the training step (forward, loss, backward, update) instead of inference; --repeat is the timed steps");
    cmd->add_option("--loss", a->loss, "--train: ce, mse or bce (a reproducible target)")->capture_default_str();
    cmd->add_option("--optimizer", a->optimizer, "--train: sgd or adam")->capture_default_str();
    cmd->add_option("--lr", a->lr, "--train: learning rate")->capture_default_str();
    cmd->add_option("--report", a->report, "--train: write FILE.csv, FILE.json or FILE.md");
    cmd->add_option("--threads", a->threads, "threads of the CPU selections (cpu.*, onednn.*; default: every core)")
        ->check(CLI::Range(1, 4096));
    return [a]() {
        setCpuThreadCount(a->threads);
        if (a->network.empty() == a->suite.empty())
            throw InputError("bench needs either a network file or --suite (unet-encoder, lenet5, weak-shapes, fft, "
                             "autoencoder3d, lecture-interpolation, tensor-ops, norms)");
        if (a->train && a->suite == "lecture-interpolation")
            throw InputError("bench --train: the lecture-interpolation suite decodes only; train a network or another "
                             "suite");
        if (!a->train && !a->report.empty())
            throw InputError("--report is bench --train's; bench writes --json");
        return a->suite == "lecture-interpolation" ? runLectureSuite(*a) : runCaseSuite(*a);
    };
}

} // namespace convscope::cli
