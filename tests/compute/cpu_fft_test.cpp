// cpu.fft (compute/cpu/conv2d_fft.cpp) against cpu.direct: a sweep of shapes (padding, "same", dilation, groups,
// depthwise, non-square kernels and images, batch 2, with and without bias), forced small tiles so the overlap-save
// edges and the last partial tiles are exercised, the bench suite's cases (the lecture's 1000×1000 × 15×15 in full,
// 64→64 at 256² with kernels 3 to 31 at sampled positions), and the refusals. Relative L2 ≤ 1e-5 throughout.
#include "compute/backend_registry.h"
#include "compute/cpu/conv2d_fft.h"
#include "compute/cpu/cpu_backend.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/fft_tiling.h"
#include "compute/load_input.h"
#include "compute/materialize.h"
#include "compute/network.h"
#include "compute/profiler.h"
#include "tests/compute/cpu_test_helpers.h"

#include <catch2/catch.hpp>

using namespace convscope;
using namespace convscope::test;

namespace {

using test::conv2dSpec;

struct FftCase {
    Shape in;
    Conv2d conv;
    int64_t tile = 0; // forced fft_tile, 0 = the cost model's
};

void checkCase(const FftCase& fc, uint64_t seed)
{
    const LayerShape s = shapeOf(fc.conv, fc.in);
    INFO(describe(fc.in, fc.conv, s) << " tile " << fc.tile);
    const Tensor in = randomTensor(fc.in, seed);
    const Tensor w = randomTensor(
        Shape::nchw(fc.conv.out_channels, fc.in.c / fc.conv.groups, fc.conv.kernel_size[0], fc.conv.kernel_size[1]),
        seed + 1);
    const Tensor b = randomTensor(Shape::nchw(fc.conv.out_channels, 1, 1, 1), seed + 2);
    const Tensor* bias = fc.conv.bias ? &b : nullptr;
    Tensor reference(s.out);
    cpu::direct::conv2d(in, w, bias, fc.conv, s.resolvedPadding, reference);
    cpu::FftConv2d fft(fc.conv, s, w, fc.tile);
    INFO(fft.note());
    const FftTiling& t = fft.tiling();
    CHECK(t.tilesY * t.validH >= s.out.h);
    CHECK(t.tilesX * t.validW >= s.out.w);
    Tensor out = poisonedOutput(s);
    fft.run(in, bias, out);
    requireClose(out, reference);
    fft.run(in, bias, out); // a second pass on the same buffers
    requireClose(out, reference);
}

} // namespace

TEST_CASE("cpu.fft matches cpu.direct on a sweep of shapes", "[cpu][fft]")
{
    const Padding2d same { Padding2d::Mode::Same };
    const std::vector<FftCase> cases = {
        { Shape::nchw(1, 1, 20, 20), conv2dSpec(1, { 5, 5 }, Padding2d::symmetric(0, 0)) },
        { Shape::nchw(2, 3, 17, 23), conv2dSpec(4, { 3, 3 }, Padding2d::symmetric(1, 1)) },
        { Shape::nchw(1, 2, 19, 13), conv2dSpec(3, { 3, 5 }, explicitPad(0, 2, 3, 1)) },
        { Shape::nchw(1, 2, 16, 16), conv2dSpec(2, { 4, 4 }, same) }, // "same" pads the extra pixel bottom/right
        { Shape::nchw(1, 3, 21, 18), conv2dSpec(2, { 3, 3 }, Padding2d::symmetric(2, 2), { 2, 3 }) },
        { Shape::nchw(2, 4, 15, 15), conv2dSpec(6, { 3, 3 }, Padding2d::symmetric(1, 1), { 1, 1 }, 2) },
        { Shape::nchw(1, 5, 14, 11), conv2dSpec(5, { 5, 5 }, Padding2d::symmetric(2, 2), { 1, 1 }, 5, false) },
        { Shape::nchw(1, 1, 9, 9),
            conv2dSpec(2, { 3, 3 }, Padding2d::symmetric(4, 4)) }, // padding wider than the kernel
        { Shape::nchw(1, 1, 1, 40), conv2dSpec(1, { 1, 7 }, Padding2d::symmetric(0, 3)) },
        // Forced small tiles: many overlap-save tiles, partial ones at the right and bottom edges.
        { Shape::nchw(1, 2, 45, 37), conv2dSpec(3, { 7, 7 }, Padding2d::symmetric(3, 3)), 16 },
        { Shape::nchw(2, 3, 33, 29), conv2dSpec(2, { 5, 3 }, explicitPad(1, 3, 0, 2), { 2, 1 }), 12 },
        { Shape::nchw(1, 4, 40, 40), conv2dSpec(4, { 9, 9 }, Padding2d::symmetric(4, 4), { 1, 1 }, 2), 21 },
        // Spectra over 4 MiB: several tiles per task (9 tiles in tasks of up to 4, the last one partial).
        { Shape::nchw(1, 48, 40, 40), conv2dSpec(48, { 7, 7 }, Padding2d::symmetric(3, 3)), 24 },
    };
    uint64_t seed = 1900;
    for (const FftCase& fc : cases)
        checkCase(fc, seed += 10);
}

TEST_CASE("cpu.fft: the tiling covers the output, and a forced tile must hold the kernel", "[cpu][fft]")
{
    const Conv2d c = conv2dSpec(1, { 15, 15 }, Padding2d::symmetric(0, 0));
    const LayerShape s = shapeOf(c, Shape::nchw(1, 1, 1000, 1000));
    FftTilingTarget target = cpu::cpuFftTarget();
    const FftTiling t = chooseFftTiling(c, s, target, "cpu.fft");
    CHECK(t.spanH == 15);
    CHECK(t.validH == t.tileH - 14);
    CHECK(t.tilesY * t.validH >= 986);
    CHECK((t.tilesY - 1) * t.validH < 986);
    CHECK_THAT(t.describe(), Catch::Contains("FFT") && Catch::Contains("kernel spectra"));
    target.forcedTile = 12;
    CHECK_THROWS_AS(chooseFftTiling(c, s, target, "cpu.fft"), InputError);
    CHECK(parseFftTileOption({}) == 0);
    CHECK(parseFftTileOption({ { "fft_tile", "64" } }) == 64);
    CHECK_THROWS_AS(parseFftTileOption({ { "fft_tile", "big" } }), InputError);
    CHECK_THROWS_AS(parseFftTileOption({ { "fft_tile", "4" } }), InputError);
}

TEST_CASE("cpu.fft: supports() refuses stride 2 and layers whose spectra do not fit, with reasons", "[cpu][fft]")
{
    const auto backend = makeCpuBackend();
    const auto algorithms = backend->algorithms();
    REQUIRE(algorithms.size() == 4);
    CHECK(algorithms[3].name == "fft");

    Conv2d strided = conv2dSpec(4, { 3, 3 }, Padding2d::symmetric(1, 1));
    strided.stride = { 2, 2 };
    const Support s2 = backend->supports("fft", strided, inferLayer(strided, Shape::nchw(1, 3, 16, 16)));
    CHECK_FALSE(s2.supported);
    CHECK_THAT(s2.reason, Catch::Contains("cpu.fft") && Catch::Contains("stride 2×2"));

    const Conv2d wide = conv2dSpec(2048, { 3, 3 }, Padding2d::symmetric(1, 1));
    const Support big = backend->supports("fft", wide, inferLayer(wide, Shape::nchw(1, 2048, 8, 8)));
    CHECK_FALSE(big.supported);
    CHECK_THAT(big.reason, Catch::Contains("budget"));

    const Conv2d fine = conv2dSpec(4, { 7, 7 }, Padding2d::symmetric(3, 3));
    CHECK(backend->supports("fft", fine, inferLayer(fine, Shape::nchw(1, 3, 32, 32))).supported);
    CHECK(backend->supports("fft", MaxPool2d {}, inferLayer(MaxPool2d {}, Shape::nchw(1, 3, 32, 32))).supported);

    // The profiler records the refusal for that selection and runs the others.
    Network net = singleConvNetwork("strided", 1, 3, 16, 4, 3, 2, 1, 5);
    const ShapeReport shapes = inferShapes(net);
    materializeParameters(net, shapes);
    ProfileOptions opt;
    opt.selections = { { "cpu", "fft" }, { "cpu", "im2col_gemm" } };
    opt.warmup = 0;
    opt.repeat = 1;
    const RunResult r = profile(net, randomTensor(shapes.input, 3), opt);
    REQUIRE(r.selections.size() == 2);
    CHECK_FALSE(r.selections[0].ok);
    CHECK_THAT(r.selections[0].failure, Catch::Contains("stride"));
    CHECK(r.selections[1].ok);
}

TEST_CASE("cpu.fft: the fft bench suite's cases stay within 1e-5 of cpu.direct", "[cpu][fft]")
{
    const auto backend = makeCpuBackend();
    // The lecture's case in full: one channel, 1000×1000, a 15×15 kernel, no padding (as `bench --suite fft`).
    {
        Network net = singleConvNetwork("fft 1ch 1000² k15", 1, 1, 1000, 1, 15, 1, 0, 300);
        const ShapeReport shapes = inferShapes(net);
        materializeParameters(net, shapes);
        const Tensor input = loadInput(net.input, net.baseDir);
        auto fft = backend->createSession("fft", {});
        fft->prepare(net, shapes);
        fft->runPass(input);
        CHECK_THAT(fft->layerNote(0), Catch::Contains("FFTW") && Catch::Contains("kernel spectra"));
        Tensor reference(shapes.layers[0].out);
        const Layer& l = net.layers[0];
        cpu::direct::conv2d(
            input, *l.weight, l.bias.get(), std::get<Conv2d>(l.spec), shapes.layers[0].resolvedPadding, reference);
        requireClose(fft->fetchOutput(0, nullptr), reference);
    }
    // 64→64 at 256² with kernels 3, 7, 15 and 31 (padding k/2): 5 to 516 GFLOP for cpu.direct, so the reference is
    // summed in double at 400 positions drawn across every channel and tile.
    uint64_t seed = 302;
    for (int64_t k : { 3, 7, 15, 31 }) {
        INFO("64→64 @256² k" << k);
        Network net = singleConvNetwork("fft 64→64 @256² k" + std::to_string(k), 1, 64, 256, 64, k, 1, k / 2, seed++);
        const ShapeReport shapes = inferShapes(net);
        materializeParameters(net, shapes);
        const Tensor input = loadInput(net.input, net.baseDir);
        auto fft = backend->createSession("fft", {});
        fft->prepare(net, shapes);
        fft->runPass(input);
        INFO(fft->layerNote(0));
        const Layer& l = net.layers[0];
        const double err = sampledConv2dRelL2(fft->fetchOutput(0, nullptr), input, *l.weight, l.bias.get(),
            std::get<Conv2d>(l.spec), shapes.layers[0].resolvedPadding, 400, seed);
        INFO("relative L2 " << err);
        CHECK(err <= 1e-5);
        CHECK(err > 0); // sums in a different order and precision: an exact match would mean nothing was compared
    }
}
