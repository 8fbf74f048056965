// `convscope-cli train NET --target y.npy --loss ce|mse|bce --optimizer sgd|adam --lr 0.01 --steps N`: the training
// step (forward, loss, backward, update) on each selection, every layer's phases timed apart, reported like `run`;
// --save-weights writes the trained parameters (compute/training/train_run.h).
#include "cli/commands.h"
#include "cli/run_support.h"
#include "cli/text_table.h"
#include "cli/train_launcher.h"

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/load_input.h"
#include "compute/npy.h"
#include "compute/report.h"
#include "compute/stats.h"
#include "compute/training/distributed.h"
#include "compute/training/phase_sums.h"
#include "compute/training/train_run.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>

namespace convscope::cli {

namespace {

    struct TrainArgs {
        std::string network;
        int64_t batch = 0;
        std::string input, target;
        std::string loss = "ce";
        std::string optimizer = "sgd";
        std::string lr = "0.01";
        std::string momentum = "0";
        std::string weightDecay = "0";
        int steps = 10;
        int warmup = 1;
        std::string backends = "cpu.direct";
        std::string report;
        std::string trace;
        std::string saveWeights;
        std::string inputGradient;
        std::string betas = "0.9,0.999";
        std::string eps = "1e-8";
        std::vector<std::string> backendOptions;
        std::string math = "fp32";
        DistributedArgs ranks;
    };

    // The input .npy sets the network's input size (as `run --input` does).
    Tensor loadNpyInput(Network& net, const std::string& path)
    {
        NpyArray a = readNpy(path);
        InputSpec& in = net.input;
        if (a.dims.size() == 5)
            in = { a.dims[0], a.dims[1], a.dims[3], a.dims[4], false, path, a.dims[2] };
        else if (a.dims.size() == 4)
            in = { a.dims[0], a.dims[1], a.dims[2], a.dims[3], false, path };
        else if (a.dims.size() == 3)
            in = { 1, a.dims[0], a.dims[1], a.dims[2], false, path };
        else if (a.dims.size() == 2)
            in = { a.dims[0], a.dims[1], 1, 1, true, path };
        else
            throw InputError("--input " + path
                + ": a training input must be [N, C, D, H, W], [N, C, H, W], [C, H, W] or [N, F], got "
                + npyDimsText(a.dims));
        Tensor t(in.shape());
        std::memcpy(t.data(), a.data.data(), a.data.size() * sizeof(float));
        return t;
    }

    std::string cell(const std::vector<double>& v) { return v.empty() ? "—" : formatMs(Stats::of(v).median); }

    // Data parallel: the buckets' all-reduce and how much of it the backward hid (medians over the steps).
    void printBuckets(std::ostream& out, const SelectionTraining& sel)
    {
        if (sel.steps.empty() || sel.steps.front().buckets.empty())
            return;
        std::vector<double> total, hidden, backward;
        for (const StepResult& s : sel.steps) {
            double t = 0, h = 0;
            for (const BucketTiming& b : s.buckets) {
                t += b.allReduceMs;
                h += b.hiddenMs;
            }
            total.push_back(t);
            hidden.push_back(h);
            backward.push_back(s.backwardMs);
        }
        const double t = Stats::of(total).median, h = Stats::of(hidden).median;
        out << "all-reduce " << formatMs(t) << " ms in " << sel.steps.front().buckets.size() << " buckets, "
            << formatMs(h) << " ms of it hidden behind the backward (" << formatMs(Stats::of(backward).median)
            << " ms), " << formatMs(std::max(0.0, t - h)) << " ms exposed\n";
    }

    // FP16 mixed precision: the loss scale over the timed steps and the steps whose update was skipped (a gradient
    // overflowed), as torch.cuda.amp.GradScaler would have skipped them.
    void printLossScale(std::ostream& out, const SelectionTraining& sel)
    {
        if (sel.steps.empty() || sel.steps.front().lossScale <= 0)
            return;
        int skipped = 0;
        for (const StepResult& s : sel.steps)
            skipped += s.skipped ? 1 : 0;
        out << "loss scale " << sel.steps.front().lossScale << " (step 1) → " << sel.steps.back().lossScale << " (step "
            << sel.steps.size() << "); " << skipped << " of " << sel.steps.size()
            << " steps skipped (a gradient overflowed FP16: no update, the scale halved)\n";
    }

    void printTable(std::ostream& out, const TrainResult& r)
    {
        for (const SelectionTraining& sel : r.selections) {
            out << sel.label() << " — medians of " << sel.steps.size() << " steps, ms\n";
            TextTable table({ "#", "layer", "type", "forward", "bwd-data", "bwd-weights", "update" },
                { true, false, false, true, true, true, true });
            for (size_t i = 0; i < r.network.layers.size(); ++i) {
                std::vector<double> ph[4];
                for (const StepResult& s : sel.steps) {
                    const LayerPhaseMs& t = s.layers[i];
                    const double v[4] = { t.forward, t.backwardData, t.backwardWeights, t.update };
                    for (int p = 0; p < 4; ++p)
                        if (v[p] >= 0)
                            ph[p].push_back(v[p]);
                }
                table.addRow({ std::to_string(i), r.network.layers[i].name, layerKind(r.network.layers[i].spec).type,
                    cell(ph[0]), cell(ph[1]), cell(ph[2]), cell(ph[3]) });
            }
            table.print(out);
            // The medians of each step's phase sums: what a step costs, split as PyTorch users think of it.
            std::vector<double> sums[4], wall;
            for (const StepResult& s : sel.steps) {
                const PhaseSums p = sumPhases(s.layers);
                const double t[4] = { s.lossMs + p.forward, p.backward, p.update, s.lossMs + p.total() };
                wall.push_back(s.wallMs);
                for (int p = 0; p < 4; ++p)
                    sums[p].push_back(t[p]);
            }
            out << "step " << cell(sums[3]) << " ms: forward + loss " << cell(sums[0]) << ", backward " << cell(sums[1])
                << ", update " << cell(sums[2]) << "; wall clock " << cell(wall) << " ms a step\n";
            out << "loss " << sel.steps.front().loss << " (step 1) → " << sel.steps.back().loss << " (step "
                << sel.steps.size() << ")";
            if (&sel != &r.selections.front())
                out << "; parameters within " << shortScientific(sel.maxParamRelL2) << " (relative L2) of "
                    << r.selections.front().label() << "'s";
            out << "\n";
            printLossScale(out, sel);
            printBuckets(out, sel);
            out << "\n";
        }
    }

} // namespace

Command addTrainCommand(CLI::App& app)
{
    auto* cmd = app.add_subcommand(
        "train", "Run the training step (forward, loss, backward, update) and time every layer's phases");
    auto a = std::make_shared<TrainArgs>();
    cmd->add_option("network", a->network, "network file (.json) or ONNX model (.onnx)")->required();
    addBatchOption(cmd, a->batch);
    cmd->add_option(
        "--input", a->input, "input .npy ([N,C,D,H,W], [N,C,H,W], [C,H,W] or [N,F]); default: the network's input");
    cmd->add_option("--target", a->target, "target .npy: class indices [N] (ce), or the output's shape (mse, bce)")
        ->required();
    cmd->add_option("--loss", a->loss, "ce (cross-entropy from logits), mse, bce (BCE with logits)")
        ->capture_default_str();
    cmd->add_option("--optimizer", a->optimizer, "sgd or adam (PyTorch's)")->capture_default_str();
    cmd->add_option("--lr", a->lr, "learning rate")->capture_default_str();
    cmd->add_option("--momentum", a->momentum, "SGD momentum (dampening 0, no nesterov)")->capture_default_str();
    cmd->add_option("--weight-decay", a->weightDecay, "L2 weight decay added to the gradient")->capture_default_str();
    cmd->add_option("--betas", a->betas, "Adam's beta1,beta2")->capture_default_str();
    cmd->add_option("--eps", a->eps, "Adam's eps (added outside the square root)")->capture_default_str();
    cmd->add_option("--steps", a->steps, "timed training steps")->capture_default_str();
    cmd->add_option("--warmup", a->warmup, "untimed steps first; the weights are reset after them")
        ->capture_default_str();
    cmd->add_option("--backends", a->backends,
           "comma-separated selections: cpu.direct, cpu.im2col_gemm, onednn.auto, cudnn.auto, "
           "cuda.implicit_gemm, cuda.direct (FP32)")
        ->capture_default_str();
    cmd->add_option("--report", a->report, "write a report: FILE.csv, FILE.json or FILE.md");
    cmd->add_option("--trace", a->trace, "write a Chrome trace (Perfetto, chrome://tracing) of the steps' phases");
    cmd->add_option("--save-input-gradient", a->inputGradient,
        "write the last step's gradient of the loss with respect to the input (a saliency map) as .npy");
    cmd->add_option("--save-weights", a->saveWeights,
        "write the trained parameters of the first selection as .npy files and DIR/network.json");
    cmd->add_option("--math", a->math,
           "fp32 (the reference arithmetic); tf32 (convolutions and GEMMs on TF32 Tensor Cores where the backend "
           "has them: cudnn, and our kernels as cuda.tensor_core; FP32 elsewhere in the step, as PyTorch's "
           "allow_tf32); fp16 or bf16 (mixed precision on cudnn, as PyTorch's autocast: half activations, a final "
           "softmax in FP32, FP32 parameters; fp16 with GradScaler's loss scaling); bf16 also on onednn.auto where "
           "the CPU computes bf16, and fp16 and bf16 on cpu.direct, cpu.im2col_gemm and every cuda algorithm, as "
           "PyTorch's CPU autocast (the convolutions' and linear layers' tensors rounded, the rest FP32; fp16 with "
           "GradScaler's loss scaling); tf32 on the CPU trains FP32")
        ->capture_default_str();
    cmd->add_option("--option", a->backendOptions, "backend option KEY=VALUE (e.g. clock=cpu)");
    addDistributedOptions(cmd, a->ranks);
    return [a]() {
        if (const std::optional<int> launched = launchRanksIfAsked(a->ranks))
            return *launched;
        if (!a->report.empty()) {
            const std::string ext = std::filesystem::path(a->report).extension().string();
            if (ext != ".csv" && ext != ".json" && ext != ".md")
                throw InputError("--report " + a->report + ": train writes .csv, .json or .md reports");
        }
        TrainRunOptions opt;
        opt.training.loss = parseLossKind(a->loss);
        opt.training.optimizer.kind = parseOptimizerKind(a->optimizer);
        opt.training.optimizer.lr = parseNumber(a->lr, "--lr");
        opt.training.optimizer.momentum = parseNumber(a->momentum, "--momentum");
        opt.training.optimizer.weightDecay = parseNumber(a->weightDecay, "--weight-decay");
        const auto comma = a->betas.find(',');
        if (comma == std::string::npos)
            throw InputError("--betas " + a->betas + ": expected two numbers, beta1,beta2 (e.g. 0.9,0.999)");
        opt.training.optimizer.beta1 = parseNumber(a->betas.substr(0, comma), "--betas beta1");
        opt.training.optimizer.beta2 = parseNumber(a->betas.substr(comma + 1), "--betas beta2");
        opt.training.optimizer.eps = parseNumber(a->eps, "--eps");
        opt.training.inputGradient = !a->inputGradient.empty();
        if (opt.training.optimizer.kind == OptimizerSpec::Kind::Adam && opt.training.optimizer.momentum != 0)
            throw InputError("--momentum is SGD's; Adam has its betas (0.9, 0.999)");
        checkOptimizer(opt.training.optimizer);
        opt.steps = a->steps;
        opt.warmup = a->warmup;
        opt.selections = parseSelections(a->backends);
        opt.session.extra = parseBackendOptions(a->backendOptions);
        opt.session.math = parseMathMode(a->math);

        Network net = openNetwork(a->network, a->batch);
        if (net.layers.empty())
            throw InputError((net.name.empty() ? a->network : net.name) + " has no layers: nothing to train");
        Tensor input = a->input.empty() ? Tensor() : loadNpyInput(net, a->input);
        const ShapeReport shapes = inferShapes(net);
        if (!shapes.ok())
            throw InputError(net.name + ": " + shapes.firstError());
        if (input.empty())
            input = loadInput(net.input, net.baseDir);
        const Shape& out = shapes.layers.back().out;
        const NpyArray t = readNpy(a->target);
        const LossKind loss = opt.training.loss;
        checkLossTarget(loss, out, t.dims);
        Tensor target(loss == LossKind::CrossEntropy ? Shape::features(out.n, 1) : out);
        std::memcpy(target.data(), t.data.data(), t.data.size() * sizeof(float));

        const std::shared_ptr<ProcessGroup> group = joinRanksIfAsked(a->ranks);
        opt.training.group = group;
        opt.training.collectiveTimeoutSeconds = a->ranks.rendezvousTimeout;
        const bool quiet = group && group->rank() != 0; // rank 0 prints and writes the merged report
        opt.stepDone = [](size_t, int step, double value) {
            if (!std::isfinite(value))
                std::cerr << "step " << step << ": loss " << value << "\n";
        };
        const TrainResult r = trainNetwork(net, input, target, opt);
        if (quiet)
            return 0;
        if (r.worldSize > 1)
            std::cout << "data parallel: " << r.worldSize << " ranks, a batch of " << r.globalBatch << " split "
                      << r.globalBatch / r.worldSize << " per rank\n";
        std::cout << r.network.name << " — input " << r.shapes.input.str() << ", loss " << a->loss << ", "
                  << a->optimizer << " lr " << opt.training.optimizer.lr << ", math " << mathModeName(opt.session.math)
                  << "\n\n";
        printTable(std::cout, r);
        if (!a->report.empty())
            writeTrainingReport(a->report, r);
        if (!a->trace.empty())
            writeFileAtomically(a->trace, trainingChromeTrace(r));
        if (!a->inputGradient.empty()) {
            const SelectionTraining& first = r.selections.front();
            writeNpy(a->inputGradient, first.inputGradient->shape().dims(), first.inputGradient->data());
            std::cout << "input gradient of " << first.selection.str() << "'s last step saved to " << a->inputGradient
                      << "\n";
        }
        if (!a->saveWeights.empty()) {
            saveTrainedWeights(a->saveWeights, r.selections.front().trained);
            std::cout << "trained weights of " << r.selections.front().selection.str() << " saved to " << a->saveWeights
                      << " (network.json reads them)\n";
        }
        return 0;
    };
}

} // namespace convscope::cli
