// The cudnn backend against cpu.direct, what is cuDNN's own: the NHWC layout and the separate bias pass on random
// conv2d shapes, FP32 (relative L2 ≤ 1e-5) and TF32 (≤ 5e-3); every kind and every pinned algorithm on random shapes
// is the cross-backend test (tests/backends). Device outputs are poisoned with NaN before each pass. An unsupported
// pinned algorithm must be refused with cuDNN's own reason. Without a usable cuDNN every case prints "SKIPPED:
// <reason>".
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <random>
#include <variant>

using namespace convscope;
using convscope::test::oneLayer;
using convscope::test::param;
using convscope::test::randomParameters;
using convscope::test::Rng;
using convscope::test::vec;

namespace {

const std::vector<std::string> kPinned = { "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft",
    "fft_tiling", "winograd", "winograd_nonfused" };

std::shared_ptr<Backend> cudnnOrSkip() { return test::backendOrSkip("cudnn"); }

struct Run {
    std::vector<Tensor> outputs;
    std::vector<std::string> notes;
};

struct Check {
    std::vector<std::string> algorithms { "auto" };
    MathMode math = MathMode::FP32;
    std::string layout = "nchw";
    bool allPinned = false; // every pinned algorithm that supports() accepts, plus auto
    std::map<std::string, std::string> extra;
    double inputScale = 1; // the random input's values (in [-1, 1]) multiplied by this
};

// Runs `net` on cpu.direct and on the cudnn algorithms asked for; compares every layer's output with the
// reference and, for conv2d, every algorithm's output with auto's.
void checkAgainstCpu(Backend& cudnn, Network net, uint64_t seed, const std::string& what, const Check& check = {})
{
    const ShapeReport shapes = inferShapes(net);
    INFO(what << "  " << shapes.firstError());
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, seed);
    Tensor input = test::randomTensor(shapes.input, seed * 977 + 5);
    for (int64_t i = 0; i < input.numel(); ++i)
        input.data()[i] = float(double(input.data()[i]) * check.inputScale);
    auto ref = BackendRegistry::instance().find("cpu")->createSession("direct", {});
    ref->prepare(net, shapes);
    ref->runPass(input);
    std::vector<Tensor> expected;
    for (size_t i = 0; i < net.layers.size(); ++i)
        expected.push_back(ref->fetchOutput(i, nullptr));

    std::vector<std::string> algorithms = check.algorithms;
    if (check.allPinned)
        algorithms.insert(algorithms.end(), kPinned.begin(), kPinned.end());
    const double baseTolerance = check.math == MathMode::TF32 ? 5e-3 : 1e-5;
    std::optional<Tensor> autoOutput;
    double autoTolerance = baseTolerance;
    int ran = 0;
    for (const std::string& algorithm : algorithms) {
        bool supported = true;
        for (size_t i = 0; i < net.layers.size(); ++i) {
            const Support s = cudnn.supports(algorithm, net.layers[i].spec, shapes.layers[i]);
            if (!s.supported) {
                supported = false;
                INFO("cudnn." << algorithm << " refused layer " << i << ": " << s.reason);
                // Only a pinned conv2d algorithm may refuse here, and then with cuDNN's own status text.
                CHECK(algorithm != "auto");
                CHECK(s.reason.find("CUDNN_STATUS") != std::string::npos);
            }
        }
        if (!supported)
            continue;
        SessionOptions options;
        options.math = check.math;
        options.extra["poison_outputs"] = "1";
        options.extra["layout"] = check.layout;
        for (const auto& [k, v] : check.extra)
            options.extra[k] = v;
        auto session = cudnn.createSession(algorithm, options);
        try {
            session->prepare(net, shapes);
        } catch (const UnsupportedError& e) {
            // A pinned algorithm may still turn out unsupported in the chosen layout; the reason must be cuDNN's.
            INFO("cudnn." << algorithm << " (" << check.layout << "): " << e.what());
            CHECK(algorithm != "auto");
            CHECK(std::string(e.what()).find("CUDNN_STATUS") != std::string::npos);
            continue;
        }
        const PassTiming t = session->runPass(input);
        ++ran;
        // Non-fused Winograd with 5x5 (and larger) tiles amplifies rounding in its transforms: cuDNN's own FP32
        // result is ~4e-4 from the exact one on a 5x5 layer (seen on the H200). That is the algorithm, not this
        // backend; whenever it ran (pinned, or chosen by auto) the FP32 bound is TF32's 5e-3, because in a chain
        // the later layers carry that error on (2.2e-3 at the softmax of the LeNet-like chain, seen on the H200).
        bool winogradNonfused = false;
        for (size_t i = 0; i < net.layers.size(); ++i)
            winogradNonfused |= session->layerNote(i).find("winograd") != std::string::npos; // legacy or graph API
        const double tolerance = winogradNonfused ? std::max(baseTolerance, 5e-3) : baseTolerance;
        CHECK(t.layerMs.size() == net.layers.size());
        for (size_t i = 0; i < net.layers.size(); ++i) {
            double ms = -1;
            const Tensor out = session->fetchOutput(i, &ms);
            const ErrorMetrics m = compare(out, expected[i]);
            INFO("cudnn." << algorithm << " " << mathModeName(check.math) << " " << check.layout << " layer " << i
                          << " (" << layerTypeName(net.layers[i].spec) << ") " << shapes.layers[i].in.str() << " -> "
                          << shapes.layers[i].out.str() << ": relL2 " << m.relL2 << " maxAbs " << m.maxAbs << " "
                          << m.note << " | " << session->layerNote(i));
            CHECK(m.valid);
            // Layer i of a chain takes the FP32 output of layer i−1 where the reference takes its own double one,
            // so the bound grows with depth; every single-layer sweep case keeps the plain bound. (The LeNet-like
            // chain's softmax, layer 5, came out at 1.08e-5 once in ~20 seeded runs on the H200.)
            const double depth = 1.0 + 0.5 * double(i);
            CHECK(m.relL2 <= tolerance * depth);
            CHECK(ms >= 0);
            if (i + 1 == net.layers.size()) {
                if (algorithm == "auto") {
                    autoOutput = out.clone();
                    autoTolerance = tolerance;
                } else if (autoOutput) {
                    // Each is within its depth-scaled bound of the reference, so they agree within the sum of the
                    // two. (Without the depth factor this failed once on the H200: cudnn.winograd_nonfused's
                    // LeNet-like chain at the softmax, 0.0151 from auto, each inside its own 0.0175 of cpu.direct.)
                    const ErrorMetrics agree = compare(out, *autoOutput);
                    CHECK(agree.relL2 <= 2 * std::max(tolerance, autoTolerance) * depth);
                }
            }
        }
        const auto meta = session->metadata();
        CHECK(meta.count("cudnn"));
        CHECK(meta.at("math").rfind(mathModeName(check.math), 0) == 0);
    }
    CHECK(ran >= 1);
}

uint64_t freshSeed() { return Catch::rngSeed() ? Catch::rngSeed() : std::random_device {}(); }

Padding2d randomPadding(Rng& r, int64_t maxTop, int64_t maxLeft)
{
    return { Padding2d::Mode::Explicit, r(0, maxTop), r(0, maxTop), r(0, maxLeft), r(0, maxLeft) };
}

Conv2d randomConv(Rng& r, int64_t* cin)
{
    Conv2d c;
    const int64_t groups = r.coin() ? 1 : r(1, 4);
    *cin = groups * r(1, 5);
    c.groups = groups;
    c.out_channels = groups * r(1, 6);
    c.kernel_size = { r(1, 5), r(1, 5) };
    c.stride = { r(1, 3), r(1, 3) };
    c.dilation = { r(1, 2), r(1, 2) };
    c.padding = r(0, 5) == 0 ? Padding2d { Padding2d::Mode::Same } : randomPadding(r, 3, 3);
    c.bias = r(0, 3) != 0;
    return c;
}

} // namespace

TEST_CASE("cudnn conv2d: NHWC layout and TF32", "[gpu][cudnn][conv2d][nhwc]")
{
    auto cudnn = cudnnOrSkip();
    if (!cudnn)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed + 17);
    int done = 0;
    for (int attempt = 0; attempt < 200 && done < 12; ++attempt) {
        int64_t cin = 1;
        const Conv2d c = randomConv(r, &cin);
        Network net = oneLayer(Shape::nchw(r(1, 3), cin, r(3, 19), r(3, 19)), c);
        if (!inferShapes(net).ok())
            continue;
        Check nhwc;
        nhwc.layout = "nhwc";
        nhwc.algorithms = { "auto", "implicit_gemm", "implicit_precomp_gemm" };
        checkAgainstCpu(*cudnn, net, seed + attempt, "nhwc conv2d case " + std::to_string(attempt), nhwc);
        Check tf32;
        tf32.math = MathMode::TF32;
        checkAgainstCpu(*cudnn, net, seed + attempt, "tf32 conv2d case " + std::to_string(attempt), tf32);
        ++done;
    }
    // A wider layer where tensor cores and every algorithm family are in play.
    Conv2d wide { 64, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) };
    Network net = oneLayer(Shape::nchw(2, 32, 40, 36), wide);
    Check all;
    all.allPinned = true;
    checkAgainstCpu(*cudnn, net, seed + 1000, "wide 3x3 fp32", all);
    all.layout = "nhwc";
    checkAgainstCpu(*cudnn, net, seed + 1001, "wide 3x3 fp32 nhwc", all);
    Check tf32;
    tf32.math = MathMode::TF32;
    tf32.allPinned = true;
    checkAgainstCpu(*cudnn, net, seed + 1002, "wide 3x3 tf32", tf32);
    // TF32 keeps FP32's 8-bit exponent: inputs near 1e6 (beyond FP16's 65504) stay finite and within TF32's rounding
    // on every algorithm. The descriptors ask for CUDNN_DEFAULT_MATH, as PyTorch's allow_tf32, not
    // ..._ALLOW_CONVERSION, which lets cuDNN round FP32 data to FP16.
    tf32.inputScale = 1e6;
    checkAgainstCpu(*cudnn, net, seed + 1005, "wide 3x3 tf32 on inputs near 1e6", tf32);
    tf32.layout = "nhwc";
    checkAgainstCpu(*cudnn, net, seed + 1006, "wide 3x3 tf32 nhwc on inputs near 1e6", tf32);
    // The bias is fused into implicit_precomp_gemm by default (every case above); the separate pass too.
    Check separate;
    separate.algorithms = { "auto", "implicit_precomp_gemm" };
    separate.extra["fuse_bias"] = "0";
    checkAgainstCpu(*cudnn, net, seed + 1003, "wide 3x3 separate bias", separate);
    separate.layout = "nhwc";
    checkAgainstCpu(*cudnn, net, seed + 1004, "wide 3x3 separate bias nhwc", separate);
}

TEST_CASE("cudnn: an unsupported pinned algorithm reports cuDNN's reason", "[gpu][cudnn][conv2d]")
{
    auto cudnn = cudnnOrSkip();
    if (!cudnn)
        return;
    // Fused Winograd is 3x3 stride 1 only; FFT needs stride 1.
    Conv2d c { 8, { 5, 5 }, { 2, 2 }, Padding2d::symmetric(2, 2) };
    Network net = oneLayer(Shape::nchw(1, 4, 20, 20), c);
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, 3);
    for (const char* algorithm : { "winograd", "fft" }) {
        const Support s = cudnn->supports(algorithm, net.layers[0].spec, shapes.layers[0]);
        INFO(algorithm << ": " << s.reason);
        CHECK_FALSE(s.supported);
        CHECK(s.reason.find("CUDNN_STATUS") != std::string::npos);
        CHECK(s.reason.find(std::string("cudnn.") + algorithm) != std::string::npos);
        auto session = cudnn->createSession(algorithm, {});
        try {
            session->prepare(net, shapes);
            FAIL("prepare accepted an unsupported pinned algorithm");
        } catch (const UnsupportedError& e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find("CUDNN_STATUS") != std::string::npos);
            CHECK(std::string(e.what()).find("unsupported") != std::string::npos);
        }
    }
    CHECK_THROWS_AS(cudnn->createSession("tiled", {}), UnsupportedError);
}

// Which library call runs each kind the cross-backend test checks for values: cuDNN where it has the operation
// (legacy API, or the graph API for leaky ReLU), our CUDA kernel where it has none, and the layer note says which,
// so the cudnn row never goes missing for one layer kind.
TEST_CASE("cudnn: every new kind runs, and its layer note names what ran", "[gpu][cudnn][elementwise]")
{
    auto cudnn = cudnnOrSkip();
    if (!cudnn)
        return;
    const uint64_t seed = freshSeed();
    auto layerOf = [](std::string name, LayerSpec spec, std::vector<std::string> inputs) {
        Layer l;
        l.name = std::move(name);
        l.spec = std::move(spec);
        l.inputs = std::move(inputs);
        return l;
    };
    // {layer, what its note must contain (one of two: leaky ReLU is the graph API's or, without an engine, ours)}
    const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
        { "leaky", { "graph API pointwise", "our CUDA kernel" } },
        { "hswish", { "our CUDA kernel" } },
        { "hsig", { "our CUDA kernel" } },
        { "relu6", { "clipped ReLU" } },
        { "silu", { "swish" } },
        { "sum", { "cudnnOpTensor (add)" } },
        { "gated", { "gate broadcast" } },
        { "cat", { "our CUDA kernel" } },
        { "pad", { "our CUDA kernel" } },
        { "htanh", { "our CUDA kernel" } },
        { "prelu", { "our CUDA kernel" } },
    };
    for (const Shape& in : { Shape::nchw(2, 3, 5, 7), Shape::nchw(3, 16, 32, 32) }) {
        Network net = oneLayer(in, Identity {});
        net.layers = {
            layerOf("leaky", LeakyReLU { 0.2 }, {}),
            layerOf("hswish", Hardswish {}, { "input" }),
            layerOf("hsig", Hardsigmoid {}, { "input" }),
            layerOf("relu6", ReLU6 {}, { "input" }),
            layerOf("silu", SiLU {}, { "input" }),
            layerOf("sum", Add {}, { "leaky", "hswish", "relu6" }),
            layerOf("g", GlobalAvgPool2d {}, { "input" }),
            layerOf("gated", Mul {}, { "sum", "g" }), // the [N, C, 1, 1] gate broadcast
            layerOf("cat", Concat {}, { "gated", "silu" }),
            layerOf("pad", Pad { { 1, 0, 2, 1 }, Pad::Mode::Reflect, 0 }, {}),
            layerOf("htanh", Hardtanh { -0.5, 1.5 }, { "input" }),
            layerOf("prelu", PReLU { in.c }, { "input" }),
        };
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        for (size_t i = 0; i < net.layers.size(); ++i)
            CHECK(cudnn->supports("auto", net.layers[i].spec, shapes.layers[i]).supported);
        checkAgainstCpu(*cudnn, net, seed, "new kinds " + in.str());
        randomParameters(net, shapes, seed); // prelu's slopes: a session is given materialised parameters
        auto session = cudnn->createSession("auto", {});
        session->prepare(net, shapes);
        for (const auto& [name, notes] : expected) {
            const auto it
                = std::find_if(net.layers.begin(), net.layers.end(), [&](const Layer& l) { return l.name == name; });
            REQUIRE(it != net.layers.end());
            const std::string note = session->layerNote(size_t(it - net.layers.begin()));
            INFO(name << ": " << note);
            CHECK(std::any_of(
                notes.begin(), notes.end(), [&](const std::string& n) { return note.find(n) != std::string::npos; }));
        }
    }
}

TEST_CASE(
    "cudnn linear (FP32 and TF32) and a LeNet chain on every pinned algorithm vs cpu.direct", "[gpu][cudnn][linear]")
{
    auto cudnn = cudnnOrSkip();
    if (!cudnn)
        return;
    const uint64_t seed = freshSeed();
    int i = 0;
    for (int64_t rows : { 1, 3, 9, 70 })
        for (int64_t in : { 1, 37, 1024 }) {
            const Network net = oneLayer(Shape::features(rows, in), Linear { int64_t(10 + 13 * (i % 7)), i % 3 != 0 });
            checkAgainstCpu(*cudnn, net, seed + i, "linear rows " + std::to_string(rows) + " in " + std::to_string(in));
            Check tf32;
            tf32.math = MathMode::TF32;
            checkAgainstCpu(*cudnn, net, seed + i, "tf32 linear", tf32);
            ++i;
        }

    // LeNet-like chain: conv → relu → pool → flatten (a view) → linear → softmax.
    Network net = oneLayer(Shape::nchw(2, 1, 28, 28), Conv2d { 6, { 5, 5 }, { 1, 1 }, Padding2d::symmetric(2, 2) });
    for (LayerSpec l : { LayerSpec { ReLU {} }, LayerSpec { MaxPool2d {} }, LayerSpec { Flatten {} },
             LayerSpec { Linear { 84 } }, LayerSpec { Softmax {} } })
        net.layers.push_back(
            Layer { "l" + std::to_string(net.layers.size()), l, {}, {}, {}, nullptr, nullptr, nullptr, nullptr });
    Check all;
    all.allPinned = true;
    checkAgainstCpu(*cudnn, net, seed + 200, "lenet-like chain", all);
}

TEST_CASE("cudnn algorithm explorer lists every algorithm with status, time and workspace", "[gpu][cudnn][explore]")
{
    auto cudnn = cudnnOrSkip();
    if (!cudnn)
        return;
    Network net = oneLayer(Shape::nchw(2, 16, 32, 32), Conv2d { 32, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) });
    net.layers.push_back(Layer { "relu", ReLU {}, {}, {}, {}, nullptr, nullptr, nullptr, nullptr });
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, 5);
    const std::string json = cudnn->explore(net, shapes, 0, {});
    INFO(json);
    for (const std::string& a : kPinned)
        CHECK(json.find("\"algorithm\":\"" + a + "\"") != std::string::npos);
    CHECK(json.find("\"status\":\"ok\"") != std::string::npos);
    CHECK(json.find("\"time_ms\"") != std::string::npos);
    CHECK(json.find("\"workspace_bytes\"") != std::string::npos);
    CHECK(json.find("\"auto_choice\":\"\"") == std::string::npos);
    CHECK(cudnn->explore(net, shapes, 1, {}).empty()); // not a convolution

    // Strided 5x5: fused Winograd must be listed as unsupported with cuDNN's reason.
    Network strided = oneLayer(Shape::nchw(1, 4, 20, 20), Conv2d { 8, { 5, 5 }, { 2, 2 }, Padding2d::symmetric(2, 2) });
    const ShapeReport ss = inferShapes(strided);
    randomParameters(strided, ss, 6);
    const std::string j2 = cudnn->explore(strided, ss, 0, {});
    INFO(j2);
    CHECK(j2.find("\"status\":\"unsupported\"") != std::string::npos);
    CHECK(j2.find("CUDNN_STATUS") != std::string::npos);
}
