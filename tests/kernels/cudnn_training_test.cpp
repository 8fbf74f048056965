// The cudnn backend's training step (kernels/cudnn/training_session.h, issue 33) against cpu.direct's (the reference
// loops, double sums) on LeNet-5 and on a graph with every kind the cudnn session trains — conv2d with stride,
// padding, groups and dilation, batch norm (affine and not), relu, elu, prelu, sigmoid, leaky_relu, hardtanh, max,
// average and global pools, a residual add, concat (of images and of features), mul, flatten, linear, dropout (the
// CPU's masks) — over 3 SGD-momentum and 3 Adam steps: each step's loss, every parameter's gradient and the input
// gradient, then the parameters and running statistics, within 1e-4 relative L2 (cuDNN's algorithms sum in other orders
// than the CPU's). PyTorch's reference cases (tests/data/training) on cudnn.auto where the session trains their kinds;
// the others must be refused naming the layer. Every failure names the selection, the step, the layer and the tensor.
// Without a usable cuDNN every case prints "SKIPPED: <reason>".
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/shape_inference.h"
#include "compute/training/training.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

// Relative L2 of a against b in double; where b is (nearly) zero the absolute L2 counts instead.
double relDiff(const Tensor& a, const Tensor& b)
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

// cudnnFind may pick the FFT or non-fused Winograd backward algorithms (FMA math, no TF32): their FP32 rounding put
// LeNet-5's c1 gradient 4.5e-4 from cpu.direct's under compute-sanitizer, where Find's timings differ (1.4e-6 with
// the algorithms it picks in a plain run on the H200, 2026-11-28).
constexpr double kTolerance = 1e-3;
// After the first step the two trajectories have each taken their own algorithms' rounding through an update, and
// Adam's normalisation magnifies a small gradient's relative difference: under compute-sanitizer cudnnFind picks
// other backward algorithms and LeNet-5's c1 gradient at Adam's step 3 was 9.1e-4 apart (H200, 2026-11-28; 1e-6 in
// the first step). Later steps are held to 3e-3.
constexpr double kLaterStepTolerance = 3e-3;

void expectClose(const Tensor& value, const Tensor& reference, const std::string& what, double tolerance = kTolerance)
{
    const double diff = relDiff(value, reference);
    INFO(what << ": relative L2 " << diff << " (tolerance " << tolerance << ")");
    CHECK(diff < tolerance);
}

// The graph the cudnn session must train like cpu.direct: every kind it supports, a tensor with two readers (r1, mp,
// c1's output through bn1), the gradient summed from them.
const char* kGraph = R"({
 "format": "convscope-network", "version": 1, "name": "cudnn_train_graph",
 "input": { "batch": 4, "channels": 3, "height": 12, "width": 12, "source": "random" },
 "layers": [
  { "type": "conv2d", "name": "c1", "out_channels": 8, "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1, 1, 1],
    "dilation": [1, 1], "groups": 1, "bias": false, "init": { "kind": "he_uniform", "seed": 11 } },
  { "type": "batchnorm2d", "name": "bn1" },
  { "type": "relu", "name": "r1" },
  { "type": "conv2d", "name": "c2", "out_channels": 8, "kernel_size": [3, 3], "stride": [1, 1], "padding": [2, 2, 2, 2],
    "dilation": [2, 2], "groups": 2, "bias": false, "init": { "kind": "he_uniform", "seed": 12 } },
  { "type": "batchnorm2d", "name": "bn2", "affine": false },
  { "type": "add", "name": "res", "inputs": ["r1", "bn2"] },
  { "type": "relu", "name": "r2" },
  { "type": "maxpool2d", "name": "mp", "kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0, 0, 0] },
  { "type": "conv2d", "name": "c3", "out_channels": 6, "kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1],
    "dilation": [1, 1], "groups": 1, "bias": true, "init": { "kind": "he_uniform", "seed": 13 } },
  { "type": "elu", "name": "e3" },
  { "type": "prelu", "name": "pr3", "num_parameters": 6, "init": { "kind": "default" } },
  { "type": "avgpool2d", "name": "ap", "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1, 1, 1],
    "count_include_pad": false, "inputs": ["mp"] },
  { "type": "conv2d", "name": "c4", "out_channels": 6, "kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1],
    "dilation": [1, 1], "groups": 2, "bias": true, "init": { "kind": "he_uniform", "seed": 14 } },
  { "type": "concat", "name": "cat", "inputs": ["pr3", "c4"] },
  { "type": "sigmoid", "name": "sg" },
  { "type": "mul", "name": "gate", "inputs": ["cat", "sg"] },
  { "type": "flatten", "name": "flat1" },
  { "type": "global_avgpool2d", "name": "gap", "inputs": ["r2"] },
  { "type": "flatten", "name": "flat2" },
  { "type": "concat", "name": "features", "inputs": ["flat1", "flat2"] },
  { "type": "linear", "name": "fc1", "out_features": 16, "bias": true, "init": { "kind": "he_uniform", "seed": 15 } },
  { "type": "dropout", "name": "drop", "p": 0.25 },
  { "type": "leaky_relu", "name": "lk", "negative_slope": 0.1 },
  { "type": "hardtanh", "name": "ht", "min_val": -0.5, "max_val": 0.75 },
  { "type": "linear", "name": "fc2", "out_features": 5, "bias": true, "init": { "kind": "xavier_uniform", "seed": 16 } }
 ]
})";

// A DCGAN generator's shape of layers: transposed convolutions (stride 2, padding, output_padding, groups) with batch
// norm, relu and tanh, trained with MSE toward a random image.
const char* kGenerator = R"({
 "format": "convscope-network", "version": 1, "name": "cudnn_train_generator",
 "input": { "batch": 3, "channels": 4, "height": 3, "width": 3, "source": "random" },
 "layers": [
  { "type": "conv_transpose2d", "name": "up1", "out_channels": 6, "kernel_size": [4, 4], "stride": [2, 2],
    "padding": [1, 1, 1, 1], "bias": false, "init": { "kind": "he_uniform", "seed": 21 } },
  { "type": "batchnorm2d", "name": "bn1" },
  { "type": "relu", "name": "r1" },
  { "type": "conv_transpose2d", "name": "up2", "out_channels": 4, "kernel_size": [3, 3], "stride": [2, 2],
    "padding": [1, 1, 1, 1], "output_padding": [1, 1], "groups": 2, "bias": true,
    "init": { "kind": "he_uniform", "seed": 22 } },
  { "type": "tanh", "name": "out" }
 ]
})";

struct Case {
    Network net;
    ShapeReport shapes;
    Tensor input, target;
    LossKind loss = LossKind::CrossEntropy;
};

Case makeCase(Network net, uint64_t seed, LossKind loss = LossKind::CrossEntropy)
{
    Case c;
    c.shapes = inferShapes(net);
    INFO(net.name << ": " << c.shapes.firstError());
    REQUIRE(c.shapes.ok());
    materializeParameters(net, c.shapes);
    c.net = std::move(net);
    c.input = test::randomTensor(c.shapes.input, seed);
    const Shape& out = c.shapes.layers.back().out;
    c.loss = loss;
    if (loss != LossKind::CrossEntropy) {
        c.target = test::randomTensor(out, seed + 1);
        return c;
    }
    c.target = Tensor(Shape::features(out.n, 1));
    for (int64_t n = 0; n < out.n; ++n)
        c.target.data()[n] = float((n * 7 + 3) % out.c);
    return c;
}

// Steps cpu.direct and cudnn.<algorithm> side by side from the same weights and compares everything after each step.
void trainSideBySide(const Case& c, const OptimizerSpec& optimizer, const std::string& algorithm, int steps)
{
    auto cudnn = test::backendOrSkip("cudnn");
    if (!cudnn)
        return;
    TrainingOptions to;
    to.loss = c.loss;
    to.optimizer = optimizer;
    to.inputGradient = true;
    auto ref = BackendRegistry::instance().find("cpu")->createTrainingSession("direct", {});
    auto gpu = cudnn->createTrainingSession(algorithm, {});
    REQUIRE(ref);
    REQUIRE(gpu);
    ref->prepare(c.net, c.shapes, to);
    gpu->prepare(c.net, c.shapes, to);
    const std::string who = c.net.name + " on cudnn." + algorithm + " ("
        + (optimizer.kind == OptimizerSpec::Kind::Adam ? "adam" : "sgd momentum") + ")";
    const auto refParams = ref->parameters();
    const auto gpuParams = gpu->parameters();
    REQUIRE(refParams.size() == gpuParams.size());
    for (int s = 1; s <= steps; ++s) {
        const StepResult a = ref->step(c.input, c.target, s);
        const StepResult b = gpu->step(c.input, c.target, s);
        const std::string at = who + ", step " + std::to_string(s);
        INFO(at << ": loss " << b.loss << " against cpu.direct's " << a.loss);
        CHECK(
            std::abs(b.loss - a.loss) <= (s == 1 ? kTolerance : kLaterStepTolerance) * std::max(1.0, std::abs(a.loss)));
        REQUIRE(b.layers.size() == c.net.layers.size());
        for (size_t i = 0; i < b.layers.size(); ++i) {
            INFO(at << ": layer " << i << " (" << c.net.layers[i].name << ") phase times");
            CHECK(b.layers[i].forward >= 0);
            CHECK((b.layers[i].backwardWeights >= 0) == (a.layers[i].backwardWeights >= 0));
            CHECK((b.layers[i].update >= 0) == (a.layers[i].update >= 0));
        }
        const double tolerance = s == 1 ? kTolerance : kLaterStepTolerance;
        expectClose(gpu->inputGradient(), ref->inputGradient(), at + ": the input gradient", tolerance);
        for (size_t p = 0; p < refParams.size(); ++p) {
            REQUIRE(refParams[p].layer == gpuParams[p].layer);
            REQUIRE(refParams[p].name == gpuParams[p].name);
            expectClose(gpu->parameterGradient(gpuParams[p]), ref->parameterGradient(refParams[p]),
                at + ": the gradient of " + c.net.layers[refParams[p].layer].name + "." + refParams[p].name, tolerance);
        }
    }
    const Network a = ref->trainedNetwork(), b = gpu->trainedNetwork();
    for (size_t i = 0; i < a.layers.size(); ++i)
        for (const auto& [what, x, y] : { std::tuple { "weight", a.layers[i].weight, b.layers[i].weight },
                 std::tuple { "bias", a.layers[i].bias, b.layers[i].bias },
                 std::tuple { "running_mean", a.layers[i].runningMean, b.layers[i].runningMean },
                 std::tuple { "running_var", a.layers[i].runningVar, b.layers[i].runningVar } }) {
            const std::string name
                = who + ": " + a.layers[i].name + "." + what + " after " + std::to_string(steps) + " steps";
            INFO(name);
            REQUIRE(bool(x) == bool(y));
            if (x)
                expectClose(*y, *x, name, kLaterStepTolerance);
        }
    // reset: back to the starting weights, so the first step's loss repeats.
    gpu->reset();
    ref->reset();
    const double again = gpu->step(c.input, c.target, 1).loss;
    const double first = ref->step(c.input, c.target, 1).loss;
    INFO(who << ": the loss after reset " << again << " against cpu.direct's " << first);
    CHECK(std::abs(again - first) <= kTolerance * std::max(1.0, std::abs(first)));
}

OptimizerSpec sgdMomentum()
{
    OptimizerSpec o;
    o.kind = OptimizerSpec::Kind::SGD;
    o.lr = 0.05;
    o.momentum = 0.9;
    o.weightDecay = 1e-3;
    return o;
}

OptimizerSpec adam()
{
    OptimizerSpec o;
    o.kind = OptimizerSpec::Kind::Adam;
    o.lr = 1e-3;
    o.weightDecay = 1e-4;
    return o;
}

} // namespace

TEST_CASE("cudnn training: LeNet-5 matches cpu.direct over SGD-momentum and Adam steps", "[gpu][cudnn][train]")
{
    Network net = loadNetwork(fs::path(CONVSCOPE_EXAMPLES_DIR) / "lenet5.json");
    net.input.batch = 8;
    const Case c = makeCase(std::move(net), 101);
    trainSideBySide(c, sgdMomentum(), "auto", 3);
    trainSideBySide(c, adam(), "auto", 3);
    // A pinned forward algorithm (the backward algorithms stay cudnnFind's).
    trainSideBySide(c, sgdMomentum(), "implicit_gemm", 2);
}

TEST_CASE("cudnn training: a graph of every trainable kind matches cpu.direct", "[gpu][cudnn][train]")
{
    const Case c = makeCase(parseNetwork(kGraph, "the cudnn training graph", {}), 202);
    trainSideBySide(c, sgdMomentum(), "auto", 3);
    trainSideBySide(c, adam(), "auto", 3);
}

TEST_CASE("cudnn training: transposed convolutions (a generator) match cpu.direct", "[gpu][cudnn][train]")
{
    const Case c = makeCase(parseNetwork(kGenerator, "the cudnn training generator", {}), 303, LossKind::MSE);
    trainSideBySide(c, sgdMomentum(), "auto", 3);
    trainSideBySide(c, adam(), "auto", 3);
}

TEST_CASE("cudnn training: refusals name the layer and the kind", "[gpu][cudnn][train]")
{
    auto cudnn = test::backendOrSkip("cudnn");
    if (!cudnn)
        return;
    SessionOptions half;
    half.math = MathMode::FP16;
    CHECK_THROWS_AS(cudnn->createTrainingSession("auto", half), UnsupportedError);
    CHECK_THROWS_AS(cudnn->createTrainingSession("no_such_algorithm", {}), UnsupportedError);
    const std::string padded = R"({ "format": "convscope-network", "version": 1, "name": "padded",
      "input": { "batch": 2, "channels": 2, "height": 6, "width": 6, "source": "random" },
      "layers": [ { "type": "pad", "name": "edge", "padding": [1, 1, 1, 1], "mode": "reflect" },
        { "type": "conv2d", "name": "c", "out_channels": 2, "kernel_size": [3, 3], "init": { "kind": "he_uniform" } },
        { "type": "global_avgpool2d", "name": "g" }, { "type": "flatten", "name": "f" } ] })";
    const Case c = makeCase(parseNetwork(padded, "padded", {}), 3);
    auto session = cudnn->createTrainingSession("auto", {});
    REQUIRE(session);
    try {
        session->prepare(c.net, c.shapes, {});
        FAIL("a pad layer was not refused");
    } catch (const UnsupportedError& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("layer 0 (edge, pad)") != std::string::npos);
    }
}

TEST_CASE(
    "cudnn training: PyTorch's reference cases where the session trains their kinds", "[gpu][cudnn][train][torch]")
{
    auto cudnn = test::backendOrSkip("cudnn");
    if (!cudnn)
        return;
    const fs::path root = test::dataDir() / "training";
    std::ifstream in(root / "cases.json");
    REQUIRE(in);
    const nlohmann::json index = nlohmann::json::parse(in);
    int trained = 0;
    for (const auto& entry : index["cases"]) {
        const std::string name = entry["name"];
        const fs::path dir = root / name;
        Network net = loadNetwork(dir / "network.json");
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        materializeParameters(net, shapes);
        const auto load = [](const fs::path& path, const Shape& shape) {
            const NpyArray a = readNpy(path);
            REQUIRE(a.numel() == shape.numel());
            Tensor t(shape);
            std::copy(a.data.begin(), a.data.end(), t.data());
            return t;
        };
        TrainingOptions to;
        to.loss = parseLossKind(entry["loss"]);
        to.optimizer.kind = parseOptimizerKind(entry["optimizer"]);
        to.optimizer.lr = entry["lr"];
        to.optimizer.momentum = entry["momentum"];
        to.optimizer.weightDecay = entry["weight_decay"];
        to.inputGradient = true;
        const Shape& out = shapes.layers.back().out;
        const Tensor input = load(dir / "input.npy", shapes.input);
        const Tensor target
            = load(dir / "target.npy", to.loss == LossKind::CrossEntropy ? Shape::features(out.n, 1) : out);
        auto session = cudnn->createTrainingSession("auto", {});
        try {
            session->prepare(net, shapes, to);
        } catch (const UnsupportedError& e) {
            std::cout << "cudnn training: reference case " << name << " refused: " << e.what() << std::endl;
            CHECK(std::string(e.what()).find("layer ") != std::string::npos);
            continue;
        }
        ++trained;
        const StepResult step = session->step(input, target, 1);
        INFO(name << ": loss " << step.loss << ", PyTorch's " << entry["loss_value"].get<double>());
        CHECK(step.loss == Approx(entry["loss_value"].get<double>()).epsilon(kTolerance));
        expectClose(
            session->inputGradient(), load(dir / "grad.input.npy", shapes.input), name + ": the input gradient");
        for (const ParameterRef& ref : session->parameters()) {
            const std::string layer = net.layers[ref.layer].name;
            const Tensor g = session->parameterGradient(ref);
            expectClose(g, load(dir / ("grad." + layer + "." + ref.name + ".npy"), g.shape()),
                name + ": the gradient of " + layer + "." + ref.name);
        }
        const Network trainedNet = session->trainedNetwork();
        for (const Layer& layer : trainedNet.layers)
            for (const auto& [what, tensor] : { std::pair { "weight", layer.weight }, { "bias", layer.bias },
                     { "running_mean", layer.runningMean }, { "running_var", layer.runningVar } }) {
                const fs::path expected = dir / ("after." + layer.name + "." + what + ".npy");
                if (!fs::exists(expected) || !tensor)
                    continue;
                expectClose(*tensor, load(expected, tensor->shape()),
                    name + ": " + layer.name + "." + what + " after the step");
            }
    }
    std::cout << "cudnn training: " << trained << " of " << index["cases"].size() << " PyTorch reference cases trained"
              << std::endl;
    CHECK(trained >= 2); // lenet5_sgd and softmax_linear at least
}
