// The onednn backend, what is oneDNN's own: metadata, what oneDNN cannot express refused by supports() with a reason
// (output_padding past stride + padding, the hanging ceil_mode window counting padding, divisor_override, pad), and
// the multi-input primitives; against cpu.direct with the cpu tests' bound (relative L2 ≤ 1e-5). Every kind on random
// shapes (padding, "same", dilation, groups, output_padding, ceil_mode, both average modes) is the cross-backend test,
// tests/backends. Outputs are compared after a second pass over the same buffers. What oneDNN cannot express must be
// refused by supports() with a reason. Without the module (libdnnl not installed) every case prints "SKIPPED:
// <reason>".
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

namespace {

uint64_t freshSeed() { return Catch::rngSeed() ? Catch::rngSeed() : std::random_device {}(); }

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

// Every pool against cpu.direct on random shapes is the cross-backend test (tests/backends); here what oneDNN refuses.
TEST_CASE("onednn: the pools and transposed convolutions oneDNN cannot express are refused with the reason",
    "[onednn][pool][conv_transpose2d]")
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return;
    const uint64_t seed = freshSeed();
    // output_padding ≥ stride + bottom/right padding (only possible with dilation > stride): no oneDNN equivalent.
    ConvTranspose2d t;
    t.out_channels = 2;
    t.kernel_size = { 3, 3 };
    t.dilation = { 3, 3 };
    t.output_padding = { 2, 0 };
    const LayerShape ts = inferLayer(t, Shape::nchw(1, 2, 5, 5));
    REQUIRE(ts.ok);
    const Support refused = onednn->supports("auto", t, ts);
    INFO(refused.reason);
    CHECK_FALSE(refused.supported);
    CHECK(refused.reason.rfind("onednn", 0) == 0);
    t.output_padding = { 0, 0 };
    CHECK(checkAgainstCpu(*onednn, oneLayer(Shape::nchw(1, 2, 5, 5), t), seed + 3, "dilation 3, no output_padding"));

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
