// The DCGAN reference (tests/data/training/dcgan, written by tools/make_gan_reference.py: two steps of PyTorch's DCGAN
// tutorial loop on a toy generator and discriminator, in float64), shared by the CPU test (gan_test.cpp) and the GPU
// ones (tests/kernels/gpu_gan_support.cpp): the run that reproduces it on a selection, and the comparison with it.
#pragma once

#include "compute/network_json.h"
#include "compute/training/gan_run.h"
#include "tests/test_support.h"
#include "tests/training/reference_files.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>

namespace convscope::test {

struct DcganReference {
    std::filesystem::path dir;
    nlohmann::json values; // reference.json: lr, betas, steps, each step's loss_d and loss_g
    Tensor real, noise; // the real batch [N, C, H, W] and the codes [N, Z, 1, 1] of every step
};

inline DcganReference loadDcganReference()
{
    DcganReference d;
    d.dir = dataDir() / "training" / "dcgan";
    std::ifstream in(d.dir / "reference.json");
    REQUIRE(in);
    d.values = nlohmann::json::parse(in);
    const NpyArray real = readNpy(d.dir / "real.npy"), noise = readNpy(d.dir / "noise.npy");
    REQUIRE(real.dims.size() == 4);
    REQUIRE(noise.dims.size() >= 2);
    d.real = fromNpy(d.dir / "real.npy", Shape::nchw(real.dims[0], real.dims[1], real.dims[2], real.dims[3]));
    d.noise = fromNpy(d.dir / "noise.npy", Shape::nchw(noise.dims[0], noise.dims[1], 1, 1));
    return d;
}

// trainGan on `selection` with the reference's Adam (both networks), batch, steps, real images and codes, after
// `warmup` untimed steps (both networks are reset after them, so the timed steps start from the file's weights);
// syncEachPass: GanRunOptions', a GPU pair read after every pass instead of once a step.
inline GanResult runDcganReference(const DcganReference& d, const Selection& selection, int64_t warmup,
    const SessionOptions& session = {}, bool syncEachPass = false)
{
    GanRunOptions o;
    o.syncEachPass = syncEachPass;
    o.selection = selection;
    o.session = session;
    o.generatorOptimizer.kind = OptimizerSpec::Kind::Adam;
    o.generatorOptimizer.lr = d.values["lr"];
    o.generatorOptimizer.beta1 = d.values["betas"][0];
    o.generatorOptimizer.beta2 = d.values["betas"][1];
    o.discriminatorOptimizer = o.generatorOptimizer;
    o.batch = d.real.shape().n;
    o.warmup = warmup;
    o.steps = d.values["steps"];
    o.realImages = &d.real;
    o.noise = &d.noise;
    return trainGan(loadNetwork(d.dir / "generator.json"), loadNetwork(d.dir / "discriminator.json"), o);
}

// Each step's two losses, and both networks' parameters and batch-norm statistics after the steps (every file the
// reference wrote: 13), within `tolerance` (relative, relL2Flat); the messages name `who`. Returns the worst
// tensor's relative L2 distance, for the tests that report what they measured.
inline double checkDcganResult(const DcganReference& d, const GanResult& r, const std::string& who, double tolerance)
{
    double worst = 0;
    REQUIRE(r.steps.size() == d.values["losses"].size());
    for (size_t s = 0; s < r.steps.size(); ++s) {
        INFO(who << ", step " << s + 1);
        CHECK(r.steps[s].lossD == Approx(d.values["losses"][s]["loss_d"].get<double>()).epsilon(tolerance));
        CHECK(r.steps[s].lossG == Approx(d.values["losses"][s]["loss_g"].get<double>()).epsilon(tolerance));
    }
    int compared = 0;
    for (const auto& [prefix, net] : { std::pair { "generator", &r.generator }, { "discriminator", &r.discriminator } })
        for (const Layer& layer : net->layers)
            for (const auto& [what, tensor] : { std::pair { "weight", layer.weight }, { "bias", layer.bias },
                     { "running_mean", layer.runningMean }, { "running_var", layer.runningVar } }) {
                const std::filesystem::path expected
                    = d.dir / ("after." + std::string(prefix) + "." + layer.name + "." + what + ".npy");
                if (!std::filesystem::exists(expected))
                    continue;
                INFO(who << ": " << prefix << " " << layer.name << "." << what);
                REQUIRE(tensor);
                const double distance = relL2Flat(*tensor, flat(expected));
                CHECK(distance < tolerance);
                worst = std::max(worst, distance);
                ++compared;
            }
    CHECK(compared == 13); // every file the reference wrote
    return worst;
}

// Session options for the reference in a half mode; FP16 reads the loss scale (the GradScaler's initial one).
inline SessionOptions dcganHalfSession(MathMode math, const char* lossScale)
{
    SessionOptions o;
    o.math = math;
    o.extra["loss_scale"] = lossScale;
    return o;
}

// The reference on `selection` in fp16 (one GradScaler for both optimizers, from 256: the toy pair's gradients stay
// far below FP16's range there, so no step is skipped and the trajectory is PyTorch's within rounding) and in bf16,
// one warm-up step: every tensor within 5e-3 and 5e-2 (relative L2) of PyTorch's float64, each step's scale reported
// and nothing skipped. The worst tensor of each mode is reported (WARN) and returned, fp16's first.
inline std::pair<double, double> checkDcganHalfModes(const DcganReference& d, const Selection& selection)
{
    double worst[2] = { 0, 0 };
    int m = 0;
    for (const auto& [math, bound] : { std::pair { MathMode::FP16, 5e-3 }, { MathMode::BF16, 5e-2 } }) {
        const GanResult r = runDcganReference(d, selection, 1, dcganHalfSession(math, "256"));
        const std::string who = "the DCGAN pair on " + selection.str() + " in " + mathModeName(math);
        worst[m] = checkDcganResult(d, r, who, bound);
        WARN(who << ": the worst parameter or statistic is " << worst[m] << " (relative L2) from PyTorch's float64");
        CHECK(worst[m] > 0); // the half type did round: FP32 is ~1e-7 from the reference
        for (const GanStep& step : r.steps) {
            CHECK(step.lossScale == (math == MathMode::FP16 ? 256.0 : 0.0));
            CHECK_FALSE(step.dSkipped);
            CHECK_FALSE(step.gSkipped);
        }
        ++m;
    }
    return { worst[0], worst[1] };
}

// A run of the reference at a loss scale of 1e30 in fp16, no warm-up: 1e30 overflows FP16 at the loss's gradient
// already, so both networks' updates are skipped at every step, the scale halves once a step (one scaler for both),
// the losses stay finite and no parameter moves (batch norm's running statistics do: they move in the forward, as in
// PyTorch).
inline void checkDcganOverflowSkipsEveryStep(const DcganReference& d, const GanResult& r)
{
    REQUIRE(r.steps.size() == 2);
    CHECK(r.steps[0].lossScale == 1e30);
    CHECK(r.steps[1].lossScale == 5e29);
    for (const GanStep& step : r.steps) {
        CHECK(step.dSkipped);
        CHECK(step.gSkipped);
        CHECK(std::isfinite(step.lossD));
        CHECK(std::isfinite(step.lossG));
    }
    CHECK(ganLossScaleLine(r).find("discriminator's at 2 of 2 steps, the generator's at 2") != std::string::npos);
    for (const auto& [file, trained] :
        { std::pair { "generator.json", &r.generator }, { "discriminator.json", &r.discriminator } }) {
        const Network initial = loadNetwork(d.dir / file);
        REQUIRE(initial.layers.size() == trained->layers.size());
        for (size_t i = 0; i < initial.layers.size(); ++i)
            for (const auto& [what, before, after] :
                { std::tuple { "weight", initial.layers[i].weight, trained->layers[i].weight },
                    { "bias", initial.layers[i].bias, trained->layers[i].bias } }) {
                if (!before)
                    continue;
                INFO(file << ": " << initial.layers[i].name << "." << what);
                REQUIRE(after);
                CHECK(relL2Flat(*after, *before) == 0.0);
            }
    }
}

} // namespace convscope::test
