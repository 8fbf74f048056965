// Whole-session checks that every training selection runs (the CPU's in tests/training, the onednn module's in
// tests/onednn/onednn_training_test.cpp): LeNet-5 beside cpu.direct, the DCGAN loop against PyTorch, and the phased
// step against step().
#pragma once

#include "compute/backend_registry.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/training/gan_run.h"
#include "compute/training/train_run.h"
#include "tests/training/gan_reference.h"
#include "tests/training/reference_files.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace convscope::test {

// The class of sample n: (7n + 3) mod classes.
inline Tensor classTargets(int64_t batch, int64_t classes)
{
    Tensor t(Shape::features(batch, 1));
    for (int64_t n = 0; n < batch; ++n)
        t.data()[n] = static_cast<float>((n * 7 + 3) % classes);
    return t;
}

// LeNet-5 (batch 4, SGD with momentum) trained six timed steps after one warm-up on cpu.direct and `other` side by
// side (trainNetwork): the loss goes down on both, each layer's phases are timed where they exist, both start from
// the same loss after the reset, and `other`'s parameters end within 1e-4 relative L2 of cpu.direct's.
inline TrainResult checkLenetBesideDirect(const Selection& other)
{
    Network net = loadNetwork(examplesDir() / "lenet5.json");
    net.input.batch = 4;
    const Tensor input = randomTensor(net.input.shape(), 1000);
    const Tensor target = classTargets(4, 10);
    TrainRunOptions opt;
    opt.selections = { Selection::parse("cpu.direct"), other };
    opt.training.optimizer.lr = 0.5;
    opt.training.optimizer.momentum = 0.9;
    opt.steps = 6;
    opt.warmup = 1;
    const TrainResult r = trainNetwork(net, input, target, opt);
    REQUIRE(r.selections.size() == 2);
    for (const SelectionTraining& s : r.selections) {
        INFO(s.selection.str());
        REQUIRE(s.steps.size() == 6);
        CHECK(s.steps.back().loss < s.steps.front().loss);
        for (const StepResult& st : s.steps) {
            CHECK(st.layers[0].backwardData < 0); // no input gradient asked for
            CHECK(st.layers[0].backwardWeights >= 0);
            CHECK(st.layers[0].update >= 0);
            CHECK(st.layers[1].backwardWeights < 0); // relu has no weights
        }
    }
    // After a reset the first timed step starts from the starting weights: both see the same first loss.
    CHECK(r.selections[0].steps[0].loss == Approx(r.selections[1].steps[0].loss).epsilon(1e-5));
    CHECK(r.selections[1].maxParamRelL2 < 1e-4);
    return r;
}

// DCGAN: two steps of the tutorial's loop (tests/data/training/dcgan, tools/make_gan_reference.py, float64) on
// `selection`, against PyTorch's losses, parameters and batch-norm statistics of both networks (1e-5 relative L2;
// the run and the comparison are gan_reference.h's, which the GPU tests share).
inline void checkDcganReference(const Selection& selection)
{
    const DcganReference d = loadDcganReference();
    const GanResult r = runDcganReference(d, selection, 0);
    REQUIRE(r.sigmoidFolded);
    checkDcganResult(d, r, selection.str(), 1e-5);
    for (const GanStep& step : r.steps)
        CHECK(step.phases.total() > 0);
    REQUIRE(std::holds_alternative<Sigmoid>(r.discriminator.layers.back().spec)); // put back
    CHECK(r.lastFake.shape().c == 3);
}

// The phased step (zeroGradients, forwardPass, backwardPass, updateParameters) equals step() on
// `backend`.`algorithm`: two Adam steps of the ResNet block case give the same losses and parameters.
inline void checkPhasedEqualsStep(Backend& backend, const std::string& algorithm)
{
    namespace fs = std::filesystem;
    const fs::path dir = dataDir() / "training" / "resnet_block";
    Network net = loadNetwork(dir / "network.json");
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    materializeParameters(net, shapes);
    const Tensor input = fromNpy(dir / "input.npy", shapes.input);
    const Shape& out = shapes.layers.back().out;
    TrainingOptions to;
    to.loss = LossKind::MSE;
    to.optimizer.kind = OptimizerSpec::Kind::Adam;
    to.optimizer.lr = 0.01;
    Tensor target(out);
    for (int64_t i = 0; i < target.numel(); ++i)
        target.data()[i] = float(i % 7) * 0.1f - 0.3f;
    auto whole = backend.createTrainingSession(algorithm, {});
    auto phased = backend.createTrainingSession(algorithm, {});
    whole->prepare(net, shapes, to);
    phased->prepare(net, shapes, to);
    for (int64_t s = 1; s <= 2; ++s) {
        const StepResult a = whole->step(input, target, s);
        std::vector<LayerPhaseMs> times;
        phased->zeroGradients();
        const Tensor y = phased->forwardPass(input, s, times);
        Tensor gy(out);
        const double loss = computeLoss(to.loss, y, target, gy);
        CHECK(loss == Approx(a.loss).epsilon(1e-6));
        phased->backwardPass(gy, s, times);
        phased->updateParameters(s, times);
        CHECK(times.size() == net.layers.size());
    }
    const Network x = whole->trainedNetwork(), y = phased->trainedNetwork();
    for (size_t i = 0; i < x.layers.size(); ++i)
        for (const auto& [p, q] : { std::pair { x.layers[i].weight, y.layers[i].weight },
                 { x.layers[i].bias, y.layers[i].bias }, { x.layers[i].runningMean, y.layers[i].runningMean } })
            if (p && q)
                CHECK(relL2(*q, *p) < 1e-6);
}

} // namespace convscope::test
