// `convscope-cli run NET.json`: run every layer on the chosen selections with honest timings, check each
// output against the reference, print a per-layer table, and write reports, a trace and the outputs.
#include "cli/commands.h"
#include "cli/run_support.h"

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/image_input.h"
#include "compute/memory_budget.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/report.h"
#include "compute/session.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace convscope::cli {

namespace {

    struct RunArgs {
        std::string network;
        int64_t batch = 0;
        std::string backends = "cpu.direct";
        bool fuse = false;
        bool graph = false;
        int warmup = 3;
        int repeat = 10;
        std::string input;
        std::string report;
        std::string trace;
        std::string dumpDir;
        std::string sessionDir;
        std::string sweep;
        bool noCalibrate = false;
        std::string math = "fp32";
        std::string reference = "auto";
        bool noInterleave = false;
        bool explore = false;
        std::string memoryBudget;
        std::vector<std::string> backendOptions;
    };

    std::string lower(std::string s)
    {
        for (char& c : s)
            c = char(std::tolower(static_cast<unsigned char>(c)));
        return s;
    }

    // --input overrides the network's input source and size with a .npy tensor or an image.
    Tensor overrideInput(Network& net, const std::string& path)
    {
        const std::string ext = lower(std::filesystem::path(path).extension().string());
        if (ext == ".npy") {
            NpyArray a = readNpy(path);
            InputSpec& in = net.input;
            if (a.dims.empty() || a.dims.size() > size_t(Shape::kMaxRank))
                throw InputError(path + ": an input .npy has 1 to " + std::to_string(Shape::kMaxRank)
                    + " dimensions, got " + std::to_string(a.dims.size()));
            if (!in.dims.empty() || a.dims.size() == 1 || a.dims.size() == 6) {
                // A general tensor (the network's input is one, or no image reading fits): the array's own dims.
                in = { a.dims[0], a.dims.size() > 1 ? a.dims[1] : 1, 1, 1, false, path };
                in.dims = a.dims;
            } else if (a.dims.size() == 5) {
                in = { a.dims[0], a.dims[1], a.dims[3], a.dims[4], false, path, a.dims[2] };
            } else if (a.dims.size() == 4) {
                in = { a.dims[0], a.dims[1], a.dims[2], a.dims[3], false, path };
            } else if (a.dims.size() == 3) {
                in = { 1, a.dims[0], a.dims[1], a.dims[2], false, path };
            } else if (a.dims.size() == 2) {
                in = { a.dims[0], a.dims[1], 1, 1, true, path };
            } else {
                throw InputError(path
                    + ": an input .npy must be [N, C, D, H, W], [N, C, H, W], [C, H, W] or [N, F], got "
                    + std::to_string(a.dims.size()) + " dimensions");
            }
            Tensor t(in.shape());
            std::memcpy(t.data(), a.data.data(), a.data.size() * sizeof(float));
            return t;
        }
        if (net.input.flat || !net.input.dims.empty())
            throw InputError(path + ": this network's input is " + net.input.shape().str()
                + ", not an image; give its input as an .npy of that shape");
        const ImageSize size = imageSize(path);
        net.input.height = size.height;
        net.input.width = size.width;
        net.input.source = path;
        return loadImageInput(path, net.input.batch, net.input.channels, size.height, size.width);
    }

    void dumpOutputs(const std::filesystem::path& dir, const Network& net, const SelectionResult& sel)
    {
        std::filesystem::create_directories(dir);
        // Zero-padded to the digits of the last index (at least 2), so that the names sort in layer order.
        const int digits = std::max<int>(2, int(std::to_string(sel.layers.empty() ? 0 : sel.layers.size() - 1).size()));
        for (size_t i = 0; i < sel.layers.size(); ++i) {
            if (!sel.layers[i].output)
                continue; // folded away by fusion: this layer's own output was never computed
            const auto& t = *sel.layers[i].output;
            const Shape& s = t.shape();
            const std::vector<int64_t> dims = s.dims();
            std::string index = std::to_string(i);
            index.insert(0, size_t(std::max<int>(0, digits - int(index.size()))), '0');
            writeNpy(dir / (index + "_" + safeFileName(net.layers[i].name) + ".npy"), dims, t.data());
        }
    }

} // namespace

Command addRunCommand(CLI::App& app)
{
    auto* cmd = app.add_subcommand("run", "Run a network on one or more selections and time every layer");
    auto a = std::make_shared<RunArgs>();
    cmd->add_option("network", a->network, "network file (.json) or ONNX model (.onnx)")->required();
    addBatchOption(cmd, a->batch);
    cmd->add_option("--backends", a->backends, "comma-separated selections, e.g. cpu.direct,cpu.im2col_gemm")
        ->capture_default_str();
    cmd->add_option("--warmup", a->warmup, "untimed passes first")->capture_default_str();
    cmd->add_option("--repeat", a->repeat, "timed passes")->capture_default_str();
    cmd->add_option("--input", a->input, ".npy ([N,C,H,W], [C,H,W] or [N,F]) or image; overrides the input");
    cmd->add_option("--report", a->report, "write a report: FILE.csv, FILE.json or FILE.md");
    cmd->add_option("--trace", a->trace, "write a Chrome trace (Perfetto, chrome://tracing)");
    cmd->add_option("--dump-outputs", a->dumpDir,
        "write every layer's output as NN_<name>.npy (NN zero-padded to the layer count)");
    cmd->add_option("--save-session", a->sessionDir,
        "write a session folder (result JSON, network, input, every layer's output) for the window's Open Session");
    cmd->add_option("--sweep", a->sweep,
        "with --save-session: also run a sweep preset (unet-channels, crossover, kernel-size; NAME:A-B keeps points "
        "A to B) on the same selections and save it");
    cmd->add_flag("--no-calibrate", a->noCalibrate, "with --save-session: skip measuring the roofline ceilings");
    cmd->add_option("--math", a->math, kMathModeHelp)->capture_default_str();
    cmd->add_option("--reference", a->reference, "auto, none, or a selection to check outputs against")
        ->capture_default_str();
    cmd->add_flag("--no-interleave", a->noInterleave, "run each selection's passes back to back");
    cmd->add_flag("--graph", a->graph, "GPU sessions replay their layers from a CUDA Graph (option graph=1)");
    cmd->add_flag("--fuse", a->fuse,
        "also run each selection fused (+fused): batch norm folded, activation and residual add in the epilogue");
    cmd->add_flag("--explore", a->explore, "add the backend's algorithm explorer (cudnn) to the JSON report");
    cmd->add_option("--memory-budget", a->memoryBudget,
        "host memory the run and every tensor may use: 8G, 512MiB, 25% of RAM, or a plain number of GiB "
        "(default: CONVSCOPE_MEMORY_BUDGET, else half of RAM)");
    cmd->add_option("--option", a->backendOptions, "backend option KEY=VALUE (e.g. workspace_limit=1073741824)");
    return [a]() {
        // A report the command line cannot write is refused now, not after a run that may take minutes.
        if (!a->report.empty()) {
            const std::string ext = std::filesystem::path(a->report).extension().string();
            if (ext != ".csv" && ext != ".json" && ext != ".md")
                throw InputError("--report " + a->report + ": convscope-cli writes .csv, .json or .md reports"
                    + (ext == ".html" || ext == ".pdf"
                            ? "; HTML and PDF reports with charts come from the window (File > Export > Report, or "
                              "convscope --screenshot shot.png --run SELECTIONS --export-report "
                                + a->report + ")"
                            : std::string()));
        }
        if (!a->memoryBudget.empty()) {
            // A plain number is GiB, as this option always took; anything with a unit or % goes to the parser.
            const bool plain = a->memoryBudget.find_first_not_of("0123456789.") == std::string::npos;
            setHostMemoryBudget(parseMemorySize(a->memoryBudget + (plain ? "G" : ""), "--memory-budget"));
        }
        Network net = openNetwork(a->network, a->batch);
        if (net.layers.empty()) {
            std::cout << (net.name.empty() ? a->network : net.name) << " has no layers: nothing to run\n";
            return 0;
        }
        ProfileOptions opt;
        opt.selections = parseSelections(a->backends, a->fuse);
        opt.warmup = a->warmup;
        opt.repeat = a->repeat;
        opt.interleave = !a->noInterleave;
        opt.keepOutputs = !a->dumpDir.empty() || !a->sessionDir.empty();
        opt.explore = a->explore;
        opt.reference = parseReference(a->reference, opt.selections);
        opt.session.math = parseMathMode(a->math);
        opt.session.extra = parseBackendOptions(a->backendOptions);
        if (a->graph)
            opt.session.extra["graph"] = "1";

        if (!a->sweep.empty() && a->sessionDir.empty())
            throw InputError("--sweep is saved with the session: give --save-session DIR too");
        std::optional<SweepSpec> sweepSpec;
        if (!a->sweep.empty()) {
            const auto colon = a->sweep.find(':');
            sweepSpec = sweepPreset(
                a->sweep.substr(0, colon), colon == std::string::npos ? std::string() : a->sweep.substr(colon + 1));
        }
        // profile() infers the shapes once, checks the memory budget before allocating, loads the input and
        // materialises the parameters; --input gives it the input instead.
        Tensor input;
        if (!a->input.empty())
            input = overrideInput(net, a->input);
        // Without --input, profile() loads the network's own input and hands it back, so a saved session keeps it.
        const RunResult run = input.empty() ? profile(net, opt, &input) : profile(net, input, opt);
        net = run.network;
        std::cout << net.name << " — input " << run.shapes.input.str() << " (" << net.input.source << ")\n\n";
        printResultTable(std::cout, net, run);
        const int rc = reportFailures(std::cerr, run);
        if (!a->report.empty())
            writeReport(a->report, net, run);
        if (!a->trace.empty())
            writeFileAtomically(a->trace, reportChromeTrace(net, run));
        if (!a->dumpDir.empty()) {
            for (const auto& s : run.selections)
                if (s.ok) {
                    dumpOutputs(a->dumpDir, net, s);
                    break;
                }
        }
        if (!a->sessionDir.empty()) {
            const auto ceilings
                = a->noCalibrate ? std::vector<CeilingsEntry> {} : calibrateBackends(opt.selections, opt.session);
            writeSession(a->sessionDir, net, input, run, ceilings);
            if (sweepSpec) {
                SweepOptions so;
                so.selections = opt.selections;
                so.warmup = opt.warmup;
                so.repeat = opt.repeat;
                so.session = opt.session;
                so.pointDone = [](const SweepResult& r, double) {
                    std::cerr << "sweep point " << r.samples.size() << " of " << r.spec.points.size() << " done\n";
                };
                writeSessionSweep(a->sessionDir, runSweep(net, *sweepSpec, so));
            }
            std::cout << "\nsession saved to " << a->sessionDir << " (open it with convscope --open-session "
                      << a->sessionDir << ")\n";
        }
        return rc;
    };
}

} // namespace convscope::cli
