// The GPU training tests' shared steps (gpu_training_support.h).
#include "tests/kernels/gpu_training_support.h"

#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"
#include "tests/training/torch_reference_cases.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <tuple>

namespace convscope::test {

namespace fs = std::filesystem;

void expectTrainClose(const Tensor& value, const Tensor& reference, const std::string& what, double tolerance)
{
    const double diff = trainRelDiff(value, reference);
    INFO(what << ": relative L2 " << diff << " (tolerance " << tolerance << ")");
    CHECK(diff < tolerance);
}

void expectSameParameters(
    const Network& value, const Network& reference, const std::string& who, const std::string& when, double tolerance)
{
    REQUIRE(value.layers.size() == reference.layers.size());
    for (size_t i = 0; i < reference.layers.size(); ++i) {
        const Layer &a = reference.layers[i], &b = value.layers[i];
        for (const auto& [what, x, y] : { std::tuple { "weight", a.weight, b.weight },
                 std::tuple { "bias", a.bias, b.bias }, std::tuple { "running_mean", a.runningMean, b.runningMean },
                 std::tuple { "running_var", a.runningVar, b.runningVar } }) {
            const std::string name = who + ": " + a.name + "." + what + " " + when;
            INFO(name);
            REQUIRE(bool(x) == bool(y));
            if (x)
                expectTrainClose(*y, *x, name, tolerance);
        }
    }
}

double trainRelDiff(const Tensor& a, const Tensor& b)
{
    REQUIRE(a.numel() == b.numel());
    double d = 0, r = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
        const double x = a.data()[i], y = b.data()[i];
        d += (x - y) * (x - y);
        r += y * y;
    }
    return std::sqrt(r) > 1e-6 ? std::sqrt(d / r) : std::sqrt(d);
}

TrainCase makeTrainCase(Network net, uint64_t seed, LossKind loss)
{
    TrainCase c;
    c.shapes = inferShapes(net);
    INFO(net.name << ": " << c.shapes.firstError());
    REQUIRE(c.shapes.ok());
    materializeParameters(net, c.shapes);
    c.net = std::move(net);
    c.input = randomTensor(c.shapes.input, seed);
    const Shape& out = c.shapes.layers.back().out;
    c.loss = loss;
    if (loss != LossKind::CrossEntropy) {
        c.target = randomTensor(out, seed + 1);
        return c;
    }
    c.target = Tensor(Shape::features(out.n, 1));
    for (int64_t n = 0; n < out.n; ++n)
        c.target.data()[n] = float((n * 7 + 3) % out.c);
    return c;
}

void trainSideBySide(const std::string& backend, const TrainCase& c, const OptimizerSpec& optimizer,
    const std::string& algorithm, int steps, StepTolerance tolerance, const SessionOptions& session,
    const SessionOptions& reference)
{
    auto gpuBackend = backendOrSkip(backend);
    if (!gpuBackend)
        return;
    TrainingOptions to;
    to.loss = c.loss;
    to.optimizer = optimizer;
    to.inputGradient = true;
    auto ref = BackendRegistry::instance().find("cpu")->createTrainingSession("direct", reference);
    auto gpu = gpuBackend->createTrainingSession(algorithm, session);
    REQUIRE(ref);
    REQUIRE(gpu);
    ref->prepare(c.net, c.shapes, to);
    gpu->prepare(c.net, c.shapes, to);
    const std::string who = c.net.name + " on " + backend + "." + algorithm + " ("
        + (optimizer.kind == OptimizerSpec::Kind::Adam ? "adam" : "sgd momentum") + ", " + mathModeName(session.math)
        + ")";
    const auto refParams = ref->parameters();
    const auto gpuParams = gpu->parameters();
    REQUIRE(refParams.size() == gpuParams.size());
    for (int s = 1; s <= steps; ++s) {
        const StepResult a = ref->step(c.input, c.target, s);
        const StepResult b = gpu->step(c.input, c.target, s);
        const std::string at = who + ", step " + std::to_string(s);
        const double tol = s == 1 ? tolerance.first : tolerance.later;
        INFO(at << ": loss " << b.loss << " against cpu.direct's " << a.loss);
        CHECK(std::abs(b.loss - a.loss) <= tol * std::max(1.0, std::abs(a.loss)));
        REQUIRE(b.layers.size() == c.net.layers.size());
        for (size_t i = 0; i < b.layers.size(); ++i) {
            INFO(at << ": layer " << i << " (" << c.net.layers[i].name << ") phase times");
            CHECK(b.layers[i].forward >= 0);
            CHECK((b.layers[i].backwardWeights >= 0) == (a.layers[i].backwardWeights >= 0));
            CHECK((b.layers[i].update >= 0) == (a.layers[i].update >= 0));
        }
        expectTrainClose(gpu->inputGradient(), ref->inputGradient(), at + ": the input gradient", tol);
        for (size_t p = 0; p < refParams.size(); ++p) {
            REQUIRE(refParams[p].layer == gpuParams[p].layer);
            REQUIRE(refParams[p].name == gpuParams[p].name);
            expectTrainClose(gpu->parameterGradient(gpuParams[p]), ref->parameterGradient(refParams[p]),
                at + ": the gradient of " + c.net.layers[refParams[p].layer].name + "." + refParams[p].name, tol);
        }
    }
    expectSameParameters(gpu->trainedNetwork(), ref->trainedNetwork(), who, "after " + std::to_string(steps) + " steps",
        tolerance.later);
    // reset: back to the starting weights, so the first step's loss repeats.
    gpu->reset();
    ref->reset();
    const double again = gpu->step(c.input, c.target, 1).loss;
    const double first = ref->step(c.input, c.target, 1).loss;
    INFO(who << ": the loss after reset " << again << " against cpu.direct's " << first);
    CHECK(std::abs(again - first) <= tolerance.first * std::max(1.0, std::abs(first)));
}

OptimizerSpec sgdMomentumForTests()
{
    OptimizerSpec o;
    o.kind = OptimizerSpec::Kind::SGD;
    o.lr = 0.05;
    o.momentum = 0.9;
    o.weightDecay = 1e-3;
    return o;
}

OptimizerSpec adamForTests()
{
    OptimizerSpec o;
    o.kind = OptimizerSpec::Kind::Adam;
    o.lr = 1e-3;
    o.weightDecay = 1e-4;
    return o;
}

std::vector<std::string> runTorchReferenceCases(
    const std::string& backend, const std::string& algorithm, double tolerance)
{
    std::vector<std::string> trained;
    auto gpuBackend = backendOrSkip(backend);
    if (!gpuBackend)
        return trained;
    const std::string selection = backend + "." + algorithm;
    const std::vector<TorchReferenceCase> cases = loadTorchReferenceCases();
    for (const TorchReferenceCase& c : cases) {
        const std::string& name = c.name;
        const fs::path& dir = c.dir;
        const Network& net = c.net;
        const ShapeReport& shapes = c.shapes;
        const nlohmann::json& entry = c.entry;
        auto session = gpuBackend->createTrainingSession(algorithm, {});
        try {
            session->prepare(net, shapes, c.options);
        } catch (const UnsupportedError& e) {
            std::cout << selection << " training: reference case " << name << " refused: " << e.what() << std::endl;
            CHECK(std::string(e.what()).find("layer ") != std::string::npos);
            continue;
        }
        trained.push_back(name);
        const std::string who = name + " on " + selection;
        const StepResult step = session->step(c.input, c.target, 1);
        INFO(who << ": loss " << step.loss << ", PyTorch's " << entry["loss_value"].get<double>());
        CHECK(step.loss == Approx(entry["loss_value"].get<double>()).epsilon(tolerance));
        expectTrainClose(session->inputGradient(), fromNpy(dir / "grad.input.npy", shapes.input),
            who + ": the input gradient", tolerance);
        for (const ParameterRef& ref : session->parameters()) {
            const std::string layer = net.layers[ref.layer].name;
            const Tensor g = session->parameterGradient(ref);
            expectTrainClose(g, fromNpy(dir / ("grad." + layer + "." + ref.name + ".npy"), g.shape()),
                who + ": the gradient of " + layer + "." + ref.name, tolerance);
        }
        const Network trainedNet = session->trainedNetwork();
        for (const Layer& layer : trainedNet.layers)
            for (const auto& [what, tensor] : { std::pair { "weight", layer.weight }, { "bias", layer.bias },
                     { "running_mean", layer.runningMean }, { "running_var", layer.runningVar } }) {
                const fs::path expected = dir / ("after." + layer.name + "." + what + ".npy");
                if (!fs::exists(expected) || !tensor)
                    continue;
                expectTrainClose(*tensor, fromNpy(expected, tensor->shape()),
                    who + ": " + layer.name + "." + what + " after the step", tolerance);
            }
    }
    std::cout << selection << " training: " << trained.size() << " of " << cases.size()
              << " PyTorch reference cases trained" << std::endl;
    return trained;
}

void expectTrainingRefused(
    Backend& backend, const std::string& algorithm, const std::string& json, const std::string& layer)
{
    const TrainCase c = makeTrainCase(parseNetwork(json, "refused", {}), 3, LossKind::MSE);
    auto session = backend.createTrainingSession(algorithm, {});
    REQUIRE(session);
    try {
        TrainingOptions to;
        to.loss = LossKind::MSE;
        session->prepare(c.net, c.shapes, to);
        FAIL(layer << " was not refused");
    } catch (const UnsupportedError& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find(layer) != std::string::npos);
    }
}

void checkDeviceLosses(const std::string& backend, const std::string& algorithm, StepTolerance tolerance)
{
    auto gpuBackend = backendOrSkip(backend);
    if (!gpuBackend)
        return;
    const auto net = [](const std::string& name, const std::string& tail) {
        return parseNetwork(R"({ "format": "convscope-network", "version": 1, "name": ")" + name + R"(",
          "input": { "batch": 20, "channels": 3, "height": 8, "width": 8, "source": "random" },
          "layers": [
            { "type": "conv2d", "name": "c1", "out_channels": 4, "kernel_size": [3, 3], "padding": [1, 1, 1, 1],
              "init": { "kind": "he_uniform", "seed": 71 } },
            { "type": "relu", "name": "r1" }, )"
                + tail + " ] }",
            name, {});
    };
    trainSideBySide(backend,
        makeTrainCase(net("device_loss_ce",
                          R"({ "type": "global_avgpool2d", "name": "g" }, { "type": "flatten", "name": "f" },
            { "type": "linear", "name": "fc", "out_features": 10, "init": { "kind": "he_uniform", "seed": 72 } })"),
            707),
        sgdMomentumForTests(), algorithm, 2, tolerance);
    const Network elementwise = net("device_loss_elementwise",
        R"({ "type": "conv2d", "name": "c2", "out_channels": 4, "kernel_size": [1, 1],
            "init": { "kind": "he_uniform", "seed": 73 } })");
    trainSideBySide(
        backend, makeTrainCase(elementwise, 708, LossKind::MSE), sgdMomentumForTests(), algorithm, 2, tolerance);
    TrainCase bce = makeTrainCase(elementwise, 709, LossKind::BCEWithLogits);
    for (int64_t e = 0; e < bce.target.numel(); ++e) // BCE's targets are probabilities
        bce.target.data()[e] = std::abs(bce.target.data()[e]) - std::floor(std::abs(bce.target.data()[e]));
    trainSideBySide(backend, bce, adamForTests(), algorithm, 2, tolerance);

    // A NaN in the input: the loss is NaN, the step says so, and the weights are those the session started from.
    TrainCase poisoned = makeTrainCase(elementwise, 710, LossKind::MSE);
    poisoned.input.data()[5] = std::nanf("");
    TrainingOptions to;
    to.loss = LossKind::MSE;
    to.optimizer = sgdMomentumForTests();
    to.sameInputEveryStep = true;
    auto session = gpuBackend->createTrainingSession(algorithm, {});
    session->prepare(poisoned.net, poisoned.shapes, to);
    CHECK_THROWS_WITH(session->step(poisoned.input, poisoned.target, 1),
        Catch::Contains("step 1") && Catch::Contains("the loss") && Catch::Contains("not finite"));
    const Network after = session->trainedNetwork();
    for (size_t i = 0; i < after.layers.size(); ++i)
        for (const auto& [mine, start] : { std::pair { after.layers[i].weight, poisoned.net.layers[i].weight },
                 { after.layers[i].bias, poisoned.net.layers[i].bias } })
            if (start) {
                INFO(backend << "." << algorithm << ": " << poisoned.net.layers[i].name << " after a NaN loss");
                REQUIRE(mine);
                CHECK(std::equal(mine->data(), mine->data() + mine->numel(), start->data()));
            }

    // A finite loss with a gradient that overflows: c2's weights at ~1e30 keep its output (and the loss, in double)
    // finite, but its backward-data (w · ∂L/∂y, ~1e30 · 1e26) overflows: the step names c2, as cpu.direct does.
    TrainCase huge = makeTrainCase(elementwise, 711, LossKind::MSE);
    Tensor scaled = huge.net.layers[2].weight->clone();
    for (int64_t e = 0; e < scaled.numel(); ++e)
        scaled.data()[e] *= 1e30f;
    huge.net.layers[2].weight = std::make_shared<const Tensor>(std::move(scaled));
    for (const auto& [name, selection] :
        { std::pair { std::string("cpu"), std::string("direct") }, { backend, algorithm } }) {
        auto s = BackendRegistry::instance().find(name)->createTrainingSession(selection, {});
        s->prepare(huge.net, huge.shapes, to);
        INFO(name << "." << selection << " with c2's weights at 1e30");
        CHECK_THROWS_WITH(s->step(huge.input, huge.target, 1),
            Catch::Contains("step 1") && Catch::Contains("layer 2 (c2") && Catch::Contains("not finite")
                && !Catch::Contains("the loss"));
    }
}

Network softmaxAxesNetwork(const std::string& name)
{
    const std::string json = R"({ "format": "convscope-network", "version": 1, "name": ")" + name + R"(",
      "input": { "batch": 3, "channels": 3, "height": 5, "width": 6, "source": "random" },
      "layers": [
        { "type": "conv2d", "name": "c1", "out_channels": 4, "kernel_size": [3, 3], "padding": [1, 1, 1, 1], "bias": false,
          "init": { "kind": "he_uniform", "seed": 61 } },
        { "type": "log_softmax", "name": "ls", "dim": 2 }, { "type": "softmax", "name": "sm", "dim": -1 },
        { "type": "softmax", "name": "sb", "dim": 0 }, { "type": "flatten", "name": "f" },
        { "type": "linear", "name": "fc", "out_features": 3, "init": { "kind": "he_uniform", "seed": 62 } } ] })";
    return parseNetwork(json, "softmax axes", {});
}

} // namespace convscope::test
