// Volumes on the GPU backends against cpu.direct: conv3d on shapes that reach every tile of cuda's implicit GEMM
// (8, 16, 32 and more output channels per group) and its split reduction, the lecture's encoder and a transposed
// decoder layer, and the element-wise, merge and per-channel layers on volumes. Every cuda algorithm and cudnn's auto
// and pinned algorithms run each network with their outputs poisoned (NaN) before each pass; every layer's output
// must be within relative L2 1e-5 of cpu.direct's. What supports() refuses must say why. The networks and their
// cpu.direct references are built first, so without a GPU the cases still check those and then print SKIPPED.
#include "compute/backend_registry.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <map>

using namespace convscope;

namespace {

struct Reference {
    Network net;
    ShapeReport shapes;
    Tensor input;
    std::vector<Tensor> outputs;
};

Reference reference(const std::string& layers, const std::string& input, uint64_t seed)
{
    Reference r;
    r.net = parseNetwork(R"({"format": "convscope-network", "version": 1, "name": "volume", "input": )" + input
            + R"(, "layers": )" + layers + "}",
        "volume_gpu_test", {});
    r.shapes = inferShapes(r.net);
    INFO(r.shapes.firstError());
    REQUIRE(r.shapes.ok());
    materializeParameters(r.net, r.shapes);
    r.input = test::randomTensor(r.shapes.input, seed);
    auto cpu = BackendRegistry::instance().find("cpu");
    REQUIRE(cpu);
    auto session = cpu->createSession("direct", {});
    session->prepare(r.net, r.shapes);
    session->runPass(r.input);
    for (size_t i = 0; i < r.net.layers.size(); ++i)
        r.outputs.push_back(session->fetchOutput(i, nullptr));
    return r;
}

// Runs `algorithm` of `backend` on the reference's network; returns false when supports() refused (with a reason).
bool check(Backend& backend, const std::string& algorithm, const Reference& r,
    const std::map<std::string, std::string>& extra = {})
{
    for (size_t i = 0; i < r.net.layers.size(); ++i) {
        const Support s = backend.supports(algorithm, r.net.layers[i].spec, r.shapes.layers[i]);
        if (!s.supported) {
            INFO(backend.name() << "." << algorithm << " refused layer " << i);
            CHECK_FALSE(s.reason.empty());
            std::cout << "refused: " << backend.name() << "." << algorithm << ": " << s.reason << std::endl;
            return false;
        }
    }
    SessionOptions options;
    options.extra = extra;
    options.extra["poison_outputs"] = "1";
    auto session = backend.createSession(algorithm, options);
    session->prepare(r.net, r.shapes);
    for (int pass = 0; pass < 2; ++pass) // the second pass runs on the state the first left behind
        session->runPass(r.input);
    for (size_t i = 0; i < r.net.layers.size(); ++i) {
        const Tensor out = session->fetchOutput(i, nullptr);
        const ErrorMetrics m = compare(out, r.outputs[i]);
        INFO(backend.name() << "." << algorithm << " layer " << i << " (" << r.net.layers[i].name << ", "
                            << layerTypeName(r.net.layers[i].spec) << ") " << r.shapes.layers[i].in.str() << " → "
                            << r.shapes.layers[i].out.str() << ": relL2 " << m.relL2 << " maxAbs " << m.maxAbs << " "
                            << m.note << " | " << session->layerNote(i));
        CHECK(m.valid);
        CHECK(m.relL2 <= 1e-5);
    }
    return true;
}

// Every cuda algorithm (fft must refuse conv3d, saying so) and cudnn's auto plus two pinned algorithms.
void checkEveryGpuBackend(const Reference& r, bool hasConv3d)
{
    auto cuda = test::backendOrSkip("cuda");
    if (cuda) {
        for (const std::string a : { "direct", "tiled", "implicit_gemm", "winograd" })
            CHECK(check(*cuda, a, r));
        const bool fftRan = check(*cuda, "fft", r);
        CHECK(fftRan != hasConv3d);
    }
    auto cudnn = test::backendOrSkip("cudnn");
    if (cudnn) {
        CHECK(check(*cudnn, "auto", r));
        for (const std::string a : { "implicit_gemm", "implicit_precomp_gemm" })
            check(*cudnn, a, r); // a pinned algorithm may be refused for a shape, with cuDNN's reason
    }
}

std::string volumeInput(int n, int c, int d, int h, int w)
{
    return R"({"batch": )" + std::to_string(n) + R"(, "channels": )" + std::to_string(c) + R"(, "depth": )"
        + std::to_string(d) + R"(, "height": )" + std::to_string(h) + R"(, "width": )" + std::to_string(w)
        + R"(, "source": "random"})";
}

} // namespace

TEST_CASE("volume gpu: conv3d on every tile of the implicit GEMM and its split reduction", "[gpu][volume]")
{
    struct Case {
        const char* what;
        std::string layers, input;
    };
    const Case cases[] = {
        { "12 outputs (16-wide tile), same padding",
            R"([{"type": "conv3d", "name": "c", "out_channels": 12, "kernel_size": [3, 3, 3], "padding": "same",
                "init": {"kind": "uniform", "seed": 3}}])",
            volumeInput(2, 3, 9, 10, 11) },
        { "24 outputs (32-wide tile), strides, dilation, asymmetric padding",
            R"([{"type": "conv3d", "name": "c", "out_channels": 24, "kernel_size": [3, 1, 3], "stride": [1, 2, 1],
                "dilation": [2, 1, 1], "padding": [1, 0, 0, 1, 2, 1], "init": {"kind": "uniform", "seed": 4}}])",
            volumeInput(1, 5, 6, 7, 8) },
        { "70 outputs in 2 groups (64-wide tiles), no bias",
            R"([{"type": "conv3d", "name": "c", "out_channels": 70, "kernel_size": [2, 2, 2], "groups": 2,
                "bias": false, "init": {"kind": "uniform", "seed": 5}}])",
            volumeInput(2, 8, 5, 6, 5) },
        { "64 inputs on 4³ (reduction split over blocks)",
            R"([{"type": "conv3d", "name": "c", "out_channels": 8, "kernel_size": [3, 3, 3], "padding": [1, 1, 1, 1, 1, 1],
                "init": {"kind": "uniform", "seed": 6}}])",
            volumeInput(1, 64, 4, 4, 4) },
        // He-uniform weights keep every layer's values near 1, as a trained network's: with uniform(-1, 1) weights the
        // transposed layer's outputs reach the hundreds, and the final tanh turns their last-bit differences (within
        // 1e-5 of that layer's norm) into a larger relative error on its own, much smaller, output.
        { "the lecture's encoder and a transposed layer back up, at batch 3",
            R"([{"type": "conv3d", "name": "e1", "out_channels": 32, "kernel_size": [5, 5, 5], "stride": [2, 2, 2],
                 "padding": "same", "init": {"kind": "he_uniform", "seed": 7}},
                {"type": "relu", "name": "r1"},
                {"type": "conv3d", "name": "e2", "out_channels": 16, "kernel_size": [5, 5, 5], "stride": [2, 2, 2],
                 "padding": "same", "init": {"kind": "he_uniform", "seed": 8}},
                {"type": "relu", "name": "r2"},
                {"type": "conv3d", "name": "latent", "out_channels": 8, "kernel_size": [5, 5, 5], "stride": [4, 4, 4],
                 "padding": "same", "init": {"kind": "he_uniform", "seed": 9}},
                {"type": "conv_transpose3d", "name": "d1", "out_channels": 16, "kernel_size": [5, 5, 5],
                 "stride": [4, 4, 4], "padding": [0, 1, 0, 1, 0, 1], "init": {"kind": "he_uniform", "seed": 10}},
                {"type": "tanh", "name": "t"}])",
            volumeInput(3, 1, 32, 32, 32) },
    };
    for (const Case& c : cases) {
        SECTION(c.what)
        {
            const Reference r = reference(c.layers, c.input, 11);
            checkEveryGpuBackend(r, true);
        }
    }
}

// conv_transpose3d_phase.cu's stride phases (the GEMM family; the layers of the cases above take the phase-tiled
// kernel: 64 phases, or fewer than 8 output channels a group): the decoder's 16→32 layer, then a grouped, dilated layer
// with output padding and a stride of 1 along one axis.
TEST_CASE(
    "volume gpu: conv_transpose3d on its stride phases (the decoder's middle layer, groups, dilation)", "[gpu][volume]")
{
    checkEveryGpuBackend(
        reference(
            R"([{"type": "conv_transpose3d", "name": "d2", "out_channels": 32, "kernel_size": [5, 5, 5],
                 "stride": [2, 2, 2], "padding": [1, 2, 1, 2, 1, 2], "init": {"kind": "he_uniform", "seed": 12}},
                {"type": "relu", "name": "r"},
                {"type": "conv_transpose3d", "name": "g", "out_channels": 16, "kernel_size": [3, 2, 3],
                 "stride": [2, 1, 2], "padding": [1, 1, 0, 0, 1, 1], "output_padding": [1, 0, 1],
                 "dilation": [1, 2, 1], "groups": 2, "init": {"kind": "he_uniform", "seed": 13}}])",
            volumeInput(2, 16, 4, 5, 3), 25),
        false);
}

// conv_transpose3d_tiled.cu's phase-tiled kernel (the GEMM family where the phase GEMMs do not pay or apply): the
// decoder's 8→16 5³ stride-4 layer (64 phases) and its one-channel 5³ stride-2 output layer at batch 2, between them a
// grouped, dilated layer whose crop lies beyond a row phase's taps (a GEMM padding of −1), with output padding and
// phases no tap reaches (the bias alone); every layer's note must name the kernel.
TEST_CASE("volume gpu: conv_transpose3d on the phase-tiled kernel (the decoder's first and last layers, crops)",
    "[gpu][volume]")
{
    const Reference r = reference(
        R"([{"type": "conv_transpose3d", "name": "d1", "out_channels": 16, "kernel_size": [5, 5, 5],
             "stride": [4, 4, 4], "padding": [0, 1, 0, 1, 0, 1], "init": {"kind": "he_uniform", "seed": 31}},
            {"type": "relu", "name": "r"},
            {"type": "conv_transpose3d", "name": "g", "out_channels": 6, "kernel_size": [3, 2, 1],
             "stride": [2, 3, 3], "padding": [3, 0, 1, 0, 0, 0], "output_padding": [1, 2, 2], "dilation": [2, 1, 1],
             "groups": 2, "init": {"kind": "uniform", "seed": 32}},
            {"type": "conv_transpose3d", "name": "d3", "out_channels": 1, "kernel_size": [5, 5, 5],
             "stride": [2, 2, 2], "padding": [1, 2, 1, 2, 1, 2], "init": {"kind": "he_uniform", "seed": 33}}])",
        volumeInput(2, 8, 2, 2, 2), 35);
    checkEveryGpuBackend(r, false);
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    auto session = cuda->createSession("implicit_gemm", {});
    session->prepare(r.net, r.shapes);
    for (const size_t i : { size_t(0), size_t(2), size_t(3) }) {
        INFO(r.net.layers[i].name << ": " << session->layerNote(i));
        CHECK(session->layerNote(i).find("phase-tiled") != std::string::npos);
    }
    // Every tiling pinned (--option transposed_tile), the phase GEMMs wherever they apply (the 64-phase layer) and
    // never; a value the options do not take is refused by name.
    for (const char* tile : { "1x8", "4x4", "16x2" })
        CHECK(check(*cuda, "implicit_gemm", r, { { "transposed_tile", tile } }));
    CHECK(check(*cuda, "implicit_gemm", r, { { "transposed_gemm", "on" } }));
    CHECK(check(*cuda, "implicit_gemm", r, { { "transposed_gemm", "off" } }));
    SessionOptions bad;
    bad.extra["transposed_tile"] = "8x8";
    CHECK_THROWS_WITH(cuda->createSession("implicit_gemm", bad), Catch::Contains("transposed_tile=8x8"));
}

TEST_CASE("volume gpu: transposed convolutions, pools, batch norm and element-wise layers on volumes", "[gpu][volume]")
{
    const Reference r = reference(
        R"([{"type": "conv_transpose3d", "name": "up", "out_channels": 6, "kernel_size": [2, 3, 3], "stride": [3, 1, 2],
             "padding": [1, 0, 0, 2, 1, 1], "output_padding": [2, 0, 1], "dilation": [1, 2, 2], "groups": 2,
             "init": {"kind": "uniform", "seed": 21}},
            {"type": "batchnorm3d", "name": "bn", "init": {"kind": "random", "seed": 22}},
            {"type": "leaky_relu", "name": "lr", "negative_slope": 0.1},
            {"type": "maxpool3d", "name": "mp", "kernel_size": [3, 3, 3], "stride": [2, 2, 2],
             "padding": [1, 1, 1, 1, 1, 1], "ceil_mode": true},
            {"type": "avgpool3d", "name": "ap", "kernel_size": [2, 2, 2], "stride": [1, 1, 1],
             "padding": [1, 1, 1, 1, 1, 1], "count_include_pad": false},
            {"type": "maxpool3d", "name": "mp2", "kernel_size": [2, 2, 2]},
            {"type": "global_avgpool3d", "name": "gap", "inputs": ["ap"]},
            {"type": "sigmoid", "name": "gate", "inputs": ["gap"]},
            {"type": "mul", "name": "scaled", "inputs": ["ap", "gate"]},
            {"type": "add", "name": "sum", "inputs": ["scaled", "ap", "ap"]},
            {"type": "concat", "name": "cat", "inputs": ["sum", "scaled"]},
            {"type": "softmax", "name": "sm"},
            {"type": "silu", "name": "act"},
            {"type": "flatten", "name": "flat"},
            {"type": "linear", "name": "fc", "out_features": 5, "init": {"kind": "uniform", "seed": 23}}])",
        volumeInput(2, 4, 3, 5, 6), 24);
    checkEveryGpuBackend(r, false);
}
