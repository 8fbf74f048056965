// The cuda backend against cpu.direct: every algorithm of every op on a randomized sweep of shapes
// (asymmetric padding, stride, dilation, groups, odd and non-square sizes, batch > 1), fresh random inputs and
// weights each case, device outputs poisoned with NaN before each pass (SessionOptions extra
// "poison_outputs"), relative L2 error ≤ 1e-5. On a machine without a usable GPU every case prints
// "SKIPPED: <reason>" and CTest reports it skipped.
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

std::shared_ptr<Backend> cudaOrSkip() { return test::backendOrSkip("cuda"); }

// Runs `net` on cpu.direct and on every cuda algorithm (with `extra` session options); compares every layer's output.
void checkAgainstCpu(Backend& cuda, Network net, uint64_t seed, const std::string& what,
    const std::map<std::string, std::string>& extra = {})
{
    const ShapeReport shapes = inferShapes(net);
    INFO(what << "  " << shapes.firstError());
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, seed);
    const Tensor input = test::randomTensor(shapes.input, seed * 977 + 5);

    auto cpu = BackendRegistry::instance().find("cpu");
    REQUIRE(cpu);
    auto ref = cpu->createSession("direct", {});
    ref->prepare(net, shapes);
    ref->runPass(input);
    std::vector<Tensor> expected;
    for (size_t i = 0; i < net.layers.size(); ++i)
        expected.push_back(ref->fetchOutput(i, nullptr));

    for (const std::string algorithm : { "direct", "tiled", "implicit_gemm", "winograd", "fft" }) {
        bool supported = true;
        for (size_t i = 0; i < net.layers.size(); ++i) {
            const Support s = cuda.supports(algorithm, net.layers[i].spec, shapes.layers[i]);
            if (!s.supported) {
                INFO(s.reason);
                supported = false;
                // Only the tiled kernel may refuse (huge halos), and fft a stride other than 1; everything in this
                // sweep is otherwise supported.
                CHECK((algorithm == "tiled" || (algorithm == "fft" && s.reason.find("stride") != std::string::npos)));
            }
        }
        if (!supported)
            continue;
        SessionOptions options;
        options.extra = extra;
        options.extra["poison_outputs"] = "1";
        auto session = cuda.createSession(algorithm, options);
        session->prepare(net, shapes);
        const PassTiming t = session->runPass(input);
        CHECK(t.layerMs.size() == net.layers.size());
        for (size_t i = 0; i < net.layers.size(); ++i) {
            double ms = -1;
            const Tensor out = session->fetchOutput(i, &ms);
            const ErrorMetrics m = compare(out, expected[i]);
            INFO("cuda." << algorithm << " layer " << i << " (" << layerTypeName(net.layers[i].spec) << ") "
                         << shapes.layers[i].in.str() << " -> " << shapes.layers[i].out.str() << ": relL2 "
                         << m.relL2 << " maxAbs " << m.maxAbs << " " << m.note << " | " << session->layerNote(i));
            CHECK(m.valid);
            CHECK(m.relL2 <= 1e-5);
            CHECK(ms >= 0);
        }
    }
}

uint64_t freshSeed()
{
    // Fresh data every run; the seed is printed so a failure can be replayed with --rng-seed.
    const uint64_t seed = Catch::rngSeed() ? Catch::rngSeed() : std::random_device {}();
    std::cout << "seed " << seed << " (replay with --rng-seed " << seed << ")" << std::endl;
    return seed;
}

Padding2d randomPadding(Rng& r, int64_t maxTop, int64_t maxLeft)
{
    return { Padding2d::Mode::Explicit, r(0, maxTop), r(0, maxTop), r(0, maxLeft), r(0, maxLeft) };
}

// The note a cuda session gives its only layer (which kernel ran), so a test can tell a fast path was taken.
std::string layerNoteOf(Backend& cuda, Network net, const std::string& algorithm,
    const std::map<std::string, std::string>& extra = {})
{
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, 1);
    SessionOptions options;
    options.extra = extra;
    auto session = cuda.createSession(algorithm, options);
    session->prepare(net, shapes);
    return session->layerNote(0);
}

} // namespace

TEST_CASE("cuda conv2d: random sweep, every algorithm vs cpu.direct", "[gpu][cuda][conv2d]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int done = 0;
    for (int attempt = 0; attempt < 400 && done < 40; ++attempt) {
        Conv2d c;
        const int64_t groups = r.coin() ? 1 : r(1, 4);
        const int64_t cin = groups * r(1, 5), n = r(1, 3);
        c.groups = groups;
        c.out_channels = groups * r(1, 6);
        c.kernel_size = { r(1, 5), r(1, 5) };
        c.stride = { r(1, 3), r(1, 3) };
        c.dilation = { r(1, 2), r(1, 2) };
        c.padding = r(0, 5) == 0 ? Padding2d { Padding2d::Mode::Same } : randomPadding(r, 3, 3);
        c.bias = r(0, 3) != 0;
        const Shape in = Shape::nchw(n, cin, r(3, 23), r(3, 23));
        Network net = oneLayer(in, c);
        if (!inferShapes(net).ok())
            continue;
        checkAgainstCpu(*cuda, net, seed + attempt, "conv2d case " + std::to_string(attempt) + " seed " + std::to_string(seed));
        ++done;
    }
    CHECK(done >= 20);
}

TEST_CASE("cuda conv2d: wide layers take the big implicit GEMM tiles", "[gpu][cuda][conv2d][wide]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    struct Case {
        int64_t n, c, h, w, k, groups, kh, stride;
        Padding2d pad;
    };
    const Case cases[] = {
        { 1, 32, 130, 131, 256, 1, 3, 1, Padding2d::symmetric(1, 1) }, // 128x128 tiles, float4 weight loads
        { 1, 3, 133, 130, 128, 1, 3, 1, { Padding2d::Mode::Explicit, 0, 2, 1, 0 } }, // 128x128, scalar weights
        { 1, 16, 131, 129, 64, 1, 3, 1, Padding2d::symmetric(1, 1) }, // 64x128 tiles
        { 2, 64, 67, 65, 256, 2, 3, 2, { Padding2d::Mode::Explicit, 1, 0, 0, 1 } }, // groups, stride 2
        { 2, 48, 33, 37, 96, 48, 3, 1, Padding2d::symmetric(1, 1) }, // depthwise-ish (2 outputs per group)
    };
    int i = 0;
    for (const Case& k : cases) {
        Conv2d c;
        c.out_channels = k.k;
        c.groups = k.groups;
        c.kernel_size = { k.kh, k.kh };
        c.stride = { k.stride, k.stride };
        c.padding = k.pad;
        checkAgainstCpu(*cuda, oneLayer(Shape::nchw(k.n, k.c, k.h, k.w), c), seed + i, "wide conv case " + std::to_string(i));
        ++i;
    }
    // Every tile shape forced (--option igemm_tile), on a 1×1 layer and on a strided, grouped 3×3 one; the batched
    // GEMMs of cuda.winograd take the override too.
    for (const char* tile : { "128x128", "64x128", "64x64", "32x64", "128x128cp", "64x128cp" }) {
        const std::map<std::string, std::string> extra { { "igemm_tile", tile } };
        Conv2d pointwise { 72, { 1, 1 } };
        const Network p1 = oneLayer(Shape::nchw(2, 96, 29, 30), pointwise);
        CHECK(layerNoteOf(*cuda, p1, "implicit_gemm", extra).find(std::string(tile) + " tiles") != std::string::npos);
        checkAgainstCpu(*cuda, p1, seed + 100, std::string("1x1 with ") + tile + " tiles", extra);
        Conv2d grouped { 48, { 3, 3 }, { 2, 1 }, Padding2d::symmetric(1, 1) };
        grouped.groups = 2;
        checkAgainstCpu(*cuda, oneLayer(Shape::nchw(2, 40, 33, 35), grouped), seed + 101,
            std::string("grouped 3x3 with ") + tile + " tiles", extra);
        // Planes of a multiple of 4 pixels: the float4 input path, with one group and with two.
        const Network p4 = oneLayer(Shape::nchw(3, 96, 28, 28), pointwise);
        CHECK(layerNoteOf(*cuda, p4, "implicit_gemm", extra).find("float4 input loads") != std::string::npos);
        checkAgainstCpu(*cuda, p4, seed + 102, std::string("1x1 float4 input with ") + tile + " tiles", extra);
        Conv2d pointwiseGrouped { 72, { 1, 1 } };
        pointwiseGrouped.groups = 2;
        checkAgainstCpu(*cuda, oneLayer(Shape::nchw(2, 94, 20, 30), pointwiseGrouped), seed + 103,
            std::string("grouped 1x1 float4 input with ") + tile + " tiles", extra);
    }
    SessionOptions bad;
    bad.extra["igemm_tile"] = "16x16";
    CHECK_THROWS_WITH(cuda->createSession("implicit_gemm", bad),
        Catch::Contains("128x128, 64x128, 64x64 and 32x64, and the pipelined 128x128cp and 64x128cp"));
}

TEST_CASE("cuda conv2d: the pipelined (cp.async) implicit GEMM tiles", "[gpu][cuda][conv2d][pipe]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    // Forced on shapes off every tile and padding of the kernel: channels a group not a multiple of 4 or of the
    // 16-channel stage (the zero-filled tail), output channels not a multiple of 4 and over one tile, asymmetric
    // padding, stride, dilation, groups, non-square kernels, batch > 1.
    struct Case {
        int64_t n, c, h, w, k, groups, kh, kw, stride, dil;
        Padding2d pad;
    };
    const Case cases[] = {
        { 3, 13, 37, 41, 70, 1, 3, 3, 2, 2, { Padding2d::Mode::Explicit, 2, 0, 1, 3 } },
        { 2, 33, 29, 31, 30, 3, 3, 3, 1, 1, Padding2d::symmetric(1, 1) },
        { 2, 50, 23, 27, 130, 1, 5, 5, 1, 1, { Padding2d::Mode::Same } },
        { 2, 8, 40, 40, 16, 8, 3, 3, 1, 1, Padding2d::symmetric(1, 1) }, // depthwise, 2 outputs per group
        { 2, 20, 17, 45, 36, 1, 1, 7, 1, 1, { Padding2d::Mode::Explicit, 0, 0, 3, 3 } },
        { 1, 64, 34, 36, 128, 1, 3, 3, 1, 1, Padding2d::symmetric(1, 1) }, // whole stages, whole tiles
    };
    for (const char* tile : { "128x128cp", "64x128cp" }) {
        const std::map<std::string, std::string> extra { { "igemm_tile", tile } };
        int i = 0;
        for (const Case& k : cases) {
            Conv2d c;
            c.out_channels = k.k;
            c.groups = k.groups;
            c.kernel_size = { k.kh, k.kw };
            c.stride = { k.stride, k.stride };
            c.dilation = { k.dil, k.dil };
            c.padding = k.pad;
            c.bias = i % 2 == 0;
            const Network net = oneLayer(Shape::nchw(k.n, k.c, k.h, k.w), c);
            const std::string note = layerNoteOf(*cuda, net, "implicit_gemm", extra);
            INFO(note);
            CHECK(note.find(std::string(tile) + " tiles") != std::string::npos);
            checkAgainstCpu(*cuda, net, seed + i, std::string("pipelined case ") + std::to_string(i) + " " + tile, extra);
            ++i;
        }
    }
    // Chosen unforced on wide layers of ≥ 32 channels a group: 128x128cp over 64 output channels, 64x128cp at 33-64.
    Conv2d wide { 100, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) };
    const Network w1 = oneLayer(Shape::nchw(1, 36, 136, 136), wide);
    CHECK(layerNoteOf(*cuda, w1, "implicit_gemm").find("128x128cp tiles") != std::string::npos);
    checkAgainstCpu(*cuda, w1, seed + 50, "128x128cp by choice");
    Conv2d mid { 48, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) };
    const Network w2 = oneLayer(Shape::nchw(1, 33, 130, 131), mid);
    CHECK(layerNoteOf(*cuda, w2, "implicit_gemm").find("64x128cp tiles") != std::string::npos);
    checkAgainstCpu(*cuda, w2, seed + 51, "64x128cp by choice");
}

TEST_CASE("cuda conv2d: Winograd F(4x4,3x3) and F(2x2,3x3) on 3x3 stride-1 layers, implicit GEMM elsewhere",
    "[gpu][cuda][conv2d][winograd]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    for (const std::string tile : { "4", "2" }) {
        const std::map<std::string, std::string> extra { { "winograd_tile", tile } };
        const std::string f = "Winograd F(" + tile + "x" + tile + ",3x3)";
        Rng r(seed + std::stoul(tile));
        int done = 0;
        // Odd and even sizes (partial edge tiles), asymmetric and "same" padding, batch > 1, channel counts off the
        // GEMM tiles and the float4 weight path; large enough that the tiny-layer kernel does not take them.
        for (int attempt = 0; attempt < 200 && done < 20; ++attempt) {
            Conv2d c;
            c.out_channels = r(1, 80);
            c.padding = r(0, 4) == 0 ? Padding2d { Padding2d::Mode::Same } : randomPadding(r, 2, 2);
            c.bias = r(0, 3) != 0;
            Network net = oneLayer(Shape::nchw(r(1, 3), r(5, 70), r(3, 40), r(3, 40)), c); // ≥ 5: not a stem
            const ShapeReport shapes = inferShapes(net);
            if (!shapes.ok() || shapes.layers[0].out.numel() <= 16384)
                continue;
            const std::string note = layerNoteOf(*cuda, net, "winograd", extra);
            INFO(note);
            CHECK(note.find(f) == 0);
            checkAgainstCpu(*cuda, net, seed + attempt, f + " case " + std::to_string(attempt), extra);
            ++done;
        }
        CHECK(done >= 12);
        // U-Net depth: a long reduction (C = 512) through the batched GEMMs, where accumulation error is largest.
        Conv2d deep { 96, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) };
        checkAgainstCpu(*cuda, oneLayer(Shape::nchw(2, 512, 19, 22), deep), seed + 1000, f + " 512->96", extra);
    }
    // The default is F(4x4,3x3); an unknown tile is refused with the ones there are.
    const Network plain = oneLayer(Shape::nchw(1, 8, 64, 64), Conv2d { 8, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) });
    CHECK(layerNoteOf(*cuda, plain, "winograd").find("Winograd F(4x4,3x3)") == 0);
    SessionOptions bad;
    bad.extra["winograd_tile"] = "6";
    CHECK_THROWS_WITH(cuda->createSession("winograd", bad), Catch::Contains("2 (F(2x2,3x3)) or 4"));
    // Layers Winograd cannot take run the implicit GEMM, and the note says why.
    Conv2d strided { 24, { 3, 3 }, { 2, 2 }, Padding2d::symmetric(1, 1) };
    const Network s2 = oneLayer(Shape::nchw(2, 16, 40, 41), strided);
    CHECK(layerNoteOf(*cuda, s2, "winograd").find("not Winograd (") == 0);
    checkAgainstCpu(*cuda, s2, seed + 1001, "winograd fallback, stride 2");
    Conv2d grouped { 24, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) };
    grouped.groups = 2;
    const Network g2 = oneLayer(Shape::nchw(2, 16, 40, 41), grouped);
    CHECK(layerNoteOf(*cuda, g2, "winograd").find("one group") != std::string::npos);
    checkAgainstCpu(*cuda, g2, seed + 1002, "winograd fallback, groups 2");
}

TEST_CASE("cuda conv2d: stems with few input channels take their own kernel", "[gpu][cuda][conv2d][stem]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int done = 0;
    // 1-4 input channels, up to 64 taps, stride and dilation up to 2, random padding, more than one block of 64
    // output channels, partial blocks; output widths a multiple of 4 (the kernel's float4 stores).
    for (int attempt = 0; attempt < 600 && done < 40; ++attempt) {
        Conv2d c;
        const int64_t cin = r(1, 4);
        c.out_channels = r(1, 140);
        c.kernel_size = { r(1, 7), r(1, 7) };
        c.stride = { r(1, 2), r(1, 2) };
        c.dilation = { r(1, 2), r(1, 2) };
        c.padding = randomPadding(r, 3, 3);
        c.bias = r(0, 3) != 0;
        if (cin * c.kernel_size[0] * c.kernel_size[1] > 64)
            continue;
        Network net = oneLayer(Shape::nchw(r(1, 3), cin, r(8, 70), r(8, 70)), c);
        const ShapeReport shapes = inferShapes(net);
        if (!shapes.ok() || shapes.layers[0].out.w % 4 != 0 || shapes.layers[0].out.numel() <= 16384)
            continue;
        for (const char* algorithm : { "implicit_gemm", "winograd" }) {
            const std::string note = layerNoteOf(*cuda, net, algorithm);
            INFO(note);
            CHECK(note.find(std::to_string(cin) + " input channels") == 0);
        }
        checkAgainstCpu(*cuda, net, seed + attempt, "stem case " + std::to_string(attempt));
        ++done;
    }
    CHECK(done >= 15);
    // The U-Net stem itself at a smaller size; and a width that is not a multiple of 4 keeps the implicit GEMM.
    Conv2d stem { 64, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) };
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(2, 3, 64, 96), stem), seed + 1000, "stem 3->64");
    // ResNet's conv1 (7×7 stride 2, 147 taps) keeps the implicit GEMM: the stem kernel measured 0.132 ms on it at
    // batch 8, 224² (H200), against the implicit GEMM's 0.110.
    const Network conv1
        = oneLayer(Shape::nchw(2, 3, 64, 64), Conv2d { 64, { 7, 7 }, { 2, 2 }, Padding2d::symmetric(3, 3) });
    CHECK(layerNoteOf(*cuda, conv1, "implicit_gemm").find("implicit GEMM") == 0);
    checkAgainstCpu(*cuda, conv1, seed + 1001, "resnet conv1");
    CHECK(layerNoteOf(*cuda, oneLayer(Shape::nchw(2, 3, 64, 98), stem), "implicit_gemm").find("implicit GEMM") == 0);
}

TEST_CASE("cuda conv_transpose2d: random sweep vs cpu.direct", "[gpu][cuda][conv_transpose2d]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int done = 0;
    for (int attempt = 0; attempt < 600 && done < 40; ++attempt) {
        ConvTranspose2d c;
        const int64_t groups = r.coin() ? 1 : r(1, 3);
        c.groups = groups;
        c.out_channels = groups * r(1, 4);
        c.kernel_size = { r(1, 4), r(1, 4) };
        c.stride = { r(1, 3), r(1, 3) };
        c.dilation = { r(1, 2), r(1, 2) };
        c.padding = randomPadding(r, 2, 2);
        c.output_padding = { r(0, c.stride[0] - 1), r(0, c.stride[1] - 1) };
        c.bias = r.coin();
        Network net = oneLayer(Shape::nchw(r(1, 3), groups * r(1, 4), r(2, 13), r(2, 13)), c);
        if (!inferShapes(net).ok())
            continue;
        checkAgainstCpu(*cuda, net, seed + attempt, "conv_transpose2d case " + std::to_string(attempt));
        ++done;
    }
    CHECK(done >= 10);
}

TEST_CASE("cuda pooling: random sweep vs cpu.direct", "[gpu][cuda][pool]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int done = 0;
    for (int attempt = 0; attempt < 400 && done < 40; ++attempt) {
        const Shape in = Shape::nchw(r(1, 3), r(1, 5), r(2, 19), r(2, 19));
        const Pair k { r(1, 4), r(1, 4) };
        const Pair s { r(1, 3), r(1, 3) };
        const Padding2d pad = randomPadding(r, k[0] / 2, k[1] / 2);
        LayerSpec spec;
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
            if (r(0, 3) == 0)
                a.divisor_override = r(1, 7);
            spec = a;
        }
        Network net = oneLayer(in, spec);
        if (!inferShapes(net).ok())
            continue;
        checkAgainstCpu(*cuda, net, seed + attempt, layerTypeName(spec) + " case " + std::to_string(attempt));
        ++done;
    }
    CHECK(done >= 20);
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(3, 5, 7, 9), GlobalAvgPool2d {}), seed, "global_avgpool2d odd");
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(2, 3, 64, 48), GlobalAvgPool2d {}), seed + 1, "global_avgpool2d x4");
}

// What the cross-backend test (tests/backends) cannot reach with its small odd shapes: the float4 paths of the
// element-wise family and of merge.cu (a count, a broadcast plane and a concat run that are multiples of 4), their
// scalar tails next to them, and a tensor big enough for the grid-stride loops to go round more than once.
// Every algorithm, outputs poisoned with NaN, relL2 ≤ 1e-5 against cpu.direct.
namespace {
Network mergeNetwork(const Shape& in)
{
    auto layerOf = [](std::string name, LayerSpec spec, std::vector<std::string> inputs) {
        Layer l;
        l.name = std::move(name);
        l.spec = std::move(spec);
        l.inputs = std::move(inputs);
        return l;
    };
    Network net = oneLayer(in, Identity {});
    net.layers = {
        layerOf("a", SiLU {}, {}),
        layerOf("b", Hardswish {}, { "input" }),
        layerOf("c", ReLU6 {}, { "input" }),
        layerOf("d", Hardsigmoid {}, { "input" }),
        layerOf("e", LeakyReLU { 0.1 }, { "input" }),
        layerOf("sum2", Add {}, { "a", "b" }),
        layerOf("sum4", Add {}, { "sum2", "c", "input", "d" }),
        layerOf("g", GlobalAvgPool2d {}, { "input" }),
        layerOf("gate", Sigmoid {}, {}),
        layerOf("se", Mul {}, { "sum4", "gate" }),
        layerOf("es", Mul {}, { "gate", "e" }),
        layerOf("sq", Mul {}, { "se", "es" }),
        layerOf("cat", Concat {}, { "sq", "input", "es" }),
        layerOf("id", Identity {}, {}),
        layerOf("drop", Dropout {}, { "cat" }),
        layerOf("after", Tanh {}, { "id" }),
        layerOf("ht", Hardtanh { -0.25, 0.5 }, { "input" }),
        layerOf("pr", PReLU { in.c }, { "input" }), // one slope per channel: the channel from the index
        layerOf("pr1", PReLU {}, { "ht" }),
    };
    return net;
}
} // namespace

TEST_CASE("cuda element-wise and merge kernels: float4 paths, scalar tails, grid-stride loops", "[gpu][cuda][merge]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    // Planes of 192 and 16 (float4 paths), 63 (scalar tails), and 2 Mi elements
    // (more elements than one pass of the capped grid covers).
    const Shape shapes[]
        = { Shape::nchw(2, 8, 16, 12), Shape::nchw(3, 4, 4, 4), Shape::nchw(3, 5, 7, 9), Shape::nchw(2, 16, 256, 256) };
    int i = 0;
    for (const Shape& in : shapes)
        checkAgainstCpu(*cuda, mergeNetwork(in), seed + i++, "merge kernels " + in.str());
}

TEST_CASE("cuda linear, softmax and flatten vs cpu.direct", "[gpu][cuda][linear]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    int i = 0;
    for (int64_t rows : { 1, 3, 8, 9, 70 }) {
        for (int64_t in : { 1, 37, 400, 1024 }) {
            checkAgainstCpu(*cuda, oneLayer(Shape::features(rows, in), Linear { int64_t(10 + 13 * (i % 7)), i % 3 != 0 }),
                seed + i, "linear rows " + std::to_string(rows) + " in " + std::to_string(in));
            ++i;
        }
    }
    // A row wider than one block (the cross-backend test has the flat and per-pixel cases).
    checkAgainstCpu(*cuda, oneLayer(Shape::features(2, 3000), Softmax {}), seed + 101, "softmax wide");

    // A chain: conv → relu → pool → flatten (a view) → linear → softmax, as in LeNet.
    Network net = oneLayer(Shape::nchw(2, 1, 28, 28), Conv2d { 6, { 5, 5 }, { 1, 1 }, Padding2d::symmetric(2, 2) });
    for (LayerSpec s : { LayerSpec { ReLU {} }, LayerSpec { MaxPool2d {} }, LayerSpec { Flatten {} },
             LayerSpec { Linear { 84 } }, LayerSpec { Softmax {} } })
        net.layers.push_back(
            Layer { "l" + std::to_string(net.layers.size()), s, {}, {}, {}, nullptr, nullptr, nullptr, nullptr });
    checkAgainstCpu(*cuda, net, seed + 200, "lenet-like chain");
}

TEST_CASE("cuda backend answers availability and refuses unknown algorithms", "[gpu][cuda]")
{
    auto backend = BackendRegistry::instance().find("cuda");
    REQUIRE(backend);
    const Availability a = backend->availability();
    if (!a.available) {
        CHECK(!a.reason.empty());
        std::cout << "SKIPPED: " << a.reason << std::endl;
        return;
    }
    CHECK(backend->algorithms().size() == 6);
    CHECK(backend->algorithms()[4].name == "fft");
    CHECK(backend->algorithms()[5].name == "tensor_core");
    CHECK_THROWS_AS(backend->createSession("nope", {}), UnsupportedError);
}

TEST_CASE("cuda pooling 2x2 stride 2: every vector width, odd sizes, and the cases that fall back", "[gpu][cuda][pool]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int i = 0;
    // W % 8 == 0 (two float4 per row), W % 4 == 0 (one float4), even W (float2), odd W (scalars); odd H too.
    for (int64_t w : { 24, 20, 18, 13, 2, 3 }) {
        for (int64_t h : { 9, 8, 2 }) {
            const Shape in = Shape::nchw(r(1, 3), r(1, 4), h, w);
            MaxPool2d m;
            AvgPool2d a;
            if (i % 3 == 1)
                a.divisor_override = r(1, 7);
            if (i % 3 == 2)
                a.count_include_pad = false;
            if (i % 4 == 3) {
                // Bottom/right padding or ceil_mode: even sizes keep whole windows (fast path), odd ones add a
                // clipped last window (general kernel); both must match.
                m.ceil_mode = a.ceil_mode = true;
                m.padding = a.padding = { Padding2d::Mode::Explicit, 0, 1, 0, 1 };
            }
            checkAgainstCpu(*cuda, oneLayer(in, m), seed + i, "maxpool2d 2x2 s2 " + in.str());
            checkAgainstCpu(*cuda, oneLayer(in, a), seed + 100 + i, "avgpool2d 2x2 s2 " + in.str());
            ++i;
        }
    }
    // Explicit stride 2 equal to the default, and the LeNet chain sizes.
    MaxPool2d explicitStride;
    explicitStride.stride = Pair { 2, 2 };
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(1, 6, 28, 28), explicitStride), seed + 200, "maxpool2d lenet s2");
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(1, 16, 10, 10), AvgPool2d {}), seed + 201, "avgpool2d lenet s4");
}

TEST_CASE("cuda conv2d: tiny layers take the latency-bound kernels", "[gpu][cuda][conv2d]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    // LeNet-5's c3 and a c5-style layer (400-tap reduction, 120 outputs) at batch 1.
    const Network c3 = oneLayer(Shape::nchw(1, 6, 14, 14), Conv2d { 16, { 5, 5 } });
    for (const char* algorithm : { "direct", "tiled", "implicit_gemm", "winograd" })
        CHECK(layerNoteOf(*cuda, c3, algorithm).find("tiny layer: 5x5 taps unrolled, 32 lanes") != std::string::npos);
    checkAgainstCpu(*cuda, c3, seed, "lenet c3");
    // LeNet-5's c1 (25 taps, one input channel: 8 lanes for its 5 rows), padded, and forced through every lane count.
    const Network c1
        = oneLayer(Shape::nchw(1, 1, 28, 28), Conv2d { 6, { 5, 5 }, { 1, 1 }, Padding2d::symmetric(2, 2) });
    CHECK(layerNoteOf(*cuda, c1, "implicit_gemm").find("8 lanes per output") != std::string::npos);
    for (const char* lanes : { "1", "2", "4", "8", "16", "32" }) {
        const std::map<std::string, std::string> forced { { "tiny_lanes", lanes } };
        checkAgainstCpu(*cuda, c1, seed + 2, std::string("lenet c1, tiny_lanes=") + lanes, forced);
        checkAgainstCpu(*cuda, c3, seed + 4, std::string("lenet c3, tiny_lanes=") + lanes, forced);
    }
    // A 4x4 kernel takes the generic split-reduction kernel.
    const Network k4 = oneLayer(Shape::nchw(1, 4, 12, 12), Conv2d { 8, { 4, 4 } });
    CHECK(layerNoteOf(*cuda, k4, "direct").find("a warp (8 lanes below 64 taps)") != std::string::npos);
    checkAgainstCpu(*cuda, k4, seed + 3, "4x4 tiny");
    checkAgainstCpu(*cuda, c1, seed + 2, "lenet c1");
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(1, 16, 5, 5), Conv2d { 120, { 5, 5 } }), seed + 1, "lenet c5");
    Rng r(seed);
    int done = 0;
    for (int attempt = 0; attempt < 600 && done < 40; ++attempt) {
        Conv2d c;
        const int64_t groups = r.coin() ? 1 : r(1, 3);
        c.groups = groups;
        c.out_channels = groups * r(1, 8);
        // Half the cases square 3×3 or 5×5 (the compile-time kernel, 1-16 lanes by channel count), half any size.
        const int64_t square = r.coin() ? (r.coin() ? 3 : 5) : 0;
        c.kernel_size = square ? Pair { square, square } : Pair { r(2, 5), r(2, 5) };
        c.stride = { r(1, 3), r(1, 3) };
        c.dilation = { r(1, 2), r(1, 2) };
        c.padding = r(0, 5) == 0 ? Padding2d { Padding2d::Mode::Same } : randomPadding(r, 3, 3);
        c.bias = r(0, 3) != 0;
        const int64_t cg = r.coin() ? r(1, 12) : r(13, 40);
        if (cg * c.kernel_size[0] * c.kernel_size[1] < 16)
            continue; // too short a reduction for the tiny-layer kernel (8 lanes from 16 taps, a warp from 64)
        Network net = oneLayer(Shape::nchw(r(1, 2), groups * cg, r(3, 17), r(3, 17)), c);
        const ShapeReport shapes = inferShapes(net);
        if (!shapes.ok() || shapes.layers[0].out.numel() > 16384)
            continue;
        checkAgainstCpu(*cuda, net, seed + attempt, "tiny conv2d case " + std::to_string(attempt));
        ++done;
    }
    CHECK(done >= 25);
}

TEST_CASE("cuda conv_transpose2d: stride 2-3 through the phase kernel", "[gpu][cuda][conv_transpose2d]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    Rng r(seed);
    int done = 0;
    for (int attempt = 0; attempt < 600 && done < 40; ++attempt) {
        ConvTranspose2d c;
        const int64_t groups = r.coin() ? 1 : r(1, 3);
        c.groups = groups;
        c.out_channels = groups * r(1, 20); // 4, 8 and 16 channels per thread
        c.kernel_size = { r(1, 5), r(1, 5) };
        c.stride = { r(2, 3), r(2, 3) };
        c.dilation = { r(1, 3), r(1, 3) };
        c.padding = randomPadding(r, 3, 3);
        c.output_padding = { r(0, c.stride[0] - 1), r(0, c.stride[1] - 1) };
        c.bias = r.coin();
        Network net = oneLayer(Shape::nchw(r(1, 2), groups * r(1, 40), r(2, 11), r(2, 11)), c);
        if (!inferShapes(net).ok())
            continue;
        checkAgainstCpu(*cuda, net, seed + attempt, "strided conv_transpose2d case " + std::to_string(attempt));
        ++done;
    }
    CHECK(done >= 15);

    // More than one stage of 32 input channels, 16 channels per thread, a U-Net decoder's k2 s2.
    ConvTranspose2d up { 20, { 2, 2 }, { 2, 2 } };
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(2, 70, 9, 11), up), seed + 1, "conv_transpose2d k2 s2 70->20");
    ConvTranspose2d k4 { 24, { 4, 4 }, { 2, 2 }, { Padding2d::Mode::Explicit, 1, 2, 2, 0 }, { 1, 1 } };
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(1, 40, 7, 6), k4), seed + 2, "conv_transpose2d k4 s2 crop");
    // A kernel smaller than the stride: two of three phases per axis see no tap and get the bias alone.
    ConvTranspose2d sparse { 5, { 1, 1 }, { 3, 3 } };
    sparse.output_padding = { 2, 1 };
    checkAgainstCpu(*cuda, oneLayer(Shape::nchw(2, 3, 5, 4), sparse), seed + 3, "conv_transpose2d k1 s3");
    // Stride 1 (one phase) and a kernel whose taps exceed the shared-memory stage (gather fallback).
    checkAgainstCpu(
        *cuda, oneLayer(Shape::nchw(1, 5, 6, 7), ConvTranspose2d { 9, { 3, 2 } }), seed + 4, "conv_transpose2d s1");
    const Network huge = oneLayer(Shape::nchw(1, 2, 3, 3), ConvTranspose2d { 9, { 29, 29 } });
    CHECK(layerNoteOf(*cuda, huge, "implicit_gemm").find("gather") != std::string::npos);
    const std::string upNote = layerNoteOf(*cuda, oneLayer(Shape::nchw(2, 70, 9, 11), up), "implicit_gemm");
    CHECK(upNote.find("phases") != std::string::npos);
    checkAgainstCpu(*cuda, huge, seed + 5, "conv_transpose2d 29x29 gather fallback");
}

namespace {
Tensor cheapTensor(const Shape& shape, uint32_t seed)
{
    // Timing only: values in [-1, 1) from a tiny LCG (randomTensor is slow for half a gigabyte).
    Tensor t(shape);
    uint32_t x = seed * 2654435761u + 1;
    for (int64_t i = 0; i < t.numel(); ++i) {
        x = x * 1664525u + 1013904223u;
        t.data()[i] = static_cast<float>(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    return t;
}

double medianLayerMs(Backend& cuda, Network net, const std::string& algorithm, const Tensor& input, int repeat,
    const std::map<std::string, std::string>& extra = {})
{
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, 1);
    SessionOptions options;
    options.extra = extra;
    auto session = cuda.createSession(algorithm, options);
    session->prepare(net, shapes);
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i)
        ms.push_back(session->runPass(input).layerMs.at(0));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}
} // namespace

// Not a test: a benchmark that prints "BENCH|..." rows (tools/gpu-check.sh collects them). Hidden ([.]) so
// neither CTest nor a plain run executes it; nothing here asserts on time.
TEST_CASE("cuda kernel benchmark: bandwidth of memory-bound layers, TFLOP/s of convolutions", "[.bench]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const Shape big = Shape::nchw(8, 64, 512, 512); // 512 MiB
    const Tensor x = cheapTensor(big, 7);
    MaxPool2d pool2;
    AvgPool2d avg2;
    const std::pair<const char*, LayerSpec> memoryBound[] = { { "relu", ReLU {} }, { "leaky_relu", LeakyReLU {} },
        { "sigmoid", Sigmoid {} }, { "batchnorm2d", BatchNorm2d {} }, { "maxpool2d 2x2", pool2 },
        { "avgpool2d 2x2", avg2 }, { "global_avgpool2d", GlobalAvgPool2d {} } };
    for (const auto& [name, spec] : memoryBound) {
        Network net = oneLayer(big, spec);
        const Shape out = inferShapes(net).layers.at(0).out;
        const double ms = medianLayerMs(*cuda, net, "implicit_gemm", x, 5);
        const double bytes = double(big.bytes()) + double(out.bytes());
        std::printf("BENCH|%s %s|%.3f ms|%.0f GB/s (read+write)\n", name, big.str().c_str(), ms, bytes / ms / 1e6);
    }
    struct C {
        int64_t cin, cout, size;
    };
    const C convs[] = { { 3, 64, 512 }, { 64, 64, 512 }, { 128, 128, 256 }, { 256, 256, 128 }, { 512, 512, 64 },
        { 1024, 1024, 32 } };
    for (const C& c : convs) {
        const Shape in = Shape::nchw(4, c.cin, c.size, c.size);
        const Tensor xin = cheapTensor(in, 11);
        Network net = oneLayer(in, Conv2d { c.cout, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) });
        const double flops = 2.0 * 4 * c.cout * c.cin * 9 * c.size * c.size;
        for (const std::string algorithm : { "implicit_gemm", "winograd", "tiled", "direct" }) {
            const bool slow = algorithm == "tiled" || algorithm == "direct";
            if (slow && c.cin != 64 && c.cin != 256)
                continue; // the slow kernels on two layers only: device time is scarce
            const double ms = medianLayerMs(*cuda, net, algorithm, xin, 3);
            std::printf("BENCH|conv3x3 %lld->%lld @%lld b4|cuda.%s|%.3f ms|%.1f TFLOP/s\n", (long long)c.cin,
                (long long)c.cout, (long long)c.size, algorithm.c_str(), ms, flops / ms / 1e9);
            if (algorithm == "winograd") {
                const double ms2 = medianLayerMs(*cuda, net, algorithm, xin, 3, { { "winograd_tile", "2" } });
                std::printf("BENCH|conv3x3 %lld->%lld @%lld b4|cuda.winograd F(2x2)|%.3f ms|%.1f TFLOP/s\n",
                    (long long)c.cin, (long long)c.cout, (long long)c.size, ms2, flops / ms2 / 1e9);
            }
        }
    }
    // conv_transpose2d: the gather kernel (cuda.direct) against the phase kernel (cuda.implicit_gemm), U-Net
    // decoder shapes. FLOPs counted on the input size: 2 · N · C_in · H · W · C_out/g · R · S.
    struct T {
        int64_t cin, cout, size, kernel;
    };
    for (const T& t : { T { 128, 64, 128, 2 }, T { 256, 128, 64, 4 }, T { 64, 32, 256, 3 } }) {
        const Shape in = Shape::nchw(4, t.cin, t.size, t.size);
        const Tensor xin = cheapTensor(in, 13);
        ConvTranspose2d up { t.cout, { t.kernel, t.kernel }, { 2, 2 } };
        if (t.kernel == 4)
            up.padding = Padding2d::symmetric(1, 1);
        if (t.kernel == 3) {
            up.padding = Padding2d::symmetric(1, 1);
            up.output_padding = { 1, 1 };
        }
        Network net = oneLayer(in, up);
        const double flops = 2.0 * 4 * t.cin * t.size * t.size * t.cout * t.kernel * t.kernel;
        for (const char* algorithm : { "implicit_gemm", "direct" }) {
            const double ms = medianLayerMs(*cuda, net, algorithm, xin, 3);
            std::printf("BENCH|conv_transpose2d %lld->%lld k%lld s2 @%lld b4|cuda.%s|%.3f ms|%.1f TFLOP/s\n",
                (long long)t.cin, (long long)t.cout, (long long)t.kernel, (long long)t.size, algorithm, ms,
                flops / ms / 1e9);
        }
    }
    std::fflush(stdout);
}
