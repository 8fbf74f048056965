// `convscope-cli interpolate`: the autoencoder lecture's latent interpolation (compute/interpolation.h). Encodes two
// inputs, blends their latents for t = 0 … 1 and decodes every blend on each selection, the steps as one batch or one
// by one (or both), timing encoder and decoder apart; --out writes the decoded volumes and the latents as .npy.
// --lecture runs the lecture's whole workload instead: 50 inputs (chair variants), every ordered pair, 11 steps each.
#include "cli/bench_suites.h"
#include "cli/commands.h"
#include "cli/run_support.h"
#include "cli/text_table.h"

#include "compute/error.h"
#include "compute/interpolation.h"
#include "compute/load_input.h"
#include "compute/memory_budget.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/voxel_samples.h"

#include <cctype>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace convscope::cli {

namespace interpolate_cmd {

    struct Args {
        std::string network, at = "latent", from, to, backends = "cpu.im2col_gemm", out, memoryBudget, math = "fp32";
        int steps = 11, warmup = 1, repeat = 3, inputs = 50;
        int64_t pairs = 0;
        bool oneByOne = false, both = false, lecture = false;
        std::vector<std::string> backendOptions;
    };

    std::string ms(double v)
    {
        std::ostringstream s;
        s.setf(std::ios::fixed);
        s.precision(v < 10 ? 3 : v < 1000 ? 2 : 1);
        s << v;
        return s.str();
    }

    std::string ratio(double v)
    {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f×", v);
        return buf;
    }

    std::vector<bool> alignment(size_t columns) // the selection on the left, numbers on the right
    {
        std::vector<bool> right(columns, true);
        right[0] = false;
        return right;
    }

    std::string safeName(const std::string& s)
    {
        std::string out;
        for (char c : s)
            out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
        return out;
    }

    Tensor oneItem(const Network& net, const std::string& source)
    {
        InputSpec in = net.input;
        in.batch = 1;
        in.source = source;
        return loadInput(in, {});
    }

    std::vector<DecodeMode> modesOf(const Args& a)
    {
        if (a.both)
            return { DecodeMode::Batched, DecodeMode::OneByOne };
        return { a.oneByOne ? DecodeMode::OneByOne : DecodeMode::Batched };
    }

    int runInterpolation(
        const Args& a, const Network& net, const std::vector<Selection>& selections, const SessionOptions& session)
    {
        if (a.from.empty() || a.to.empty())
            throw InputError("interpolate needs --from A and --to B (input sources: sample:voxels:sphere, a .npy file, "
                             "random:SEED), or --lecture for the lecture's workload");
        const Tensor from = oneItem(net, a.from), to = oneItem(net, a.to);
        InterpolationOptions o;
        o.at = a.at;
        o.steps = a.steps;
        o.modes = modesOf(a);
        o.selections = selections;
        o.warmup = a.warmup;
        o.repeat = a.repeat;
        o.session = session;
        const InterpolationResult r = interpolate(net, from, to, o);

        std::cout << net.name << "\n  cut at \"" << a.at << "\": latent " << r.split.latent.str() << ", encoder "
                  << r.split.encoder.layers.size() << " layers, decoder " << r.split.decoder.layers.size()
                  << " layers\n  from " << a.from << " to " << a.to << ", " << a.steps
                  << " steps new_z = (1 − t)·z1 + t·z2, t = 0 … 1\n  median of " << a.repeat << " timed runs after "
                  << a.warmup << " warm-up; decoder times cover every step\n\n";
        std::vector<std::string> header { "selection", "encoder ms (2 inputs)" };
        for (DecodeMode m : o.modes) {
            header.push_back(std::string("decoder ") + decodeModeName(m) + " ms");
            header.push_back("per step ms");
        }
        if (o.modes.size() == 2)
            header.push_back("batching speed-up");
        header.push_back("rel L2 vs " + selections.front().str());
        TextTable table(header, alignment(header.size()));
        const InterpolationRun* first = r.runs.front().ok ? &r.runs.front() : nullptr;
        int rc = 0;
        for (const InterpolationRun& run : r.runs) {
            if (!run.ok) {
                std::cerr << run.selection.str() << ": " << run.failure << "\n";
                rc = std::max(rc, run.unsupported ? 3 : 1);
                continue;
            }
            std::vector<std::string> row { run.selection.str(), ms(run.encoderMs.median) };
            for (const DecodeResult& d : run.decodes) {
                row.push_back(ms(d.ms.median));
                row.push_back(ms(d.ms.median / double(a.steps)));
            }
            if (run.decodes.size() == 2)
                row.push_back(ratio(run.decodes[1].ms.median / std::max(run.decodes[0].ms.median, 1e-9)));
            const ErrorMetrics e
                = first ? compare(run.decodes.front().decoded, first->decodes.front().decoded) : ErrorMetrics {};
            char l2[32];
            std::snprintf(l2, sizeof l2, "%.2e", e.relL2);
            row.push_back(e.valid ? l2 : "-");
            table.addRow(row);
        }
        table.print(std::cout);

        if (!a.out.empty() && first) {
            const std::filesystem::path dir(a.out);
            std::filesystem::create_directories(dir);
            const Tensor latents = interpolateLatents(first->z1, first->z2, r.ts);
            writeNpy(dir / "latents.npy", latents.shape().dims(), latents.data());
            std::vector<float> ts(r.ts.begin(), r.ts.end());
            writeNpy(dir / "t.npy", { int64_t(ts.size()) }, ts.data());
            for (const InterpolationRun& run : r.runs)
                if (run.ok)
                    for (const DecodeResult& d : run.decodes) {
                        const std::string file = safeName(run.selection.str()) + "."
                            + (d.mode == DecodeMode::Batched ? "batched" : "one_by_one") + ".decoded.npy";
                        writeNpy(dir / file, d.decoded.shape().dims(), d.decoded.data());
                    }
            std::cout << "\nwrote latents.npy " << latents.shape().str() << ", t.npy and the decoded volumes "
                      << first->decodes.front().decoded.shape().str() << " per selection and mode to " << a.out << "\n";
        }
        return rc;
    }

    int runLecture(
        const Args& a, const Network& net, const std::vector<Selection>& selections, const SessionOptions& session)
    {
        if (!a.from.empty() || !a.to.empty())
            throw InputError("--lecture makes its own inputs (chair variants); drop --from / --to");
        return runLectureTable(net, a.at, selections, session, a.inputs, a.pairs, a.steps, modesOf(a));
    }

} // namespace interpolate_cmd

int runLectureTable(const Network& net, const std::string& at, const std::vector<Selection>& selections,
    const SessionOptions& session, int inputCount, int64_t pairCount, int steps, const std::vector<DecodeMode>& modes)
{
    using namespace interpolate_cmd;
    if (inputCount < 2)
        throw InputError("--inputs must be at least 2");
    if (!net.input.shape().isVolume())
        throw InputError("the lecture's workload encodes voxel chairs, so " + net.name + " needs a volume input");
    // The lecture's data set: 50 chairs. Here: seeded chair variants (compute/voxel_samples.h).
    const InputSpec& in = net.input;
    Tensor inputs(Shape::ncdhw(inputCount, in.channels, in.depth, in.height, in.width));
    const int64_t per = inputs.numel() / inputCount;
    for (int i = 0; i < inputCount; ++i) {
        const Tensor one
            = makeVoxelSample("voxels:chair", 1, in.channels, in.depth, in.height, in.width, uint64_t(i + 1));
        std::copy(one.data(), one.data() + per, inputs.data() + i * per);
    }
    LectureOptions o;
    o.at = at;
    o.steps = steps;
    o.pairs = pairCount;
    o.modes = modes;
    o.selections = selections;
    o.session = session;
    o.progress = [](double f, const std::string& what) {
        std::cerr << "\r" << int(f * 100) << "% " << what << "          " << std::flush;
    };
    const std::vector<LectureRun> runs = runLectureWorkload(net, inputs, o);
    std::cerr << "\r" << std::string(72, ' ') << "\r";
    const int64_t pairs = runs.empty() ? 0 : runs.front().pairs;
    std::cout << net.name << " — the lecture's workload: " << inputCount << " chair variants, " << pairs
              << " ordered pairs × " << steps << " steps = " << pairs * steps
              << " decoder runs (one run each, after one warm-up)\n\n";
    std::vector<std::string> header { "selection", "encode " + std::to_string(inputCount) + " inputs ms" };
    for (DecodeMode m : modes) {
        header.push_back(std::string("decode ") + decodeModeName(m) + " s");
        header.push_back("µs per decoder run");
    }
    if (modes.size() == 2)
        header.push_back("batching speed-up");
    TextTable table(header, alignment(header.size()));
    int rc = 0;
    for (const LectureRun& run : runs) {
        if (!run.ok) {
            std::cerr << run.selection.str() << ": " << run.failure << "\n";
            rc = std::max(rc, run.unsupported ? 3 : 1);
            continue;
        }
        std::vector<std::string> row { run.selection.str(), ms(run.encodeMs) };
        for (const auto& [mode, total] : run.decodeMs) {
            row.push_back(ms(total / 1000.0));
            row.push_back(ms(total * 1000.0 / double(run.decoderRuns)));
        }
        if (run.decodeMs.size() == 2)
            row.push_back(ratio(run.decodeMs[1].second / std::max(run.decodeMs[0].second, 1e-9)));
        table.addRow(row);
    }
    table.print(std::cout);
    return rc;
}

Command addInterpolateCommand(CLI::App& app)
{
    using namespace interpolate_cmd;
    auto* cmd = app.add_subcommand("interpolate",
        "Encode two inputs, interpolate their latents new_z = (1 − t)·z1 + t·z2 and decode every step, timing encoder "
        "and decoder apart (the autoencoder lecture)");
    auto a = std::make_shared<Args>();
    cmd->add_option("network", a->network, "network file (.json or .onnx), e.g. resources/networks/autoencoder3d.json")
        ->required();
    cmd->add_option("--at", a->at, "the layer whose output is the latent (the encoder's last layer)")
        ->capture_default_str();
    cmd->add_option("--from", a->from, "first input: sample:voxels:sphere|torus|cube|chair, an .npy file, random:SEED");
    cmd->add_option("--to", a->to, "second input, as --from");
    cmd->add_option("--steps", a->steps, "interpolation steps, t = 0 … 1")->capture_default_str();
    cmd->add_flag("--one-by-one", a->oneByOne, "decode the steps one at a time instead of as one batch");
    cmd->add_flag("--both", a->both, "decode both ways, batched and one by one, and show the speed-up");
    cmd->add_option("--backends", a->backends, "comma-separated selections, e.g. cpu.im2col_gemm,onednn.auto")
        ->capture_default_str();
    cmd->add_option("--warmup", a->warmup, "untimed runs first")->capture_default_str();
    cmd->add_option("--repeat", a->repeat, "timed runs")->capture_default_str();
    cmd->add_option("--out", a->out, "write latents.npy, t.npy and each selection's decoded volumes (.npy) here");
    cmd->add_flag("--lecture", a->lecture,
        "the lecture's workload instead: --inputs chair variants, every ordered pair (or the first --pairs), --steps "
        "each");
    cmd->add_option("--inputs", a->inputs, "with --lecture: how many inputs")->capture_default_str();
    cmd->add_option("--pairs", a->pairs, "with --lecture: only the first N ordered pairs (0: all)")
        ->capture_default_str();
    cmd->add_option("--math", a->math, kMathModeHelp)->capture_default_str();
    cmd->add_option("--memory-budget", a->memoryBudget, "host memory the run may use: 8G, 512MiB, 25%");
    cmd->add_option("--option", a->backendOptions, "backend option KEY=VALUE");
    return [a]() {
        if (!a->memoryBudget.empty())
            setHostMemoryBudget(parseMemorySize(a->memoryBudget, "--memory-budget"));
        if (a->oneByOne && a->both)
            throw InputError("--one-by-one and --both: give one of them");
        const Network net = loadNetwork(a->network);
        const std::vector<Selection> selections = parseSelections(a->backends);
        SessionOptions session;
        session.math = parseMathMode(a->math);
        session.extra = parseBackendOptions(a->backendOptions);
        return a->lecture ? runLecture(*a, net, selections, session) : runInterpolation(*a, net, selections, session);
    };
}

} // namespace convscope::cli
