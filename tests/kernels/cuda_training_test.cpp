// The cuda backend's training step on our own kernels (kernels/cuda/training/cuda_training_session.h, issue 33)
// against cpu.direct's (the reference loops, double sums): LeNet-5 on cuda.implicit_gemm and cuda.direct — its c1
// weight gradient (a reduction of 8·28·28) runs split-K at batch 8 — a graph of every kind the session trains
// (conv2d with asymmetric padding, dilation and groups; batch norm affine and not; relu6, hardswish, silu, elu, prelu,
// sigmoid, tanh, leaky_relu, hardtanh; max pool with ceil_mode, average pool without the padding in the count, global
// pooling; add, a gate broadcast over H·W, channel_shuffle, slice, replicate pad; flatten, linear, dropout with the
// CPU's masks, softmax), a generator of transposed convolutions (groups, dilation, output_padding), and per-channel
// reductions cut into runs (batch norm, bias, gate and prelu gradients: float4 and scalar planes, blocks and warps),
// over SGD with momentum and Adam: each step's loss, the input gradient and every parameter gradient within 1e-4 (the
// first step; 1e-3 after updates), the parameters and running statistics after the steps. Then PyTorch's reference
// cases (tests/data/training: float64 autograd and torch.optim) on cuda.implicit_gemm and cuda.direct within 1e-5
// relative L2 — every case but the volumes one, which the session refuses naming the layer. The weight gradient's four
// tilings (conv2d_backward_weights.cu) split-K and not, on both its pipelines (cp.async and register-staged), with a
// stem, a 1×1 stride-2 projection, dilation, groups and a depthwise layer. cuda.tensor_core under --math tf32 (the
// convolutions on TF32 Tensor Cores) on LeNet-5, the graph, the generator and the tilings within TF32's rounding.
// Without a GPU every case prints "SKIPPED: <reason>".
#include "compute/error.h"
#include "compute/network_json.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/kernels/gpu_training_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <tuple>
#include <utility>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

// Deterministic FP32 kernels against cpu.direct's double sums: the first step's gradients agree to ~1e-6; after an
// update each trajectory carries its own rounding, which Adam's normalisation magnifies in small gradients.
constexpr test::StepTolerance kSteps { 1e-4, 1e-3 };
// PyTorch's float64 gradients: the bound the CPU sessions meet (tests/training/torch_reference_test.cpp).
constexpr double kTorchTolerance = 1e-5;

// No bias before a batch norm: its gradient is rounding noise (zero in exact arithmetic), which Adam's normalisation
// would turn into steps of its own on each backend (the torch case "batchnorm" covers that bias under SGD).
const char* kGraph = R"({
 "format": "convscope-network", "version": 1, "name": "cuda_train_graph",
 "input": { "batch": 4, "channels": 4, "height": 12, "width": 12, "source": "random" },
 "layers": [
  { "type": "conv2d", "name": "c1", "out_channels": 8, "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 2, 0, 1],
    "dilation": [1, 1], "groups": 1, "bias": false, "init": { "kind": "he_uniform", "seed": 31 } },
  { "type": "batchnorm2d", "name": "bn1" },
  { "type": "relu6", "name": "r1" },
  { "type": "conv2d", "name": "c2", "out_channels": 8, "kernel_size": [3, 3], "stride": [1, 1], "padding": [2, 2, 2, 2],
    "dilation": [2, 2], "groups": 4, "bias": false, "init": { "kind": "he_uniform", "seed": 32 } },
  { "type": "batchnorm2d", "name": "bn2", "affine": false },
  { "type": "add", "name": "res", "inputs": ["r1", "bn2"] },
  { "type": "hardswish", "name": "hs" },
  { "type": "channel_shuffle", "name": "sh", "groups": 2 },
  { "type": "slice", "name": "sl", "dim": 1, "start": 2, "end": 7 },
  { "type": "maxpool2d", "name": "mp", "kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1],
    "ceil_mode": true },
  { "type": "silu", "name": "si" },
  { "type": "pad", "name": "pd", "padding": [1, 0, 2, 1], "mode": "replicate" },
  { "type": "conv2d", "name": "c3", "out_channels": 6, "kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1],
    "dilation": [1, 1], "groups": 1, "bias": true, "init": { "kind": "he_uniform", "seed": 33 } },
  { "type": "elu", "name": "el" },
  { "type": "prelu", "name": "pr", "num_parameters": 6, "init": { "kind": "default" } },
  { "type": "avgpool2d", "name": "ap", "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1, 1, 1],
    "count_include_pad": false },
  { "type": "global_avgpool2d", "name": "gp", "inputs": ["c3"] },
  { "type": "sigmoid", "name": "sg" },
  { "type": "mul", "name": "gate", "inputs": ["sg", "ap"] },
  { "type": "tanh", "name": "th" },
  { "type": "flatten", "name": "f" },
  { "type": "linear", "name": "fc1", "out_features": 12, "bias": true, "init": { "kind": "he_uniform", "seed": 34 } },
  { "type": "dropout", "name": "dr", "p": 0.3 },
  { "type": "leaky_relu", "name": "lk", "negative_slope": 0.1 },
  { "type": "hardtanh", "name": "ht", "min_val": -0.5, "max_val": 0.75 },
  { "type": "hardsigmoid", "name": "hg" },
  { "type": "linear", "name": "fc2", "out_features": 5, "bias": true, "init": { "kind": "xavier_uniform", "seed": 35 } },
  { "type": "softmax", "name": "sm" }
 ]
})";

// Transposed convolutions as a DCGAN generator's, with groups, dilation and output_padding, trained with MSE.
const char* kGenerator = R"({
 "format": "convscope-network", "version": 1, "name": "cuda_train_generator",
 "input": { "batch": 3, "channels": 4, "height": 3, "width": 3, "source": "random" },
 "layers": [
  { "type": "conv_transpose2d", "name": "up1", "out_channels": 6, "kernel_size": [4, 4], "stride": [2, 2],
    "padding": [1, 1, 1, 1], "bias": false, "init": { "kind": "he_uniform", "seed": 41 } },
  { "type": "batchnorm2d", "name": "bn1" },
  { "type": "relu", "name": "r1" },
  { "type": "conv_transpose2d", "name": "up2", "out_channels": 4, "kernel_size": [3, 3], "stride": [2, 2],
    "padding": [1, 1, 1, 1], "output_padding": [1, 1], "dilation": [2, 2], "groups": 2, "bias": true,
    "init": { "kind": "he_uniform", "seed": 42 } },
  { "type": "tanh", "name": "out" }
 ]
})";

// The weight gradient's tilings case (below): a stem, a 1×1 stride-2 projection, a 3×3, a dilated 3×3 in 2 groups, a
// depthwise 3×3 stride 2 and a linear head.
const char* kWgradTiles = R"({ "format": "convscope-network", "version": 1, "name": "cuda_train_wgrad_tiles",
  "input": { "batch": 8, "channels": 3, "height": 64, "width": 64, "source": "random" },
  "layers": [
    { "type": "conv2d", "name": "stem", "out_channels": 64, "kernel_size": [7, 7], "stride": [2, 2],
      "padding": [3, 3, 3, 3], "bias": false, "init": { "kind": "he_uniform", "seed": 61 } },
    { "type": "relu", "name": "r0" },
    { "type": "conv2d", "name": "proj", "out_channels": 128, "kernel_size": [1, 1], "stride": [2, 2],
      "init": { "kind": "he_uniform", "seed": 62 } },
    { "type": "relu", "name": "r1" },
    { "type": "conv2d", "name": "c3x3", "out_channels": 128, "kernel_size": [3, 3], "padding": [1, 1, 1, 1],
      "init": { "kind": "he_uniform", "seed": 63 } },
    { "type": "relu", "name": "r2" },
    { "type": "conv2d", "name": "dil", "out_channels": 128, "kernel_size": [3, 3], "padding": [2, 2, 2, 2],
      "dilation": [2, 2], "groups": 2, "bias": false, "init": { "kind": "he_uniform", "seed": 64 } },
    { "type": "relu", "name": "r3" },
    { "type": "conv2d", "name": "dw", "out_channels": 128, "kernel_size": [3, 3], "stride": [2, 2], "groups": 128,
      "init": { "kind": "he_uniform", "seed": 65 } },
    { "type": "global_avgpool2d", "name": "g" }, { "type": "flatten", "name": "f" },
    { "type": "linear", "name": "fc", "out_features": 10, "init": { "kind": "he_uniform", "seed": 66 } } ] })";

// A network's kinks smoothed for TF32 (the [tf32] case says why): ReLU → `activation` (tanh or SiLU), max pool →
// average pool of the same window.
std::string smooth(std::string json, const std::string& activation)
{
    for (const auto& [from, to] : { std::pair<std::string, std::string> { R"("type": "relu")", activation },
             { R"("type": "maxpool2d")", R"("type": "avgpool2d")" } })
        for (size_t at = json.find(from); at != std::string::npos; at = json.find(from, at + to.size()))
            json.replace(at, from.size(), to);
    return json;
}

} // namespace

TEST_CASE("cuda training: LeNet-5 matches cpu.direct over SGD-momentum and Adam steps", "[gpu][cuda][train]")
{
    Network net = loadNetwork(fs::path(CONVSCOPE_EXAMPLES_DIR) / "lenet5.json");
    net.input.batch = 8;
    const test::TrainCase c = test::makeTrainCase(std::move(net), 101);
    test::trainSideBySide("cuda", c, test::sgdMomentumForTests(), "implicit_gemm", 3, kSteps);
    test::trainSideBySide("cuda", c, test::adamForTests(), "implicit_gemm", 3, kSteps);
    test::trainSideBySide("cuda", c, test::sgdMomentumForTests(), "direct", 2, kSteps);
}

TEST_CASE("cuda training: a graph of every trainable kind matches cpu.direct", "[gpu][cuda][train]")
{
    const test::TrainCase c = test::makeTrainCase(parseNetwork(kGraph, "the cuda training graph", {}), 202);
    test::trainSideBySide("cuda", c, test::sgdMomentumForTests(), "implicit_gemm", 3, kSteps);
    test::trainSideBySide("cuda", c, test::adamForTests(), "implicit_gemm", 3, kSteps);
    test::trainSideBySide("cuda", c, test::sgdMomentumForTests(), "direct", 2, kSteps);
}

TEST_CASE("cuda training: transposed convolutions (a generator) match cpu.direct", "[gpu][cuda][train]")
{
    const test::TrainCase c
        = test::makeTrainCase(parseNetwork(kGenerator, "the cuda training generator", {}), 303, LossKind::MSE);
    test::trainSideBySide("cuda", c, test::sgdMomentumForTests(), "implicit_gemm", 3, kSteps);
    test::trainSideBySide("cuda", c, test::adamForTests(), "direct", 3, kSteps);
}

TEST_CASE("cuda training: a long reduction (split-K) and a depthwise layer match cpu.direct", "[gpu][cuda][train]")
{
    // c1's weight gradient reduces over 8·32·32 = 8192 positions in a grid of 3 tiles: split-K on any GPU of 2+ SMs.
    const std::string json = R"({ "format": "convscope-network", "version": 1, "name": "cuda_train_splitk",
      "input": { "batch": 8, "channels": 16, "height": 32, "width": 32, "source": "random" },
      "layers": [
        { "type": "conv2d", "name": "c1", "out_channels": 16, "kernel_size": [3, 3], "padding": [1, 1, 1, 1],
          "init": { "kind": "he_uniform", "seed": 51 } },
        { "type": "relu", "name": "r1" },
        { "type": "conv2d", "name": "dw", "out_channels": 16, "kernel_size": [3, 3], "padding": [1, 1, 1, 1],
          "groups": 16, "init": { "kind": "he_uniform", "seed": 52 } },
        { "type": "global_avgpool2d", "name": "g" }, { "type": "flatten", "name": "f" },
        { "type": "linear", "name": "fc", "out_features": 4, "init": { "kind": "he_uniform", "seed": 53 } } ] })";
    const test::TrainCase c = test::makeTrainCase(parseNetwork(json, "split-K", {}), 404);
    test::trainSideBySide("cuda", c, test::sgdMomentumForTests(), "implicit_gemm", 2, kSteps);
}

// cuda.winograd trains the 3×3 stride-1 ungrouped layers' forward and backward-data on Winograd F(4×4, 3×3) and their
// weight gradient on F(3×3, 2×2) (the graph's c1, asymmetric padding, and a 16-channel layer at 32² over 8 images,
// then one unpadded to 30², whose 2×2 blocks end on the edge), everything else as implicit_gemm:
// Winograd's transforms round differently from a direct sum (~1e-5 relative on these sizes), so the bounds are
// cudnn's (whose FP32 algorithms include Winograd too).
TEST_CASE("cuda training: cuda.winograd's 3x3 layers (Winograd forward and backward-data) match cpu.direct",
    "[gpu][cuda][train][winograd]")
{
    constexpr test::StepTolerance kWinograd { 1e-3, 3e-3 };
    const test::TrainCase graph = test::makeTrainCase(parseNetwork(kGraph, "the cuda winograd graph", {}), 222);
    test::trainSideBySide("cuda", graph, test::sgdMomentumForTests(), "winograd", 3, kWinograd);
    const std::string json = R"({ "format": "convscope-network", "version": 1, "name": "cuda_train_winograd",
      "input": { "batch": 8, "channels": 16, "height": 32, "width": 32, "source": "random" },
      "layers": [
        { "type": "conv2d", "name": "c1", "out_channels": 16, "kernel_size": [3, 3], "padding": [1, 1, 1, 1],
          "init": { "kind": "he_uniform", "seed": 81 } },
        { "type": "relu", "name": "r1" },
        { "type": "conv2d", "name": "c2", "out_channels": 16, "kernel_size": [3, 3],
          "init": { "kind": "he_uniform", "seed": 82 } },
        { "type": "global_avgpool2d", "name": "g" }, { "type": "flatten", "name": "f" },
        { "type": "linear", "name": "fc", "out_features": 4, "init": { "kind": "he_uniform", "seed": 83 } } ] })";
    const test::TrainCase c = test::makeTrainCase(parseNetwork(json, "winograd", {}), 808);
    test::trainSideBySide("cuda", c, test::adamForTests(), "winograd", 2, kWinograd);
    if (auto cuda = test::backendOrSkip("cuda")) {
        auto session = cuda->createTrainingSession("winograd", {});
        session->prepare(c.net, c.shapes, {});
        const auto m = session->metadata();
        CHECK_THAT(m.at("layer 0 c1"), Catch::Contains("forward: Winograd F(4x4,3x3)"));
        CHECK_THAT(m.at("layer 0 c1"), Catch::Contains("flipped weights, Winograd F(4x4,3x3)"));
        CHECK_THAT(m.at("layer 2 c2"), Catch::Contains("forward: Winograd")); // backward-data needs padding 2
        CHECK_THAT(m.at("training_kernels"), Catch::Contains("Winograd"));
        // The weight gradients on Winograd F(3×3, 2×2), against the implicit GEMM's (winograd_wgrad=off) after one
        // step from the same weights: the two sums differ only in their order and the transforms' ±1 and ½.
        CHECK_THAT(m.at("layer 0 c1"), Catch::Contains("backward-weights: Winograd F(3x3,2x2)"));
        CHECK_THAT(m.at("layer 2 c2"), Catch::Contains("backward-weights: Winograd F(3x3,2x2)"));
        SessionOptions off;
        off.extra["winograd_wgrad"] = "maybe";
        CHECK_THROWS_WITH(cuda->createTrainingSession("winograd", off),
            Catch::Contains("winograd_wgrad=maybe") && Catch::Contains("(on, the default) or off"));
        off.extra["winograd_wgrad"] = "off";
        auto plain = cuda->createTrainingSession("winograd", off);
        plain->prepare(c.net, c.shapes, {});
        CHECK_THAT(plain->metadata().at("layer 0 c1"), !Catch::Contains("F(3x3,2x2)"));
        (void)session->step(c.input, c.target, 1);
        (void)plain->step(c.input, c.target, 1);
        for (const size_t layer : { size_t(0), size_t(2) }) {
            const double apart = test::trainRelDiff(
                session->parameterGradient({ layer, "weight" }), plain->parameterGradient({ layer, "weight" }));
            INFO("layer " << layer << ": the Winograd weight gradient against the implicit GEMM's: " << apart);
            CHECK(apart < 2e-5);
        }
    }
}

// cuda.tensor_core trains under --math tf32 only: cuda.implicit_gemm's kernels with the convolutions' pipelined tiles
// (forward, the backward-data's stride phases) and the weight gradient's tiles multiplying on TF32 Tensor Cores
// (kernels/cuda/tf32_mma.cuh). TF32 rounds each operand to 10 explicit mantissa bits (2^-11 relative): a layer's
// output moves by ~1e-3 relative, within cudnn's --math tf32 bounds below. Where that moves a value across a kink —
// a ReLU's zero, a max pool's tie — the element's gradient changes wholly, and a fraction f of such elements moves a
// gradient by ~√f in relative L2: on LeNet-5 and the tilings network with their ReLUs and max pools, 2.5–7 % on the
// first step (H200, session 27; cudnn passes there because cuDNN's Find keeps those small layers on FP32 algorithms).
// That is TF32, not the kernels, so those two networks run here with smooth activations (tanh, SiLU) and average
// pools, where a kernel error would still show at full size. Cases: LeNet-5 (5×5 layers, C = 1 and 6, split-K weight
// gradients), the graph of every kind (asymmetric padding, dilation, groups, stride 2), the generator (transposed
// convolutions: the forward's stride phases, groups, output_padding), and the weight gradient's five tilings (a C = 3
// stem, a 1×1 stride-2 projection, a 3×3 of 128 channels, a dilated 3×3 in groups, a depthwise layer). Then the
// proof that the Tensor Cores ran: one step's 3×3 weight gradient differs from cuda.implicit_gemm's FP32 one by
// TF32's rounding (FP32 kernels agree to ~1e-7), and the notes say TF32.
TEST_CASE("cuda training: cuda.tensor_core under --math tf32 matches cpu.direct within TF32's rounding",
    "[gpu][cuda][train][tf32]")
{
    SessionOptions tf32;
    tf32.math = MathMode::TF32;
    constexpr test::StepTolerance kTf32 { 1e-2, 2e-2 };
    std::ifstream lenetFile(fs::path(CONVSCOPE_EXAMPLES_DIR) / "lenet5.json");
    const std::string lenetJson((std::istreambuf_iterator<char>(lenetFile)), std::istreambuf_iterator<char>());
    Network lenet = parseNetwork(smooth(lenetJson, R"("type": "tanh")"), "LeNet-5, smoothed", {});
    REQUIRE(lenet.layers.size() == 13);
    lenet.input.batch = 8;
    test::trainSideBySide(
        "cuda", test::makeTrainCase(std::move(lenet), 121), test::sgdMomentumForTests(), "tensor_core", 3, kTf32, tf32);
    test::trainSideBySide("cuda", test::makeTrainCase(parseNetwork(kGraph, "the cuda tf32 graph", {}), 212),
        test::adamForTests(), "tensor_core", 2, kTf32, tf32);
    test::trainSideBySide("cuda",
        test::makeTrainCase(parseNetwork(kGenerator, "the cuda tf32 generator", {}), 313, LossKind::MSE),
        test::sgdMomentumForTests(), "tensor_core", 2, kTf32, tf32);
    const test::TrainCase tiles
        = test::makeTrainCase(parseNetwork(smooth(kWgradTiles, R"("type": "silu")"), "the tf32 tilings", {}), 607);
    test::trainSideBySide("cuda", tiles, test::sgdMomentumForTests(), "tensor_core", 2, kTf32, tf32);
    SessionOptions tf32Tiles = tf32; // the convolutions on the pipelined tiles instead of the inference kernel
    tf32Tiles.extra["train_tiles"] = "pipelined";
    test::trainSideBySide("cuda", tiles, test::sgdMomentumForTests(), "tensor_core", 2, kTf32, tf32Tiles);

    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    const auto weightGradient = [&](const std::string& algorithm, const SessionOptions& options) {
        auto session = cuda->createTrainingSession(algorithm, options);
        session->prepare(tiles.net, tiles.shapes, {});
        (void)session->step(tiles.input, tiles.target, 1);
        return std::make_pair(session->parameterGradient({ 4, "weight" }), session->metadata()); // c3x3
    };
    const auto [onTensorCores, notes] = weightGradient("tensor_core", tf32);
    const auto [inFp32, fp32Notes] = weightGradient("implicit_gemm", {});
    const double apart = test::trainRelDiff(onTensorCores, inFp32);
    INFO("c3x3's weight gradient, TF32 against FP32: " << apart);
    CHECK(apart > 1e-5); // FP32 kernels agree to ~1e-7: the products did round to TF32
    CHECK(apart < 1e-2);
    CHECK_THAT(notes.at("math"), Catch::StartsWith("tf32"));
    // The forward and the stride-1 backward-data on the inference Tensor Core kernel over channels-last FP32 copies,
    // the weight gradient on the TF32 tiles.
    CHECK_THAT(notes.at("layer 4 c3x3"),
        Catch::Contains("forward: tf32 ") && Catch::Contains("on channels-last fp32 copies")
            && Catch::Contains("backward-data: the forward kernel on the flipped weight, tf32 "));
    // The 3×3 of 128 channels: its weight gradient on Winograd F(3×3, 2×2), the 16 products on the TF32 tiles; the
    // 1×1 projection's on the implicit GEMM's TF32 tiles.
    CHECK_THAT(
        notes.at("layer 4 c3x3"), Catch::Contains("backward-weights: Winograd F(3x3,2x2)") && Catch::Contains("(TF32"));
    CHECK_THAT(
        notes.at("layer 2 proj"), Catch::Contains("backward-weights: implicit GEMM") && Catch::Contains("(TF32"));
    CHECK_THAT(fp32Notes.at("layer 4 c3x3"), !Catch::Contains("TF32"));
    // train_tiles=pipelined: every convolution on the pipelined implicit GEMM's TF32 tiles.
    SessionOptions pipelined = tf32;
    pipelined.extra["train_tiles"] = "pipelined";
    const auto [onTiles, tileNotes] = weightGradient("tensor_core", pipelined);
    CHECK(test::trainRelDiff(onTiles, onTensorCores) < 1e-2);
    SessionOptions gemmWgrad = tf32; // winograd_wgrad=off: the 3×3's weight gradient on the implicit GEMM's tiles
    gemmWgrad.extra["winograd_wgrad"] = "off";
    const auto [onGemm, gemmNotes] = weightGradient("tensor_core", gemmWgrad);
    CHECK(test::trainRelDiff(onGemm, onTensorCores) < 1e-2);
    CHECK(test::trainRelDiff(onGemm, inFp32) > 1e-5);
    CHECK_THAT(gemmNotes.at("layer 4 c3x3"), Catch::Contains("backward-weights: implicit GEMM 128x128 tiles (TF32"));
    CHECK_THAT(tileNotes.at("layer 4 c3x3"), Catch::Contains("TF32 mma.sync"));
    CHECK_THAT(tileNotes.at("layer 2 proj"), Catch::Contains("forward: implicit GEMM 128x128cp tiles, TF32"));
}

TEST_CASE("cuda training: per-channel reductions cut into runs match cpu.direct", "[gpu][cuda][train]")
{
    // On a GPU of 132 SMs (channel_walk.h's plan): c1's bias and bn1 sum 8·32² per channel in 2 runs of a block each
    // with float4 loads, pr1's one slope 8·16·32² in 32; c2's bias, bn2 and pr2's 8 slopes 8·33² (an odd plane: scalar
    // loads) in 2 runs of a block; c3's bias and bn3 8·17² in 4 runs of a warp; gate 1's gradient 128 channels of 32²
    // in 2 runs of a warp (float4), gate 3's 64 channels of 17² a warp each (scalar). Fewer SMs cut fewer runs. A relu
    // between each convolution and its batch norm keeps the bias gradients away from zero (a bias right before a batch
    // norm has only rounding noise).
    const std::string json = R"({ "format": "convscope-network", "version": 1, "name": "cuda_train_reduce",
      "input": { "batch": 8, "channels": 3, "height": 32, "width": 32, "source": "random" },
      "layers": [
        { "type": "conv2d", "name": "c1", "out_channels": 16, "kernel_size": [3, 3], "padding": [1, 1, 1, 1],
          "init": { "kind": "he_uniform", "seed": 61 } },
        { "type": "relu", "name": "r1" }, { "type": "batchnorm2d", "name": "bn1" },
        { "type": "prelu", "name": "pr1", "num_parameters": 1, "init": { "kind": "default" } },
        { "type": "global_avgpool2d", "name": "gp1" }, { "type": "sigmoid", "name": "sg1" },
        { "type": "mul", "name": "gate1", "inputs": ["sg1", "pr1"] },
        { "type": "conv2d", "name": "c2", "out_channels": 8, "kernel_size": [2, 2], "padding": [1, 1, 1, 1],
          "init": { "kind": "he_uniform", "seed": 62 } },
        { "type": "relu", "name": "r2" }, { "type": "batchnorm2d", "name": "bn2" },
        { "type": "prelu", "name": "pr2", "num_parameters": 8, "init": { "kind": "default" } },
        { "type": "conv2d", "name": "c3", "out_channels": 8, "kernel_size": [3, 3], "stride": [2, 2],
          "padding": [1, 1, 1, 1], "init": { "kind": "he_uniform", "seed": 63 } },
        { "type": "relu", "name": "r3" }, { "type": "batchnorm2d", "name": "bn3", "affine": false },
        { "type": "global_avgpool2d", "name": "gp3" }, { "type": "sigmoid", "name": "sg3" },
        { "type": "mul", "name": "gate3", "inputs": ["bn3", "sg3"] },
        { "type": "global_avgpool2d", "name": "g" }, { "type": "flatten", "name": "f" },
        { "type": "linear", "name": "fc", "out_features": 4, "init": { "kind": "he_uniform", "seed": 64 } } ] })";
    const test::TrainCase c = test::makeTrainCase(parseNetwork(json, "per-channel runs", {}), 606);
    test::trainSideBySide("cuda", c, test::sgdMomentumForTests(), "implicit_gemm", 2, kSteps);
}

namespace {

// `steps` SGD steps of `c` beside cpu.direct on each weight-gradient pipeline (conv2d_backward_weights.cu): cp.async
// with the narrow tile, the default; cp.async on the 256-thread tiles; the register-staged one.
void trainOnEveryWgradPipeline(const test::TrainCase& c, int steps)
{
    for (const char* pipeline : { "async", "async-wide", "registers" }) {
        INFO("CONVSCOPE_WGRAD_PIPELINE=" << pipeline);
        setenv("CONVSCOPE_WGRAD_PIPELINE", pipeline, 1);
        struct Restore {
            ~Restore() { unsetenv("CONVSCOPE_WGRAD_PIPELINE"); }
        } restore;
        test::trainSideBySide("cuda", c, test::sgdMomentumForTests(), "implicit_gemm", steps, kSteps);
    }
}

} // namespace

TEST_CASE("cuda training: the weight gradient's tilings, split or not, match cpu.direct", "[gpu][cuda][train][wgrad]")
{
    // Each layer's backward-weights on its tile (backward_index.h's wgradTiling) and, on a 132-SM H200, split-K (the
    // default pipeline's counts): the stem, 7×7 stride 2 from 3 channels (64×128, 128 parts of 8·32·32), a 1×1
    // stride-2 projection (128×64, 32 parts), a 3×3 (128×128, 29 parts, the last one short), a dilated 3×3 in 2 groups
    // (64×128, 32 parts), a depthwise 3×3 stride 2 without padding (64×64 in 128 groups, 4 parts of 8·7·7), the
    // linear head (64×128, unsplit). The 64×128 tiles run on 128 threads (8×8 outputs each) on the default pipeline,
    // on 256 (4×8) on the other two.
    const std::string json = kWgradTiles;
    // Seed 607: with 606's input one pre-activation of dil lies within 1e-7 of the ReLU's kink and FP32 rounds it to
    // the other side, so every FP32 backend (PyTorch's too: 3.0e-3 against float64 on the input gradient; onednn.auto
    // and cuda.implicit_gemm agree with it to six digits) parts from cpu.direct's double sums by 1e-3 — the kink, not
    // the kernels. With 607 onednn.auto and cpu.im2col_gemm stay within 1e-4 of cpu.direct.
    const test::TrainCase c = test::makeTrainCase(parseNetwork(json, "the weight gradient's tilings", {}), 607);
    trainOnEveryWgradPipeline(c, 2);
}

TEST_CASE("cuda training: the weight gradient's pipelines on a small batch (the racecheck case)",
    "[gpu][cuda][train][wgrad-small]")
{
    // The same kinds of layer as the tilings case at batch 2 and 16², one step: every wgrad pipeline's shared-memory
    // ring (the cp.async stages, the register-staged double buffer) runs on the same tiles in far fewer blocks, so
    // compute-sanitizer's racecheck (which instruments every shared access, ~50× slower) finishes within a device
    // call: tools/gpu-check.sh STAGES=sanitize TAGS="[wgrad-small]" SANITIZER_TOOLS=racecheck. The same network
    // smoothed on cuda.tensor_core in tf32 runs the TF32 tiles (forward, backward-data, weight gradient) likewise.
    const std::string json = R"({ "format": "convscope-network", "version": 1, "name": "cuda_train_wgrad_small",
      "input": { "batch": 2, "channels": 3, "height": 16, "width": 16, "source": "random" },
      "layers": [
        { "type": "conv2d", "name": "stem", "out_channels": 64, "kernel_size": [7, 7], "stride": [2, 2],
          "padding": [3, 3, 3, 3], "bias": false, "init": { "kind": "he_uniform", "seed": 71 } },
        { "type": "relu", "name": "r0" },
        { "type": "conv2d", "name": "c3x3", "out_channels": 128, "kernel_size": [3, 3], "padding": [1, 1, 1, 1],
          "init": { "kind": "he_uniform", "seed": 72 } },
        { "type": "relu", "name": "r1" },
        { "type": "conv2d", "name": "dw", "out_channels": 128, "kernel_size": [3, 3], "stride": [2, 2], "groups": 128,
          "init": { "kind": "he_uniform", "seed": 73 } },
        { "type": "global_avgpool2d", "name": "g" }, { "type": "flatten", "name": "f" },
        { "type": "linear", "name": "fc", "out_features": 10, "init": { "kind": "he_uniform", "seed": 74 } } ] })";
    const test::TrainCase c = test::makeTrainCase(parseNetwork(json, "the weight gradient, small", {}), 611);
    trainOnEveryWgradPipeline(c, 1);
    SessionOptions tf32;
    tf32.math = MathMode::TF32;
    test::trainSideBySide("cuda",
        test::makeTrainCase(parseNetwork(smooth(json, R"("type": "silu")"), "the TF32 tiles, small", {}), 611),
        test::sgdMomentumForTests(), "tensor_core", 1, { 1e-2, 2e-2 }, tf32);
}

TEST_CASE("cuda training: the loss on the device (ce, mse, bce) matches cpu.direct; a NaN loss changes no weight",
    "[gpu][cuda][train][loss]")
{
    test::checkDeviceLosses("cuda", "implicit_gemm", kSteps);
}

TEST_CASE("cuda training: softmax and log_softmax along any axis match cpu.direct", "[gpu][cuda][train]")
{
    const test::TrainCase c
        = test::makeTrainCase(test::softmaxAxesNetwork("cuda_train_softmax_axes"), 505, LossKind::MSE);
    test::trainSideBySide("cuda", c, test::adamForTests(), "implicit_gemm", 3, kSteps);
}

// fp16 and bf16 on our kernels are the CPU's mixed precision (cuda_training_session.h): the same rounding points on
// FP32 tensors, the products exact in FP32 (cuda.implicit_gemm) or TF32 (cuda.tensor_core), so what differs from
// cpu.direct's fp16 / bf16 is the sums' order (FP32 against double; cuda.tensor_core's pipelined tiles multiply the
// rounded operands in that type on m16n8k16, half_mma.cuh), which moves an output across a rounding
// boundary of the half type now and then. The networks are the [tf32] case's, smoothed (a ReLU's or max pool's flip
// would move a gradient wholly); fp16 scales the loss from 256 on both sides, where none of them overflows. The
// bounds are the CPU's own spread: on this LeNet-5 (batch 8, seed 121) cpu.im2col_gemm's first-step gradients in fp16
// are 1.7e-4 to 6.9e-4 (relative L2) from cpu.direct's, their losses 1.4e-6 apart, while in bf16 they are equal (and
// 1e-7 apart in FP32); ours measured 2.0e-4 to 7.5e-4 in fp16 on both algorithms, and in bf16 under 1e-3 at the first
// step and 1.0e-2 at the second (H200, session 33). The tilings network's long sums (a 3×3 of 128 channels) flip more
// in bf16, whose steps are 8× coarser: 2.1e-3 on cuda.implicit_gemm's FFMA and 2.6e-3 on cuda.tensor_core at the first
// step, so bf16's first bound is 5e-3. Then the notes and the metadata say what ran.
TEST_CASE("cuda training: fp16 and bf16 on cuda.implicit_gemm and cuda.tensor_core match cpu.direct's mixed precision",
    "[gpu][cuda][train][mixed]")
{
    std::ifstream lenetFile(fs::path(CONVSCOPE_EXAMPLES_DIR) / "lenet5.json");
    const std::string lenetJson((std::istreambuf_iterator<char>(lenetFile)), std::istreambuf_iterator<char>());
    Network lenet = parseNetwork(smooth(lenetJson, R"("type": "tanh")"), "LeNet-5, smoothed", {});
    lenet.input.batch = 8;
    const test::TrainCase cases[] = { test::makeTrainCase(std::move(lenet), 121),
        test::makeTrainCase(parseNetwork(smooth(kGraph, R"("type": "silu")"), "the cuda mixed graph", {}), 212),
        test::makeTrainCase(parseNetwork(kGenerator, "the cuda mixed generator", {}), 313, LossKind::MSE),
        test::makeTrainCase(parseNetwork(smooth(kWgradTiles, R"("type": "silu")"), "the mixed tilings", {}), 607) };
    for (const auto& [math, tolerance] : { std::pair { MathMode::FP16, test::StepTolerance { 2e-3, 1e-2 } },
             { MathMode::BF16, test::StepTolerance { 5e-3, 3e-2 } } }) {
        SessionOptions options;
        options.math = math;
        options.extra["loss_scale"] = "256"; // read by FP16 only
        SessionOptions pipelined = options; // cuda.tensor_core's convolutions on the pipelined tiles
        pipelined.extra["train_tiles"] = "pipelined";
        for (const auto& [algorithm, session] :
            { std::pair { "implicit_gemm", options }, { "tensor_core", options }, { "tensor_core", pipelined } })
            for (const test::TrainCase& c : cases)
                test::trainSideBySide("cuda", c, test::adamForTests(), algorithm, 2, tolerance, session, options);
    }

    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    SessionOptions fp16;
    fp16.math = MathMode::FP16;
    SessionOptions badTiles = fp16;
    badTiles.extra["train_tiles"] = "fast";
    CHECK_THROWS_WITH(cuda->createTrainingSession("tensor_core", badTiles),
        Catch::Contains("train_tiles=fast") && Catch::Contains("inference, the default) or pipelined"));
    auto session = cuda->createTrainingSession("tensor_core", fp16);
    session->prepare(cases[3].net, cases[3].shapes, {}); // the tilings
    const auto m = session->metadata();
    CHECK_THAT(m.at("math"),
        Catch::StartsWith("fp16 mixed precision")
            && Catch::Contains("inference Tensor Core kernel over channels-last"));
    // The forward and the stride-1 backward-data on the inference Tensor Core kernel over channels-last fp16 copies,
    // the strided layers' backward-data on the pipelined tiles in FP16 (half_mma.cuh), the weight gradient in TF32;
    // the grouped layers keep the pipelined tiles.
    CHECK_THAT(
        m.at("layer 4 c3x3"), Catch::Contains("forward: fp16 ") && Catch::Contains("on channels-last fp16 copies"));
    CHECK_THAT(m.at("layer 4 c3x3"), Catch::Contains("backward-data: the forward kernel on the flipped weight, fp16 "));
    CHECK_THAT(m.at("layer 4 c3x3"), Catch::Contains("(TF32"));
    CHECK_THAT(
        m.at("layer 2 proj"), Catch::Contains("forward: fp16 ") && Catch::Contains("backward-data: 4 stride phases"));
    CHECK_THAT(m.at("layer 6 dil"), Catch::Contains("forward: implicit GEMM") && !Catch::Contains("channels-last"));
    CHECK_THAT(m.at("math"), Catch::Contains("GradScaler (65536"));
    CHECK_THAT(m.at("layer 4 c3x3"), Catch::Contains("rounded to fp16"));
    CHECK(m.count("storage") == 0); // FP32 tensors: the half-storage note is the cudnn session's
    CHECK(session->lossScale() == 65536);
    SessionOptions bf16;
    bf16.math = MathMode::BF16;
    auto plain = cuda->createTrainingSession("implicit_gemm", bf16);
    plain->prepare(cases[3].net, cases[3].shapes, {});
    CHECK_THAT(plain->metadata().at("math"), Catch::StartsWith("bf16 mixed precision") && !Catch::Contains("TF32"));
    CHECK_THAT(plain->metadata().at("layer 4 c3x3"), !Catch::Contains("mma.sync"));
    auto bf16Kernel = cuda->createTrainingSession("tensor_core", bf16);
    bf16Kernel->prepare(cases[3].net, cases[3].shapes, {});
    CHECK_THAT(bf16Kernel->metadata().at("layer 4 c3x3"), Catch::Contains("on channels-last bf16 copies"));
    // train_tiles=pipelined: every convolution on the pipelined implicit GEMM, its tiles in the half type.
    bf16.extra["train_tiles"] = "pipelined";
    auto bf16Tiles = cuda->createTrainingSession("tensor_core", bf16);
    bf16Tiles->prepare(cases[3].net, cases[3].shapes, {});
    CHECK_THAT(bf16Tiles->metadata().at("layer 4 c3x3"), Catch::Contains("BF16 mma.sync m16n8k16"));
    CHECK_THAT(
        bf16Tiles->metadata().at("layer 2 proj"), Catch::Contains("forward: implicit GEMM 128x128cp tiles, BF16"));
    CHECK_THAT(bf16Tiles->metadata().at("math"), Catch::Contains("bf16 on mma.sync m16n8k16"));
    CHECK(plain->lossScale() == 0); // bf16 runs unscaled
}

TEST_CASE("cuda training: fp16 skips a step whose scaled gradients overflow and halves the scale, as the CPU",
    "[gpu][cuda][train][mixed]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    Network net = parseNetwork(kGraph, "the cuda overflow graph", {});
    const test::TrainCase c = test::makeTrainCase(std::move(net), 222);
    SessionOptions options;
    options.math = MathMode::FP16;
    options.extra["loss_scale"] = "1e30"; // FP16 overflows at the first rounded gradient
    auto session = cuda->createTrainingSession("implicit_gemm", options);
    TrainingOptions to;
    to.optimizer = test::sgdMomentumForTests();
    session->prepare(c.net, c.shapes, to);
    const Network before = session->trainedNetwork();
    const StepResult first = session->step(c.input, c.target, 1);
    CHECK(first.skipped);
    CHECK(first.lossScale == 1e30);
    CHECK(std::isfinite(first.loss));
    CHECK(session->step(c.input, c.target, 2).lossScale == 5e29);
    // No weight or bias moved (batch norm's running statistics do: they move in the forward, as in PyTorch).
    const Network after = session->trainedNetwork();
    for (size_t i = 0; i < before.layers.size(); ++i)
        for (const auto& [what, was, now] : { std::tuple { "weight", before.layers[i].weight, after.layers[i].weight },
                 { "bias", before.layers[i].bias, after.layers[i].bias } })
            if (was) {
                INFO(before.layers[i].name << "." << what);
                REQUIRE(now);
                CHECK(test::trainRelDiff(*now, *was) == 0.0);
            }
    session->reset(); // a new GradScaler
    CHECK(session->step(c.input, c.target, 1).lossScale == 1e30);
}

TEST_CASE("cuda training: refusals name the layer, the kind or the math mode", "[gpu][cuda][train]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    SessionOptions tf32;
    tf32.math = MathMode::TF32;
    CHECK_THROWS_WITH(cuda->createTrainingSession("implicit_gemm", tf32),
        Catch::Contains("tf32") && Catch::Contains("cuda.tensor_core"));
    CHECK_THROWS_AS(cuda->createTrainingSession("no_such_algorithm", {}), UnsupportedError);
    CHECK_THROWS_WITH(cuda->createTrainingSession("tensor_core", {}), Catch::Contains("--math tf32, fp16 or bf16"));
    test::expectTrainingRefused(*cuda, "implicit_gemm",
        R"({ "format": "convscope-network", "version": 1, "name": "resized",
      "input": { "batch": 2, "channels": 2, "height": 6, "width": 6, "source": "random" },
      "layers": [ { "type": "conv2d", "name": "c", "out_channels": 2, "kernel_size": [3, 3],
        "init": { "kind": "he_uniform" } }, { "type": "resize", "name": "up" } ] })",
        "layer 1 (up, resize)");
    test::expectTrainingRefused(*cuda, "implicit_gemm",
        R"({ "format": "convscope-network", "version": 1, "name": "volume",
      "input": { "batch": 2, "channels": 2, "depth": 4, "height": 6, "width": 6, "source": "random" },
      "layers": [ { "type": "conv3d", "name": "c", "out_channels": 2, "kernel_size": [3, 3, 3],
        "init": { "kind": "he_uniform" } } ] })",
        "layer 0 (c, conv3d)");
    test::expectTrainingRefused(*cuda, "implicit_gemm",
        R"({ "format": "convscope-network", "version": 1, "name": "reduced",
      "input": { "batch": 2, "channels": 2, "height": 6, "width": 6, "source": "random" },
      "layers": [ { "type": "conv2d", "name": "c", "out_channels": 2, "kernel_size": [3, 3],
        "init": { "kind": "he_uniform" } }, { "type": "reduce", "name": "m", "op": "mean", "dim": [2, 3] } ] })",
        "layer 1 (m, reduce)");
}

TEST_CASE("cuda training: PyTorch's reference cases within 1e-5", "[gpu][cuda][train][torch]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    for (const char* algorithm : { "implicit_gemm", "direct" }) {
        const std::vector<std::string> trained = test::runTorchReferenceCases("cuda", algorithm, kTorchTolerance);
        INFO("cuda." << algorithm);
        // Every case but the volumes one (the 3-D kinds have no backward on cuda yet): LeNet-5 and the ResNet block
        // among them.
        CHECK(trained.size() >= 9);
        CHECK(std::find(trained.begin(), trained.end(), "lenet5_sgd") != trained.end());
        CHECK(std::find(trained.begin(), trained.end(), "resnet_block") != trained.end());
    }
}
