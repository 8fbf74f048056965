// The cpu backend: what it says about itself, sessions that run a whole network (im2col_gemm checked
// against direct layer by layer), timing and metadata, and the errors a person gets for a misuse.
#include "compute/backend_registry.h"
#include "compute/cpu/cpu_backend.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "tests/compute/cpu_test_helpers.h"

#include <cmath>

using namespace convscope;
using namespace convscope::test;

namespace {

Layer layer(const std::string& name, LayerSpec spec)
{
    Layer l;
    l.name = name;
    l.spec = std::move(spec);
    return l;
}

// conv → batchnorm → relu → maxpool → conv_transpose → avgpool → leaky_relu → flatten → linear → softmax,
// with random parameters sized from shape inference.
Network mixedNetwork()
{
    Network net;
    net.name = "mixed";
    net.input = InputSpec { 2, 3, 12, 10, false, "random" };
    Conv2d c1;
    c1.out_channels = 8;
    c1.kernel_size = { 3, 3 };
    c1.padding = { Padding2d::Mode::Explicit, 1, 0, 2, 1 };
    net.layers.push_back(layer("c1", c1));
    net.layers.push_back(layer("bn1", BatchNorm2d {}));
    net.layers.push_back(layer("relu1", ReLU {}));
    MaxPool2d pool;
    pool.kernel_size = { 2, 2 };
    pool.ceil_mode = true;
    net.layers.push_back(layer("pool1", pool));
    ConvTranspose2d up;
    up.out_channels = 4;
    up.kernel_size = { 3, 3 };
    up.stride = { 2, 2 };
    up.padding = Padding2d::symmetric(1, 1);
    up.output_padding = { 1, 0 };
    up.groups = 2;
    net.layers.push_back(layer("up", up));
    AvgPool2d avg;
    avg.kernel_size = { 3, 3 };
    avg.stride = Pair { 2, 2 };
    avg.padding = Padding2d::symmetric(1, 1);
    avg.count_include_pad = false;
    net.layers.push_back(layer("avg", avg));
    net.layers.push_back(layer("leaky", LeakyReLU { 0.1 }));
    net.layers.push_back(layer("flatten", Flatten {}));
    Linear fc;
    fc.out_features = 10;
    net.layers.push_back(layer("fc", fc));
    net.layers.push_back(layer("softmax", Softmax {}));

    const ShapeReport shapes = inferShapes(net);
    INFO(shapes.firstError());
    REQUIRE(shapes.ok());
    uint64_t seed = 10;
    auto vec = [&](int64_t c) { return shared(randomTensor(Shape::nchw(c, 1, 1, 1), seed++)); };
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Layer& l = net.layers[i];
        const Shape& in = shapes.layers[i].in;
        if (const auto* c = std::get_if<Conv2d>(&l.spec)) {
            l.weight = shared(randomTensor(
                Shape::nchw(c->out_channels, in.c / c->groups, c->kernel_size[0], c->kernel_size[1]), seed++));
            l.bias = vec(c->out_channels);
        } else if (const auto* t = std::get_if<ConvTranspose2d>(&l.spec)) {
            l.weight = shared(randomTensor(
                Shape::nchw(in.c, t->out_channels / t->groups, t->kernel_size[0], t->kernel_size[1]), seed++));
            l.bias = vec(t->out_channels);
        } else if (std::holds_alternative<BatchNorm2d>(l.spec)) {
            Tensor var = randomTensor(Shape::nchw(in.c, 1, 1, 1), seed++);
            for (int64_t k = 0; k < var.numel(); ++k)
                var.data()[k] = std::fabs(var.data()[k]) + 0.5f;
            l.runningVar = shared(std::move(var));
            l.runningMean = vec(in.c);
            l.weight = vec(in.c);
            l.bias = vec(in.c);
        } else if (const auto* f = std::get_if<Linear>(&l.spec)) {
            l.weight = shared(randomTensor(Shape::nchw(f->out_features, in.c, 1, 1), seed++));
            l.bias = vec(f->out_features);
        }
    }
    return net;
}

} // namespace

TEST_CASE("cpu backend: name, algorithms, availability and support", "[cpu][backend]")
{
    const auto backend = makeCpuBackend();
    REQUIRE(backend->name() == "cpu");
    const auto algorithms = backend->algorithms();
    REQUIRE(algorithms.size() == 3);
    CHECK(algorithms[0].name == "direct");
    CHECK(algorithms[1].name == "im2col_gemm");
    CHECK(algorithms[2].name == "tap_gemm");
    CHECK(backend->availability().available);
    for (const char* type : layerTypeNames()) {
        INFO(type);
        const LayerSpec spec = makeLayerSpec(type);
        CHECK(backend->supports("direct", spec, {}).supported);
        CHECK(backend->supports("im2col_gemm", spec, {}).supported);
        CHECK(backend->supports("tap_gemm", spec, {}).supported);
    }
    const Support unknown = backend->supports("winograd", Conv2d {}, {});
    CHECK_FALSE(unknown.supported);
    CHECK_THAT(unknown.reason, Catch::Contains("winograd"));
    REQUIRE_THROWS_AS(backend->createSession("winograd", {}), UnsupportedError);
    CHECK(backend->info().count("openblas") == 1);
}

TEST_CASE("cpu backend: the registry resolves both cpu selections", "[cpu][backend]")
{
    auto& registry = BackendRegistry::instance();
    REQUIRE(registry.find("cpu") != nullptr);
    CHECK(registry.resolve(Selection::parse("cpu.direct"))->name() == "cpu");
    CHECK(registry.resolve(Selection::parse("cpu.im2col_gemm"))->name() == "cpu");
}

// Every kind on every cpu algorithm against cpu.direct is tests/backends/cross_backend_test.cpp; here the cpu
// session's own wiring: layer 0 equals the op with the resolved padding, the notes name the fast path, a pass fills
// every output and times it.
TEST_CASE("cpu backend: a session wires layers with the resolved padding and notes its fast path", "[cpu][backend]")
{
    const Network net = mixedNetwork();
    const ShapeReport shapes = inferShapes(net);
    auto direct = makeCpuBackend()->createSession("direct", {});
    auto fast = makeCpuBackend()->createSession("im2col_gemm", {});
    direct->prepare(net, shapes);
    fast->prepare(net, shapes);
    const Tensor input = randomTensor(shapes.input, 99);
    direct->runPass(input);
    const PassTiming t = fast->runPass(input);
    REQUIRE(t.layerMs.size() == net.layers.size());
    CHECK(t.h2dMs == 0);
    CHECK(t.d2hMs == 0);
    for (double ms : t.layerMs)
        CHECK(ms >= 0);
    const LayerShape s0 = shapes.layers[0];
    Tensor conv(s0.out);
    cpu::direct::conv2d(input, *net.layers[0].weight, net.layers[0].bias.get(), std::get<Conv2d>(net.layers[0].spec),
        s0.resolvedPadding, conv);
    requireClose(direct->fetchOutput(0, nullptr), conv, 0.0);
    CHECK_THAT(fast->layerNote(0), Catch::Contains("im2col"));
    CHECK_THAT(fast->layerNote(4), Catch::Contains("col2im"));
    CHECK(direct->layerNote(0).empty());
}

TEST_CASE("cpu backend: flatten keeps the data, and a second pass reuses the buffers", "[cpu][backend]")
{
    Network net;
    net.input = InputSpec { 2, 3, 2, 2, false, "random" };
    net.layers.push_back(layer("flatten", Flatten {}));
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    auto session = makeCpuBackend()->createSession("im2col_gemm", {});
    session->prepare(net, shapes);
    for (uint64_t seed : { 1, 2 }) {
        const Tensor input = randomTensor(shapes.input, seed);
        session->runPass(input);
        const Tensor out = session->fetchOutput(0, nullptr);
        REQUIRE(out.shape() == Shape::features(2, 12));
        for (int64_t i = 0; i < input.numel(); ++i)
            REQUIRE(out.data()[i] == input.data()[i]);
    }
}

TEST_CASE("cpu backend: metadata records threads, OpenBLAS and the math mode", "[cpu][backend]")
{
    const auto backend = makeCpuBackend();
    const auto fp32 = backend->createSession("im2col_gemm", {})->metadata();
    CHECK(fp32.at("math") == "fp32");
    CHECK(std::stoi(fp32.at("threads")) >= 1);
    CHECK_FALSE(fp32.at("openblas").empty());
    SessionOptions tf32;
    tf32.math = MathMode::TF32;
    CHECK(backend->createSession("direct", tf32)->metadata().at("math") == "fp32 (the CPU has no TF32)");
}

TEST_CASE("cpu backend: misuse is reported with an error, never a crash", "[cpu][backend]")
{
    const auto backend = makeCpuBackend();
    Network net = mixedNetwork();
    const ShapeReport shapes = inferShapes(net);
    auto session = backend->createSession("direct", {});

    REQUIRE_THROWS_AS(session->runPass(randomTensor(shapes.input, 1)), Error);
    session->prepare(net, shapes);
    REQUIRE_THROWS_AS(session->fetchOutput(0, nullptr), Error); // no pass has run yet
    REQUIRE_THROWS_AS(session->runPass(randomTensor(Shape::nchw(2, 3, 12, 11), 1)), InputError);
    session->runPass(randomTensor(shapes.input, 1));
    REQUIRE_THROWS_AS(session->fetchOutput(net.layers.size(), nullptr), Error);

    net.layers[0].weight.reset();
    REQUIRE_THROWS_WITH(session->prepare(net, shapes), Catch::Contains("c1") && Catch::Contains("weight"));

    SessionOptions tiny;
    tiny.memoryBudgetBytes = 1024;
    REQUIRE_THROWS_AS(backend->createSession("im2col_gemm", tiny)->prepare(mixedNetwork(), shapes), OutOfMemoryError);
}
