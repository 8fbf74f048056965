// The onednn backend against cpu.direct: randomized sweeps of the layers whose PyTorch semantics this backend
// translates into oneDNN's own terms (asymmetric and "same" padding as left/right padding, dilation − 1, groups as
// 5-D weights, output_padding as negative right padding, ceil_mode and both average-pool modes), and what oneDNN
// refuses; every kind once is tests/backends/cross_backend_test.cpp, FP32 with the cpu tests' bound (relative L2 ≤
// 1e-5). Outputs are compared after a second pass over the same buffers. What oneDNN cannot express must be refused by
// supports() with a reason. Without the module (libdnnl not installed) every case prints "SKIPPED: <reason>".
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <random>

using namespace convscope;
using convscope::test::oneLayer;
using convscope::test::randomParameters;
using convscope::test::Rng;

namespace {

uint64_t freshSeed() { return Catch::rngSeed() ? Catch::rngSeed() : std::random_device {}(); }

Padding2d randomPadding(Rng& r, int64_t maxTop, int64_t maxLeft)
{
    return { Padding2d::Mode::Explicit, r(0, maxTop), r(0, maxTop), r(0, maxLeft), r(0, maxLeft) };
}

// Runs `net` on cpu.direct and onednn.auto and compares every layer. Returns false (and checks nothing) when
// supports() refuses a layer, after checking the refusal carries a reason.
bool checkAgainstCpu(Backend& onednn, Network net, uint64_t seed, const std::string& what)
{
    const ShapeReport shapes = inferShapes(net);
    INFO(what << "  " << shapes.firstError());
    REQUIRE(shapes.ok());
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Support s = onednn.supports("auto", net.layers[i].spec, shapes.layers[i]);
        if (!s.supported) {
            std::cout << what << ": layer " << i << " refused: " << s.reason << "\n";
            CHECK(s.reason.rfind("onednn", 0) == 0);
            return false;
        }
    }
    randomParameters(net, shapes, seed);
    const Tensor input = test::randomTensor(shapes.input, seed * 977 + 5);
    auto ref = BackendRegistry::instance().find("cpu")->createSession("direct", {});
    ref->prepare(net, shapes);
    ref->runPass(input);
    auto session = onednn.createSession("auto", {});
    session->prepare(net, shapes);
    session->runPass(input);
    const PassTiming t = session->runPass(input); // a second pass reuses every buffer
    CHECK(t.layerMs.size() == net.layers.size());
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Tensor expected = ref->fetchOutput(i, nullptr);
        double ms = -1;
        const Tensor out = session->fetchOutput(i, &ms);
        const ErrorMetrics m = compare(out, expected);
        INFO(what << " layer " << i << " (" << layerTypeName(net.layers[i].spec) << ") " << shapes.layers[i].in.str()
                  << " -> " << shapes.layers[i].out.str() << ": relL2 " << m.relL2 << " maxAbs " << m.maxAbs << " "
                  << m.note << " | " << session->layerNote(i));
        CHECK(out.shape() == expected.shape());
        CHECK(m.valid);
        CHECK(m.relL2 <= 1e-5);
        CHECK(ms >= 0);
    }
    return true;
}

} // namespace

TEST_CASE("onednn: name, algorithm, metadata with version, ISA and threads", "[onednn]")
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return;
    CHECK(onednn->name() == "onednn");
    REQUIRE(onednn->algorithms().size() == 1);
    CHECK(onednn->algorithms()[0].name == "auto");
    CHECK_FALSE(onednn->supports("direct", ReLU {}, inferLayer(ReLU {}, Shape::nchw(1, 1, 2, 2))).supported);
    auto session = onednn->createSession("auto", {});
    const auto meta = session->metadata();
    CHECK(meta.count("onednn"));
    CHECK(meta.count("isa"));
    CHECK(meta.at("threads") == onednn->info().at("threads"));
    CHECK_THROWS_AS(session->runPass(Tensor(Shape::nchw(1, 1, 2, 2))), Error);
}

TEST_CASE("onednn conv2d: random sweep vs cpu.direct", "[onednn][conv2d]")
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int done = 0;
    for (int attempt = 0; attempt < 400 && done < 40; ++attempt) {
        Conv2d c;
        const int64_t groups = r.coin() ? 1 : r(1, 4);
        const int64_t cin = groups * r(1, 5);
        c.groups = groups;
        c.out_channels = groups * r(1, 6);
        c.kernel_size = { r(1, 5), r(1, 5) };
        c.stride = { r(1, 3), r(1, 3) };
        c.dilation = { r(1, 2), r(1, 2) };
        c.padding = r(0, 5) == 0 ? Padding2d { Padding2d::Mode::Same } : randomPadding(r, 3, 3);
        c.bias = r(0, 3) != 0;
        Network net = oneLayer(Shape::nchw(r(1, 3), cin, r(3, 23), r(3, 23)), c);
        if (!inferShapes(net).ok())
            continue;
        INFO("seed " << seed);
        CHECK(checkAgainstCpu(*onednn, net, seed + attempt, "conv2d case " + std::to_string(attempt)));
        ++done;
    }
    CHECK(done >= 30);
    // Depthwise and a wider layer that takes oneDNN's blocked (jit) path.
    Conv2d dw { 16, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) };
    dw.groups = 16;
    CHECK(checkAgainstCpu(*onednn, oneLayer(Shape::nchw(2, 16, 17, 13), dw), seed, "depthwise"));
    CHECK(checkAgainstCpu(*onednn,
        oneLayer(Shape::nchw(2, 32, 20, 20), Conv2d { 48, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) }), seed,
        "32→48"));
}

TEST_CASE("onednn conv_transpose2d: random sweep with output_padding vs cpu.direct", "[onednn][conv_transpose2d]")
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int done = 0;
    for (int attempt = 0; attempt < 400 && done < 30; ++attempt) {
        ConvTranspose2d c;
        const int64_t groups = r.coin() ? 1 : r(1, 3);
        c.groups = groups;
        c.out_channels = groups * r(1, 4);
        c.kernel_size = { r(1, 4), r(1, 4) };
        c.stride = { r(1, 3), r(1, 3) };
        c.dilation = { r(1, 3), r(1, 3) };
        c.padding = randomPadding(r, 2, 2);
        c.output_padding
            = { r(0, std::max(c.stride[0], c.dilation[0]) - 1), r(0, std::max(c.stride[1], c.dilation[1]) - 1) };
        c.bias = r.coin();
        Network net = oneLayer(Shape::nchw(r(1, 3), groups * r(1, 4), r(2, 13), r(2, 13)), c);
        const ShapeReport shapes = inferShapes(net);
        if (!shapes.ok())
            continue;
        INFO("seed " << seed);
        // oneDNN cannot express output_padding ≥ stride + bottom/right padding (only possible with dilation > stride).
        const Padding2d& p = shapes.layers[0].resolvedPadding; // (a reference into a temporary before: ASan found it)
        const bool mayRefuse
            = c.output_padding[0] >= c.stride[0] + p.bottom || c.output_padding[1] >= c.stride[1] + p.right;
        if (!checkAgainstCpu(*onednn, net, seed + attempt, "conv_transpose2d case " + std::to_string(attempt)))
            CHECK(mayRefuse);
        else
            ++done;
    }
    CHECK(done >= 20);
}

TEST_CASE("onednn pooling: random sweep vs cpu.direct (ceil_mode, dilation, both average modes)", "[onednn][pool]")
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int done = 0, refused = 0;
    for (int attempt = 0; attempt < 600 && done < 80; ++attempt) {
        const Shape in = Shape::nchw(r(1, 3), r(1, 5), r(2, 19), r(2, 19));
        const Pair k { r(1, 4), r(1, 4) };
        const Pair s { r(1, 3), r(1, 3) };
        const Padding2d pad = r(0, 4) == 0 ? Padding2d { Padding2d::Mode::Same } : randomPadding(r, k[0] / 2, k[1] / 2);
        LayerSpec spec;
        bool mayRefuse = false;
        if (attempt % 2 == 0) {
            MaxPool2d m;
            m.kernel_size = k;
            m.stride = s;
            m.padding = pad;
            m.dilation = { r(1, 2), r(1, 2) };
            m.ceil_mode = r.coin();
            spec = m;
        } else {
            AvgPool2d a;
            a.kernel_size = k;
            a.stride = s;
            a.padding = pad;
            a.ceil_mode = r.coin();
            a.count_include_pad = r.coin();
            mayRefuse = a.ceil_mode && a.count_include_pad;
            spec = a;
        }
        Network net = oneLayer(in, spec);
        if (!inferShapes(net).ok())
            continue;
        INFO("seed " << seed);
        const bool ran
            = checkAgainstCpu(*onednn, net, seed + attempt, layerTypeName(spec) + " case " + std::to_string(attempt));
        if (!ran) {
            CHECK(mayRefuse);
            ++refused;
        }
        ++done;
    }
    CHECK(done >= 40);
    CHECK(refused < done / 4);
    CHECK(
        checkAgainstCpu(*onednn, oneLayer(Shape::nchw(3, 5, 7, 9), GlobalAvgPool2d {}), seed, "global_avgpool2d odd"));
    CHECK(checkAgainstCpu(
        *onednn, oneLayer(Shape::nchw(2, 3, 64, 48), GlobalAvgPool2d {}), seed + 1, "global_avgpool2d"));

    // The ceil_mode window past the padding with count_include_pad, and divisor_override: refused with the reason.
    AvgPool2d hanging;
    hanging.kernel_size = { 3, 3 };
    hanging.stride = Pair { 2, 2 };
    hanging.ceil_mode = true;
    AvgPool2d over;
    over.divisor_override = 3;
    for (const LayerSpec& spec : { LayerSpec { hanging }, LayerSpec { over } }) {
        const LayerShape s = inferLayer(spec, Shape::nchw(1, 2, 8, 8));
        REQUIRE(s.ok);
        const Support sup = onednn->supports("auto", spec, s);
        INFO(sup.reason);
        CHECK_FALSE(sup.supported);
        CHECK(sup.reason.rfind("onednn: ", 0) == 0);
    }
    // The same ceil_mode window without count_include_pad runs (only real pixels count in both).
    hanging.count_include_pad = false;
    CHECK(checkAgainstCpu(*onednn, oneLayer(Shape::nchw(1, 2, 8, 8), hanging), seed + 2, "ceil exclude"));
}

// Every layer kind against cpu.direct is tests/backends/cross_backend_test.cpp; here what is oneDNN's own: the kinds
// it has no primitive for are refused with a reason, the multi-input primitives name their implementation, and a
// broadcast gate given first still runs (oneDNN broadcasts only its second source).
TEST_CASE("onednn: pad is refused with a reason; add, mul and concat run on oneDNN's primitives", "[onednn]")
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return;
    const Support pad
        = onednn->supports("auto", Pad { { 1, 1, 1, 1 } }, inferLayer(Pad { { 1, 1, 1, 1 } }, Shape::nchw(1, 2, 4, 4)));
    CHECK_FALSE(pad.supported);
    CHECK_THAT(pad.reason, Catch::Contains("no oneDNN primitive"));
    const Shape x = Shape::nchw(2, 3, 5, 4), gate = Shape::nchw(2, 3, 1, 1);
    CHECK(onednn->supports("auto", Add {}, inferLayer(Add {}, std::vector<Shape> { x, x, x })).supported);
    CHECK(onednn->supports("auto", Mul {}, inferLayer(Mul {}, std::vector<Shape> { gate, x })).supported);
    CHECK(onednn->supports("auto", Concat {}, inferLayer(Concat {}, std::vector<Shape> { x, x })).supported);

    Network net;
    net.input = { 2, 3, 5, 4, false, "random:3" };
    for (auto [name, spec, inputs] :
        { std::tuple { "g", LayerSpec { GlobalAvgPool2d {} }, std::vector<std::string> {} },
            std::tuple { "m", LayerSpec { Mul {} }, std::vector<std::string> { "g", "input" } },
            std::tuple { "s", LayerSpec { Add {} }, std::vector<std::string> { "m", "input", "m" } },
            std::tuple { "c", LayerSpec { Concat {} }, std::vector<std::string> { "s", "input" } } }) {
        Layer l;
        l.name = name;
        l.spec = spec;
        l.inputs = inputs;
        net.layers.push_back(l);
    }
    CHECK(checkAgainstCpu(*onednn, net, freshSeed(), "gate first, three-input sum, concat"));
    auto session = onednn->createSession("auto", {});
    session->prepare(net, inferShapes(net));
    for (size_t i = 1; i < net.layers.size(); ++i)
        CHECK_FALSE(session->layerNote(i).empty()); // oneDNN's implementation name
}
