// The cuda backend's conv2d against cpu.direct: every algorithm on the kernel paths that random small shapes (the
// cross-backend test, tests/backends) do not reach (wide and pipelined implicit GEMM tiles, Winograd, stems, tiny
// layers); apart from cuda_backend_test.cpp (the other ops),
// which it would push past 600 lines. Outputs poisoned with NaN, relative L2 error ≤ 1e-5 (cuda_vs_cpu.h); on a
// machine without a usable GPU every case prints "SKIPPED: <reason>" and CTest reports it skipped.
#include "compute/shape_inference.h"
#include "tests/kernels/cuda_vs_cpu.h"
#include "tests/kernels/gpu_test_support.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using namespace convscope;
using convscope::test::checkAgainstCpu;
using convscope::test::cudaOrSkip;
using convscope::test::freshSeed;
using convscope::test::layerNoteOf;
using convscope::test::oneLayer;
using convscope::test::randomPadding;
using convscope::test::Rng;

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
        checkAgainstCpu(
            *cuda, oneLayer(Shape::nchw(k.n, k.c, k.h, k.w), c), seed + i, "wide conv case " + std::to_string(i));
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
            checkAgainstCpu(
                *cuda, net, seed + i, std::string("pipelined case ") + std::to_string(i) + " " + tile, extra);
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
    const Network plain
        = oneLayer(Shape::nchw(1, 8, 64, 64), Conv2d { 8, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) });
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
