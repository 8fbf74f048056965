// `convscope-cli gan G.json D.json --batch 16 --steps N`: the DCGAN training step (compute/training/gan_run.h) on
// each selection, from the same starting weights: the discriminator's step on a real and a fake batch, the
// generator's step through the discriminator, every phase timed; reports, the trained weights and the last generated
// batch on request.
#include "cli/commands.h"
#include "cli/run_support.h"
#include "cli/text_table.h"
#include "cli/train_launcher.h"

#include "compute/error.h"
#include "compute/npy.h"
#include "compute/report.h"
#include "compute/stats.h"
#include "compute/training/distributed.h"
#include "compute/training/gan_run.h"
#include "compute/training/train_run.h"

#include <cstring>
#include <iostream>

namespace convscope::cli {

namespace {

    struct GanArgs {
        std::string generator, discriminator;
        int64_t batch = 16;
        int steps = 10;
        int warmup = 1;
        std::string lr = "0.0002";
        std::string betas = "0.5,0.999";
        uint64_t seed = 1;
        std::string backends = "cpu.im2col_gemm";
        std::string real, noise;
        std::string report, saveWeights, saveSamples;
        std::vector<std::string> backendOptions;
        std::string math = "fp32";
        bool syncEachPass = false;
        DistributedArgs ranks;
    };

    Tensor readTensor(const std::string& path, const char* option)
    {
        const NpyArray a = readNpy(path);
        if (a.dims.size() != 4 && a.dims.size() != 2)
            throw InputError(
                std::string(option) + " " + path + ": expected [N, C, H, W] or [N, F], got " + npyDimsText(a.dims));
        Tensor t(a.dims.size() == 4 ? Shape::nchw(a.dims[0], a.dims[1], a.dims[2], a.dims[3])
                                    : Shape::features(a.dims[0], a.dims[1]));
        std::memcpy(t.data(), a.data.data(), a.data.size() * sizeof(float));
        return t;
    }

    void printGanTable(std::ostream& out, const GanResult& r)
    {
        TextTable table({ "phase", "median ms", "min ms" }, { false, true, true });
        const auto row = [&](const char* name, double GanPhaseMs::*ms) {
            std::vector<double> v;
            for (const GanStep& s : r.steps)
                v.push_back(s.phases.*ms);
            const Stats st = Stats::of(v);
            table.addRow({ name, formatMs(st.median), formatMs(st.min) });
        };
        row("D on real: forward", &GanPhaseMs::dRealForward);
        row("D on real: backward", &GanPhaseMs::dRealBackward);
        row("G: forward", &GanPhaseMs::gForward);
        row("D on fake: forward", &GanPhaseMs::dFakeForward);
        row("D on fake: backward", &GanPhaseMs::dFakeBackward);
        row("D: update", &GanPhaseMs::dUpdate);
        row("G step, D: forward", &GanPhaseMs::gdForward);
        row("G step, D: backward", &GanPhaseMs::gdBackward);
        row("G: backward", &GanPhaseMs::gBackward);
        row("G: update", &GanPhaseMs::gUpdate);
        row("losses", &GanPhaseMs::loss);
        std::vector<double> totals;
        for (const GanStep& s : r.steps)
            totals.push_back(s.phases.total());
        const Stats t = Stats::of(totals);
        table.addRow({ "step", formatMs(t.median), formatMs(t.min) });
        std::vector<double> walls, data;
        for (const GanStep& s : r.steps) {
            walls.push_back(s.wallMs);
            data.push_back(s.dataMs);
        }
        const Stats w = Stats::of(walls), dm = Stats::of(data);
        table.addRow({ "step (wall clock)", formatMs(w.median), formatMs(w.min) });
        table.addRow({ "data (host, not in the step)", formatMs(dm.median), formatMs(dm.min) });
        out << r.options.selection.str() << " — batch " << r.options.batch << ", " << r.steps.size()
            << " timed steps\n";
        table.print(out);
        if (const std::string ranks = ganDataParallelLine(r); !ranks.empty())
            out << ranks << "\n";
        const GanStep& first = r.steps.front();
        const GanStep& last = r.steps.back();
        out << "loss D " << first.lossD << " → " << last.lossD << ", loss G " << first.lossG << " → " << last.lossG
            << "; D(real) " << last.dReal << ", D(fake) " << last.dFake << " at the last step\n";
        if (const std::string scale = ganLossScaleLine(r); !scale.empty())
            out << scale << "\n";
        out << "\n";
    }

} // namespace

Command addGanCommand(CLI::App& app)
{
    auto* cmd = app.add_subcommand(
        "gan", "Train a generator and a discriminator as the DCGAN tutorial does, every phase of the step timed");
    auto a = std::make_shared<GanArgs>();
    cmd->add_option("generator", a->generator, "the generator's network file (a code [N, Z, 1, 1] to an image)")
        ->required();
    cmd->add_option("discriminator", a->discriminator, "the discriminator's network file (an image to one score)")
        ->required();
    cmd->add_option("--batch", a->batch, "images per step")->capture_default_str();
    cmd->add_option("--steps", a->steps, "timed steps")->capture_default_str();
    cmd->add_option("--warmup", a->warmup, "untimed steps first; both networks are reset after them")
        ->capture_default_str();
    cmd->add_option("--lr", a->lr, "Adam's learning rate, both networks")->capture_default_str();
    cmd->add_option("--betas", a->betas, "Adam's beta1,beta2")->capture_default_str();
    cmd->add_option("--seed", a->seed, "seed of the generated real images and codes")->capture_default_str();
    cmd->add_option("--backends", a->backends,
           "comma-separated selections that have the phased step: cpu.direct, cpu.im2col_gemm, onednn.auto, "
           "cudnn.auto, cuda.implicit_gemm, cuda.direct")
        ->capture_default_str();
    cmd->add_option("--real", a->real, "real images .npy [N, C, H, W] used at every step instead of generated ones");
    cmd->add_option("--noise", a->noise, "codes .npy [N, Z, 1, 1] used at every step instead of seeded normal ones");
    cmd->add_option("--report", a->report, "write a report of the first selection: FILE.csv, FILE.json or FILE.md");
    cmd->add_option("--save-weights", a->saveWeights,
        "write both trained networks of the first selection to DIR/generator and DIR/discriminator");
    cmd->add_option("--save-samples", a->saveSamples, "write the last generated batch as .npy");
    cmd->add_option("--math", a->math,
           "fp32 (the reference arithmetic); tf32 (convolutions and GEMMs on TF32 Tensor Cores where the backend "
           "has them: cudnn, and our kernels as cuda.tensor_core; FP32 elsewhere in the step, as PyTorch's "
           "allow_tf32); fp16 / bf16 (mixed precision on cudnn, as PyTorch's autocast; fp16 with one GradScaler "
           "across both optimizers, --option loss_scale=S its initial scale); bf16 also on onednn.auto where the CPU "
           "computes bf16, fp16 and bf16 on cpu.direct, cpu.im2col_gemm and every cuda algorithm as PyTorch's CPU "
           "autocast)")
        ->capture_default_str();
    cmd->add_option("--option", a->backendOptions, "backend option KEY=VALUE");
    cmd->add_flag("--sync-each-pass", a->syncEachPass,
        "on a GPU pair, wait for every pass and read its times and D's scores as it ends, instead of once a step "
        "(the losses' gradients then come from the host): to see what those waits cost");
    addDistributedOptions(cmd, a->ranks);
    return [a]() {
        if (const std::optional<int> launched = launchRanksIfAsked(a->ranks))
            return *launched;
        if (!a->report.empty()) {
            const std::string ext = std::filesystem::path(a->report).extension().string();
            if (ext != ".csv" && ext != ".json" && ext != ".md")
                throw InputError("--report " + a->report + ": gan writes .csv, .json or .md reports");
        }
        GanRunOptions opt;
        OptimizerSpec adam;
        adam.kind = OptimizerSpec::Kind::Adam;
        adam.lr = parseNumber(a->lr, "--lr");
        const auto comma = a->betas.find(',');
        if (comma == std::string::npos)
            throw InputError("--betas " + a->betas + ": expected two numbers, beta1,beta2 (e.g. 0.5,0.999)");
        adam.beta1 = parseNumber(a->betas.substr(0, comma), "--betas beta1");
        adam.beta2 = parseNumber(a->betas.substr(comma + 1), "--betas beta2");
        checkOptimizer(adam);
        opt.generatorOptimizer = opt.discriminatorOptimizer = adam;
        opt.batch = a->batch;
        opt.steps = a->steps;
        opt.warmup = a->warmup;
        opt.seed = a->seed;
        opt.syncEachPass = a->syncEachPass;
        opt.session.extra = parseBackendOptions(a->backendOptions);
        opt.session.math = parseMathMode(a->math);
        const Network g = openNetwork(a->generator, 0);
        const Network d = openNetwork(a->discriminator, 0);
        Tensor real, noise;
        if (!a->real.empty()) {
            real = readTensor(a->real, "--real");
            opt.realImages = &real;
        }
        if (!a->noise.empty()) {
            noise = readTensor(a->noise, "--noise");
            opt.noise = &noise;
        }
        opt.group = joinRanksIfAsked(a->ranks);
        opt.collectiveTimeoutSeconds = a->ranks.rendezvousTimeout;
        const bool quiet = opt.group && opt.group->rank() != 0; // rank 0 prints and writes the merged report
        std::vector<GanResult> results;
        for (const Selection& sel : parseSelections(a->backends)) {
            opt.selection = sel;
            results.push_back(trainGan(g, d, opt));
            if (!quiet)
                printGanTable(std::cout, results.back());
        }
        if (quiet)
            return 0;
        const GanResult& first = results.front();
        if (!a->report.empty())
            writeGanReport(a->report, first);
        if (!a->saveWeights.empty()) {
            saveTrainedWeights(std::filesystem::path(a->saveWeights) / "generator", first.generator);
            saveTrainedWeights(std::filesystem::path(a->saveWeights) / "discriminator", first.discriminator);
            std::cout << "trained networks of " << first.options.selection.str() << " saved to " << a->saveWeights
                      << "/generator and " << a->saveWeights << "/discriminator\n";
        }
        if (!a->saveSamples.empty()) {
            writeNpy(a->saveSamples, first.lastFake.shape().dims(), first.lastFake.data());
            std::cout << "the last generated batch" << (first.worldSize > 1 ? " (rank 0's slice)" : "") << " saved to "
                      << a->saveSamples << "\n";
        }
        return 0;
    };
}

} // namespace convscope::cli
