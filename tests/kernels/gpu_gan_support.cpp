// The GPU training tests' phased-step and DCGAN checks (gpu_training_support.h), shared by cudnn_gan_test.cpp and
// cuda_gan_test.cpp.
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/training/gan_run.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/kernels/gpu_training_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

namespace convscope::test {

namespace fs = std::filesystem;

namespace {
    fs::path dcganDir() { return dataDir() / "training" / "dcgan"; }

    Tensor npyTensor(const fs::path& path)
    {
        const NpyArray a = readNpy(path);
        Tensor t(a.dims.size() == 4 ? Shape::nchw(a.dims[0], a.dims[1], a.dims[2], a.dims[3])
                                    : Shape::features(1, int64_t(a.data.size())));
        std::copy(a.data.begin(), a.data.end(), t.data());
        return t;
    }
} // namespace

TrainCase dcganCase(const std::string& name, uint64_t seed)
{
    return makeTrainCase(loadNetwork(dcganDir() / (name + ".json")), seed, LossKind::MSE);
}

void checkPhasedEqualsStep(
    const std::string& backend, const std::string& algorithm, const TrainCase& c, int steps, double tolerance)
{
    auto gpuBackend = backendOrSkip(backend);
    if (!gpuBackend)
        return;
    TrainingOptions to;
    to.loss = c.loss;
    to.optimizer = adamForTests();
    to.inputGradient = true;
    auto whole = gpuBackend->createTrainingSession(algorithm, {});
    auto phased = gpuBackend->createTrainingSession(algorithm, {});
    REQUIRE(whole);
    REQUIRE(phased);
    whole->prepare(c.net, c.shapes, to);
    phased->prepare(c.net, c.shapes, to);
    const std::string who = c.net.name + " on " + backend + "." + algorithm + ", phased against step()";
    const size_t count = c.net.layers.size();
    for (int s = 1; s <= steps; ++s) {
        const std::string at = who + ", step " + std::to_string(s);
        const StepResult a = whole->step(c.input, c.target, s);
        std::vector<LayerPhaseMs> forward, backward, update;
        phased->zeroGradients();
        const Tensor y = phased->forwardPass(c.input, s, forward);
        Tensor gy(y.shape());
        const double loss = computeLoss(to.loss, y, c.target, gy);
        INFO(at << ": loss " << loss << " against step()'s " << a.loss);
        CHECK(std::abs(loss - a.loss) <= tolerance * std::max(1.0, std::abs(a.loss)));
        phased->backwardPass(gy, s, backward);
        // One backward pass since zeroGradients: its sums are the step's gradients.
        expectTrainClose(phased->inputGradient(), whole->inputGradient(), at + ": the input gradient", tolerance);
        const std::vector<ParameterRef> refs = whole->parameters();
        REQUIRE(phased->parameters().size() == refs.size());
        for (const ParameterRef& ref : refs)
            expectTrainClose(phased->parameterGradient(ref), whole->parameterGradient(ref),
                at + ": the gradient of " + c.net.layers[ref.layer].name + "." + ref.name, tolerance);
        phased->updateParameters(s, update);
        REQUIRE(forward.size() == count);
        REQUIRE(backward.size() == count);
        REQUIRE(update.size() == count);
        for (size_t i = 0; i < count; ++i) {
            INFO(at << ": layer " << i << " (" << c.net.layers[i].name << ") phase times");
            CHECK(forward[i].forward >= 0);
            CHECK(forward[i].backwardWeights < 0); // each pass times its own phases only
            CHECK(backward[i].forward < 0);
            CHECK((backward[i].backwardWeights >= 0) == (a.layers[i].backwardWeights >= 0));
            CHECK((update[i].update >= 0) == (a.layers[i].update >= 0));
            CHECK(update[i].backwardData < 0);
        }
    }
    expectSameParameters(
        phased->trainedNetwork(), whole->trainedNetwork(), who, "after " + std::to_string(steps) + " steps", tolerance);
}

void checkDcganReference(const std::string& backend, const std::string& algorithm, double tolerance)
{
    if (!backendOrSkip(backend))
        return;
    const fs::path dir = dcganDir();
    std::ifstream in(dir / "reference.json");
    REQUIRE(in);
    const nlohmann::json ref = nlohmann::json::parse(in);
    const Tensor real = npyTensor(dir / "real.npy"), noise = npyTensor(dir / "noise.npy");
    GanRunOptions o;
    o.selection = Selection { backend, algorithm, false };
    o.generatorOptimizer.kind = OptimizerSpec::Kind::Adam;
    o.generatorOptimizer.lr = ref["lr"];
    o.generatorOptimizer.beta1 = ref["betas"][0];
    o.generatorOptimizer.beta2 = ref["betas"][1];
    o.discriminatorOptimizer = o.generatorOptimizer;
    o.batch = real.shape().n;
    o.warmup = 1; // and a reset: the timed steps start again from the file's weights
    o.steps = ref["steps"];
    o.realImages = &real;
    o.noise = &noise;
    const GanResult r = trainGan(loadNetwork(dir / "generator.json"), loadNetwork(dir / "discriminator.json"), o);
    const std::string who = "the DCGAN pair on " + o.selection.str();
    REQUIRE(r.steps.size() == ref["losses"].size());
    for (size_t s = 0; s < r.steps.size(); ++s) {
        INFO(who << ", step " << s + 1);
        CHECK(r.steps[s].lossD == Approx(ref["losses"][s]["loss_d"].get<double>()).epsilon(tolerance));
        CHECK(r.steps[s].lossG == Approx(ref["losses"][s]["loss_g"].get<double>()).epsilon(tolerance));
        CHECK(r.steps[s].phases.gBackward > 0);
        CHECK(r.steps[s].phases.dUpdate > 0);
    }
    int compared = 0;
    for (const auto& [prefix, net] : { std::pair { "generator", &r.generator }, { "discriminator", &r.discriminator } })
        for (const Layer& layer : net->layers)
            for (const auto& [what, tensor] : { std::pair { "weight", layer.weight }, { "bias", layer.bias },
                     { "running_mean", layer.runningMean }, { "running_var", layer.runningVar } }) {
                const fs::path expected
                    = dir / ("after." + std::string(prefix) + "." + layer.name + "." + what + ".npy");
                if (!fs::exists(expected))
                    continue;
                INFO(who << ": " << prefix << " " << layer.name << "." << what);
                REQUIRE(tensor);
                const Tensor want = npyTensor(expected);
                Tensor got(want.shape());
                REQUIRE(tensor->numel() == want.numel());
                std::copy(tensor->data(), tensor->data() + tensor->numel(), got.data());
                CHECK(trainRelDiff(got, want) < tolerance);
                ++compared;
            }
    CHECK(compared == 13); // every file the reference wrote
}

} // namespace convscope::test
