// The GPU training tests' phased-step and DCGAN checks (gpu_training_support.h), shared by cudnn_gan_test.cpp and
// cuda_gan_test.cpp; the DCGAN reference's run and comparison are the CPU test's (tests/training/gan_reference.h).
#include "compute/network_json.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/kernels/gpu_training_support.h"
#include "tests/test_support.h"
#include "tests/training/gan_reference.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

namespace convscope::test {

TrainCase dcganCase(const std::string& name, uint64_t seed)
{
    return makeTrainCase(loadNetwork(dataDir() / "training" / "dcgan" / (name + ".json")), seed, LossKind::MSE);
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
    const DcganReference d = loadDcganReference();
    const Selection selection { backend, algorithm, false };
    // One warm-up step and a reset: the timed steps start again from the file's weights. The pair read once a step
    // (its losses' gradients made on the device), and after every pass (through the host).
    for (const bool syncEachPass : { false, true }) {
        const GanResult r = runDcganReference(d, selection, 1, {}, syncEachPass);
        const std::string reads = syncEachPass ? "after every pass" : "once a step";
        checkDcganResult(d, r, "the DCGAN pair on " + selection.str() + ", read " + reads, tolerance);
        CHECK_THAT(r.metadata.at("gan_reads"), Catch::StartsWith(reads));
        for (const GanStep& step : r.steps) {
            CHECK(step.phases.gBackward > 0);
            CHECK(step.phases.dUpdate > 0);
            CHECK(step.phases.gdForward > 0);
            CHECK(step.phases.dFakeBackward > 0);
            CHECK(step.wallMs >= step.phases.total() * 0.5); // the phases are the step's own
        }
    }
}

} // namespace convscope::test
