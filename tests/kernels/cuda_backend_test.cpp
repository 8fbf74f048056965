// The cuda backend against cpu.direct where the cross-backend test (tests/backends: every kind on random shapes, every
// algorithm) does not reach: the float4 paths and grid-stride loops of the element-wise and merge kernels, and the
// kernel notes. Fresh random inputs and weights each case, device outputs poisoned with NaN before each pass
// (SessionOptions extra "poison_outputs"), relative L2 error ≤ 1e-5. On a machine without a usable GPU every case
// prints "SKIPPED: <reason>" and CTest reports it skipped. conv2d's sweeps are in cuda_conv2d_test.cpp; the shared
// check is in cuda_vs_cpu.cpp.
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/shape_inference.h"
#include "tests/kernels/cuda_vs_cpu.h"
#include "tests/kernels/gpu_test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <variant>

using namespace convscope;
using convscope::test::checkAgainstCpu;
using convscope::test::cudaOrSkip;
using convscope::test::freshSeed;
using convscope::test::layerNoteOf;
using convscope::test::oneLayer;
using convscope::test::randomPadding;
using convscope::test::randomParameters;
using convscope::test::Rng;

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
            checkAgainstCpu(*cuda,
                oneLayer(Shape::features(rows, in), Linear { int64_t(10 + 13 * (i % 7)), i % 3 != 0 }), seed + i,
                "linear rows " + std::to_string(rows) + " in " + std::to_string(in));
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

TEST_CASE("cuda conv_transpose2d: the stride phases as implicit GEMMs where they pay", "[gpu][cuda][conv_transpose2d]")
{
    auto cuda = cudaOrSkip();
    if (!cuda)
        return;
    const uint64_t seed = freshSeed();
    const auto gemmNote = [&](const Network& net) { return layerNoteOf(*cuda, net, "implicit_gemm"); };
    // DCGAN's 4×4 stride 2 crop 1 and its 1² → 4² first layer (stride 1: the one phase written in place).
    const Network dcgan = oneLayer(Shape::nchw(2, 48, 6, 5),
        ConvTranspose2d { 64, { 4, 4 }, { 2, 2 }, { Padding2d::Mode::Explicit, 1, 1, 1, 1 } });
    const Network first = oneLayer(Shape::nchw(3, 40, 1, 1), ConvTranspose2d { 64, { 4, 4 } });
    for (const Network* net : { &dcgan, &first }) {
        checkAgainstCpu(*cuda, *net, seed, "conv_transpose2d phase GEMMs");
        CHECK(gemmNote(*net).find("implicit GEMM") != std::string::npos);
    }
    // Strides 1–4, dilation 1–3, groups, output padding, crops (some beyond the kernel's reach: the phase kernel),
    // kernels smaller than the stride (phases of the bias alone); 32–40 output channels a group.
    Rng r(seed);
    int done = 0, gemm = 0;
    for (int attempt = 0; attempt < 400 && done < 24; ++attempt) {
        ConvTranspose2d c;
        c.groups = r.coin() ? 1 : 2;
        c.out_channels = c.groups * r(32, 40);
        c.kernel_size = { r(1, 5), r(1, 5) };
        c.stride = { r(1, 4), r(1, 4) };
        c.dilation = { r(1, 3), r(1, 3) };
        // Crops within the dilated kernel's reach mostly (the GEMMs), now and then one past it (the phase kernel).
        c.padding = randomPadding(r, c.dilation[0] * (c.kernel_size[0] - 1) + (r(0, 4) == 0 ? 1 : 0),
            c.dilation[1] * (c.kernel_size[1] - 1) + (r(0, 4) == 0 ? 1 : 0));
        c.output_padding
            = { r(0, std::max(c.stride[0], c.dilation[0]) - 1), r(0, std::max(c.stride[1], c.dilation[1]) - 1) };
        c.bias = r.coin();
        Network net = oneLayer(Shape::nchw(r(1, 2), c.groups * r(8, 20), r(1, 9), r(1, 9)), c);
        if (!inferShapes(net).ok())
            continue;
        checkAgainstCpu(*cuda, net, seed + attempt, "conv_transpose2d phase GEMM case " + std::to_string(attempt));
        gemm += gemmNote(net).find("implicit GEMM") != std::string::npos;
        ++done;
    }
    CHECK(done >= 15);
    CHECK(gemm >= 5);
    // The phase kernel where the GEMMs do not pay: DCGAN's 64→3 output layer, and 25 phases.
    const Network out = oneLayer(
        Shape::nchw(2, 64, 8, 8), ConvTranspose2d { 3, { 4, 4 }, { 2, 2 }, { Padding2d::Mode::Explicit, 1, 1, 1, 1 } });
    const Network wide = oneLayer(Shape::nchw(1, 16, 4, 4), ConvTranspose2d { 32, { 5, 5 }, { 5, 5 } });
    for (const Network* net : { &out, &wide }) {
        checkAgainstCpu(*cuda, *net, seed + 1, "conv_transpose2d phase kernel");
        CHECK(gemmNote(*net).find("do not pay") != std::string::npos);
    }
    // --option transposed_gemm: the GEMMs wherever the plan applies (the two layers above), or never (DCGAN's 4×4).
    const std::map<std::string, std::string> on { { "transposed_gemm", "on" } }, off { { "transposed_gemm", "off" } };
    for (const Network* net : { &out, &wide }) {
        checkAgainstCpu(*cuda, *net, seed + 2, "conv_transpose2d transposed_gemm=on", on);
        CHECK(layerNoteOf(*cuda, *net, "implicit_gemm", on).find("implicit GEMM") != std::string::npos);
    }
    checkAgainstCpu(*cuda, dcgan, seed + 3, "conv_transpose2d transposed_gemm=off", off);
    CHECK(layerNoteOf(*cuda, dcgan, "implicit_gemm", off).find("transposed_gemm=off") != std::string::npos);
    // Classes whose gathered weights hold an odd number of floats before one the GEMM reads as float4 (33 output
    // channels of one input channel, 5×5 stride 2: 297 + 198 + 198 floats before the 2×2 class's, C/g·R·S = 4): each
    // class's weights must start aligned (it ran into cudaErrorMisalignedAddress, a random case of the loop above).
    const Network odd = oneLayer(Shape::nchw(1, 1, 5, 5), ConvTranspose2d { 33, { 5, 5 }, { 2, 2 } });
    checkAgainstCpu(*cuda, odd, seed + 4, "conv_transpose2d 1->33 5x5/2, odd class sizes, transposed_gemm=on", on);
    CHECK(layerNoteOf(*cuda, odd, "implicit_gemm", on).find("implicit GEMM") != std::string::npos);
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
