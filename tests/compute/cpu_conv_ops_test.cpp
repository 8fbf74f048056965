// The convolution ops: conv2d and conv_transpose2d, hand-computed cases and the fast:: implementations (im2col /
// col2im + OpenBLAS) against the direct:: reference on fixed sweeps with poisoned outputs (random shapes on every cpu
// algorithm: the cross-backend test, tests/backends).
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu_threads.h"
#include "compute/error.h"
#include "compute/random.h"
#include "tests/compute/cpu_test_helpers.h"

#include <algorithm>
#include <vector>

using namespace convscope;
using namespace convscope::test;

namespace {

struct ConvCase {
    Shape in;
    Conv2d spec;
};

Conv2d conv(int64_t outC, Pair k, Pair s, Padding2d p, Pair d, int64_t groups, bool bias)
{
    Conv2d c;
    c.out_channels = outC;
    c.kernel_size = k;
    c.stride = s;
    c.padding = p;
    c.dilation = d;
    c.groups = groups;
    c.bias = bias;
    return c;
}

ConvTranspose2d convT(int64_t outC, Pair k, Pair s, Padding2d p, Pair op, Pair d, int64_t groups, bool bias)
{
    ConvTranspose2d c;
    c.out_channels = outC;
    c.kernel_size = k;
    c.stride = s;
    c.padding = p;
    c.output_padding = op;
    c.dilation = d;
    c.groups = groups;
    c.bias = bias;
    return c;
}

void checkConvFastAgainstDirect(const Shape& inShape, const Conv2d& spec, uint64_t seed)
{
    const LayerShape s = shapeOf(spec, inShape);
    INFO(describe(inShape, spec, s));
    const Tensor in = randomTensor(inShape, seed);
    const Tensor w = randomTensor(
        Shape::nchw(spec.out_channels, inShape.c / spec.groups, spec.kernel_size[0], spec.kernel_size[1]), seed + 1);
    const Tensor b = randomTensor(Shape::nchw(spec.out_channels, 1, 1, 1), seed + 2);
    const Tensor* bias = spec.bias ? &b : nullptr;
    Tensor reference = poisonedOutput(s);
    Tensor fast = poisonedOutput(s);
    cpu::direct::conv2d(in, w, bias, spec, s.resolvedPadding, reference);
    cpu::fast::conv2d(in, w, bias, spec, s.resolvedPadding, fast);
    requireClose(fast, reference);
    // cpu.tap_gemm: one sgemm per tap where it applies (stride 1, ≥ 16 input channels per group), im2col otherwise.
    Tensor taps = poisonedOutput(s);
    cpu::fast::conv2dTapGemm(in, w, bias, spec, s.resolvedPadding, taps);
    requireClose(taps, reference);
    Tensor blasTaps = poisonedOutput(s);
    cpu::fast::conv2dTapGemmBlas(in, w, bias, spec, s.resolvedPadding, blasTaps);
    requireClose(blasTaps, reference);
}

void checkConvTransposeFastAgainstDirect(const Shape& inShape, const ConvTranspose2d& spec, uint64_t seed)
{
    const LayerShape s = shapeOf(spec, inShape);
    INFO(describe(inShape, spec, s));
    const Tensor in = randomTensor(inShape, seed);
    const Tensor w = randomTensor(
        Shape::nchw(inShape.c, spec.out_channels / spec.groups, spec.kernel_size[0], spec.kernel_size[1]), seed + 1);
    const Tensor b = randomTensor(Shape::nchw(spec.out_channels, 1, 1, 1), seed + 2);
    const Tensor* bias = spec.bias ? &b : nullptr;
    Tensor reference = poisonedOutput(s);
    Tensor fast = poisonedOutput(s);
    cpu::direct::convTranspose2d(in, w, bias, spec, s.resolvedPadding, reference);
    cpu::fast::convTranspose2d(in, w, bias, spec, s.resolvedPadding, fast);
    requireClose(fast, reference);
}

double dot(const Tensor& a, const Tensor& b)
{
    double sum = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
        sum += double(a.data()[i]) * double(b.data()[i]);
    return sum;
}

} // namespace

// ---------------------------------------------------------------------------------------------- conv2d

TEST_CASE("conv2d: fast (im2col + sgemm) matches direct on a fixed sweep", "[cpu][conv2d]")
{
    const std::vector<ConvCase> cases = {
        { Shape::nchw(1, 3, 7, 9), conv(4, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, true) },
        { Shape::nchw(2, 4, 10, 7), conv(6, { 3, 5 }, { 2, 1 }, explicitPad(0, 2, 1, 0), { 1, 1 }, 2, true) },
        { Shape::nchw(1, 6, 11, 13), conv(6, { 3, 3 }, { 1, 2 }, Padding2d::symmetric(1, 1), { 2, 2 }, 6, false) },
        { Shape::nchw(2, 6, 9, 8), conv(12, { 3, 3 }, { 2, 2 }, explicitPad(1, 0, 0, 1), { 1, 1 }, 6, true) },
        { Shape::nchw(3, 8, 5, 5), conv(16, { 1, 1 }, { 1, 1 }, {}, { 1, 1 }, 1, true) },
        { Shape::nchw(2, 8, 6, 5), conv(4, { 1, 1 }, { 1, 1 }, {}, { 1, 1 }, 2, false) },
        { Shape::nchw(1, 2, 3, 3), conv(2, { 1, 1 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, true) },
        { Shape::nchw(1, 3, 9, 8), conv(5, { 1, 1 }, { 2, 3 }, {}, { 1, 1 }, 1, true) },
        { Shape::nchw(1, 2, 9, 8), conv(3, { 2, 4 }, { 3, 2 }, explicitPad(2, 1, 0, 3), { 1, 2 }, 1, true) },
        { Shape::nchw(1, 1, 28, 28), conv(6, { 5, 5 }, { 1, 1 }, Padding2d::symmetric(2, 2), { 1, 1 }, 1, true) },
        { Shape::nchw(2, 3, 8, 10), conv(4, { 4, 4 }, { 1, 1 }, { Padding2d::Mode::Same }, { 1, 1 }, 1, true) },
        { Shape::nchw(1, 3, 10, 6), conv(2, { 3, 3 }, { 2, 2 }, { Padding2d::Mode::Same }, { 1, 1 }, 1, false) },
        { Shape::nchw(1, 4, 9, 9), conv(2, { 3, 3 }, { 1, 1 }, { Padding2d::Mode::Valid }, { 3, 1 }, 2, true) },
        { Shape::nchw(1, 3, 5, 5), conv(2, { 5, 5 }, { 1, 1 }, {}, { 1, 1 }, 1, true) },
    };
    uint64_t seed = 100;
    for (const ConvCase& c : cases)
        checkConvFastAgainstDirect(c.in, c.spec, seed += 10);
}

TEST_CASE("conv2d: fast bundles the images of a small map into one product", "[cpu][conv2d]")
{
    // Maps of at most a quarter of a bundle's 512 columns take several images a sgemm (their columns side by side,
    // the product copied to each image): 81 pixels → 6 images, so 7 images are a bundle of 6 and one of 1; groups,
    // padding and bias on the way. A pointwise 4² map (no im2col otherwise: copied into the bundle), and DCGAN's 4×4
    // stride-2 pattern at batch 40 (bundles of 32 and 8).
    checkConvFastAgainstDirect(
        Shape::nchw(7, 6, 9, 9), conv(8, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 2, true), 51);
    checkConvFastAgainstDirect(Shape::nchw(5, 16, 4, 4), conv(24, { 1, 1 }, { 1, 1 }, {}, { 1, 1 }, 1, true), 52);
    checkConvFastAgainstDirect(
        Shape::nchw(40, 8, 8, 8), conv(16, { 4, 4 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, false), 53);
    // More threads than (bundle, group) units: the output channels split into chunks that share each unit's columns,
    // built once by all the threads (an image and a block of input channels a task). 2 bundles (6 + 1 images) × 2
    // groups of 32 output channels on 16 threads; one bundle of 5 on 2 and 16 threads; DCGAN's 4² layer at batch 16.
    for (const int threads : { 2, 16 }) {
        INFO(threads << " threads");
        setCpuThreadCount(threads);
        checkConvFastAgainstDirect(
            Shape::nchw(7, 6, 9, 9), conv(64, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 2, true), 54);
        checkConvFastAgainstDirect(
            Shape::nchw(5, 8, 6, 6), conv(64, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, true), 55);
        checkConvFastAgainstDirect(Shape::nchw(16, 32, 8, 8),
            conv(64, { 4, 4 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, false), 56);
    }
    setCpuThreadCount(0);
}

TEST_CASE("conv2d: fast processes a large layer in tiles that split output rows", "[cpu][conv2d]")
{
    // K = 64·3·3 = 576 rows: a tile is max(512, 1 MiB / (4·576) = 455) → 512 pixels, which is not a multiple of
    // the 60-pixel output row, so tile boundaries fall inside output rows; 2 images × 8 tiles run as 16 tasks.
    // For tap_gemm a band is ⌈512 / 62⌉ = 9 padded rows, and 60 = 6·9 + 6 leaves a short last band.
    const Shape in = Shape::nchw(2, 64, 60, 60);
    const Conv2d spec = conv(8, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, true);
    checkConvFastAgainstDirect(in, spec, 7);
}

TEST_CASE("conv2d: tap_gemm matches direct with dilation, asymmetric padding, groups and wide kernels",
    "[cpu][conv2d][tap_gemm]")
{
    const std::vector<ConvCase> cases = {
        { Shape::nchw(2, 16, 9, 11), conv(8, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, true) },
        { Shape::nchw(1, 32, 13, 7), conv(6, { 3, 5 }, { 1, 1 }, explicitPad(0, 2, 3, 1), { 2, 1 }, 2, true) },
        { Shape::nchw(1, 48, 20, 17), conv(9, { 5, 3 }, { 1, 1 }, { Padding2d::Mode::Same }, { 1, 2 }, 3, false) },
        { Shape::nchw(3, 20, 6, 40), conv(33, { 2, 4 }, { 1, 1 }, { Padding2d::Mode::Valid }, { 2, 3 }, 1, true) },
        { Shape::nchw(1, 17, 70, 3), conv(5, { 7, 1 }, { 1, 1 }, explicitPad(3, 0, 0, 2), { 1, 1 }, 1, true) },
        { Shape::nchw(2, 64, 3, 300), conv(70, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(2, 0), { 1, 1 }, 1, true) },
        { Shape::nchw(1, 16, 5, 5), conv(4, { 1, 1 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, false) },
        // wide reductions (300 and 144 input channels per group)
        { Shape::nchw(2, 300, 7, 6), conv(40, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, true) },
        { Shape::nchw(1, 2 * 144, 5, 9), conv(2 * 20, { 3, 2 }, { 1, 1 }, explicitPad(1, 0, 2, 1), { 2, 1 }, 2, true) },
    };
    uint64_t seed = 500;
    for (const ConvCase& c : cases) {
        REQUIRE(cpu::fast::conv2dTapGemmApplies(c.spec, c.in.c));
        checkConvFastAgainstDirect(c.in, c.spec, seed += 10);
    }
    // A 1×1 without padding keeps im2col_gemm's pointwise sgemm; stride 2 and few channels keep im2col (without
    // AVX-512; with it the register tile takes them: the next test).
    CHECK_FALSE(cpu::fast::conv2dTapGemmApplies(conv(4, { 1, 1 }, { 1, 1 }, {}, { 1, 1 }, 1, true), 32));
    CHECK_FALSE(cpu::fast::conv2dTapGemmApplies(conv(4, { 3, 3 }, { 2, 2 }, {}, { 1, 1 }, 1, true), 32));
    CHECK_FALSE(cpu::fast::conv2dTapGemmApplies(conv(4, { 3, 3 }, { 1, 1 }, {}, { 1, 1 }, 1, true), 15));
}

TEST_CASE(
    "conv2d: the AVX-512 tile takes strides, 1×1s and the stem, split for many threads", "[cpu][conv2d][tap_gemm]")
{
    // ResNet's stride-2 shapes (3×3 and the 1×1 downsample), its 3-channel 7×7 stem, a stride-3 dilated layer, a 1×1
    // without padding, an odd padded width with stride 2 (the last tile of a row reads past it), and a 7×7 map at
    // batch 1 with 96 output channels (one band: the work splits by output channel blocks).
    const std::vector<ConvCase> cases = {
        { Shape::nchw(1, 64, 20, 20), conv(128, { 3, 3 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, false) },
        { Shape::nchw(2, 64, 14, 14), conv(40, { 1, 1 }, { 2, 2 }, {}, { 1, 1 }, 1, false) },
        { Shape::nchw(1, 3, 37, 33), conv(64, { 7, 7 }, { 2, 2 }, Padding2d::symmetric(3, 3), { 1, 1 }, 1, true) },
        { Shape::nchw(1, 24, 23, 29), conv(33, { 3, 3 }, { 3, 3 }, explicitPad(2, 0, 1, 3), { 2, 2 }, 1, true) },
        { Shape::nchw(2, 20, 9, 13), conv(17, { 1, 1 }, { 1, 1 }, {}, { 1, 1 }, 1, true) },
        { Shape::nchw(1, 32, 15, 15), conv(48, { 3, 3 }, { 2, 2 }, Padding2d::symmetric(0, 0), { 1, 1 }, 2, true) },
        { Shape::nchw(1, 256, 7, 7), conv(96, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, true) },
    };
    uint64_t seed = 900;
    for (const ConvCase& c : cases) {
        CHECK(cpu::fast::conv2dTapAvx512Applies(c.spec, c.in.c, c.spec.out_channels));
        checkConvFastAgainstDirect(c.in, c.spec, seed += 10);
    }
    // Unequal strides and a depthwise layer stay with im2col.
    CHECK_FALSE(cpu::fast::conv2dTapAvx512Applies(conv(32, { 3, 3 }, { 2, 1 }, {}, { 1, 1 }, 1, true), 32, 32));
    CHECK_FALSE(cpu::fast::conv2dTapAvx512Applies(conv(32, { 3, 3 }, { 1, 1 }, {}, { 1, 1 }, 32, true), 32, 32));
}

TEST_CASE("conv2d: bias is added once per output channel", "[cpu][conv2d]")
{
    const Tensor in = tensorOf(Shape::nchw(1, 1, 2, 2), { 1, 2, 3, 4 });
    const Tensor w = tensorOf(Shape::nchw(2, 1, 1, 1), { 1, -1 });
    const Tensor b = tensorOf(Shape::nchw(2, 1, 1, 1), { 10, 20 });
    const Conv2d spec = conv(2, { 1, 1 }, { 1, 1 }, {}, { 1, 1 }, 1, true);
    const LayerShape s = shapeOf(spec, in.shape());
    Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
    cpu::direct::conv2d(in, w, &b, spec, s.resolvedPadding, direct);
    cpu::fast::conv2d(in, w, &b, spec, s.resolvedPadding, fast);
    requireValues(direct, { 11, 12, 13, 14, 19, 18, 17, 16 });
    requireValues(fast, { 11, 12, 13, 14, 19, 18, 17, 16 });
}

TEST_CASE("conv2d: a weight of the wrong shape is an InputError, not a crash", "[cpu][conv2d]")
{
    const Tensor in = randomTensor(Shape::nchw(1, 3, 5, 5), 1);
    const Tensor w = randomTensor(Shape::nchw(4, 2, 3, 3), 2); // needs [4, 3, 3, 3]
    const Conv2d spec = conv(4, { 3, 3 }, { 1, 1 }, {}, { 1, 1 }, 1, false);
    const LayerShape s = shapeOf(spec, in.shape());
    Tensor out(s.out);
    REQUIRE_THROWS_AS(cpu::direct::conv2d(in, w, nullptr, spec, s.resolvedPadding, out), InputError);
    REQUIRE_THROWS_AS(cpu::fast::conv2d(in, w, nullptr, spec, s.resolvedPadding, out), InputError);
    const Tensor shortBias = randomTensor(Shape::nchw(3, 1, 1, 1), 3);
    const Tensor good = randomTensor(Shape::nchw(4, 3, 3, 3), 4);
    REQUIRE_THROWS_WITH(
        cpu::fast::conv2d(in, good, &shortBias, spec, s.resolvedPadding, out), Catch::Contains("bias has 3 values"));
}

// ----------------------------------------------------------------------------------- conv_transpose2d

TEST_CASE("conv_transpose2d: hand-computed cases", "[cpu][conv_transpose2d]")
{
    const Tensor in = tensorOf(Shape::nchw(1, 1, 2, 2), { 1, 2, 3, 4 });
    const Tensor ones = tensorOf(Shape::nchw(1, 1, 2, 2), { 1, 1, 1, 1 });
    using Fn = void (*)(const Tensor&, const Tensor&, const Tensor*, const ConvTranspose2d&, const Padding2d&, Tensor&);
    const Fn fn = GENERATE(values<Fn>({ &cpu::direct::convTranspose2d, &cpu::fast::convTranspose2d }));
    SECTION("stride 2 copies each pixel into a 2x2 block")
    {
        const auto spec = convT(1, { 2, 2 }, { 2, 2 }, {}, { 0, 0 }, { 1, 1 }, 1, false);
        const LayerShape s = shapeOf(spec, in.shape());
        REQUIRE(s.out == Shape::nchw(1, 1, 4, 4));
        Tensor out = poisonedOutput(s);
        fn(in, ones, nullptr, spec, s.resolvedPadding, out);
        requireValues(out, { 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4 });
    }
    SECTION("stride 1 overlaps the scattered kernels (the full convolution)")
    {
        const auto spec = convT(1, { 2, 2 }, { 1, 1 }, {}, { 0, 0 }, { 1, 1 }, 1, false);
        const LayerShape s = shapeOf(spec, in.shape());
        Tensor out = poisonedOutput(s);
        fn(in, ones, nullptr, spec, s.resolvedPadding, out);
        requireValues(out, { 1, 3, 2, 4, 10, 6, 3, 7, 4 });
    }
    SECTION("padding crops the full output; output_padding adds bias-only rows and columns")
    {
        const Tensor bias = tensorOf(Shape::nchw(1, 1, 1, 1), { 0.5f });
        const auto cropped = convT(1, { 2, 2 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 0, 0 }, { 1, 1 }, 1, true);
        const LayerShape s = shapeOf(cropped, in.shape());
        REQUIRE(s.out == Shape::nchw(1, 1, 2, 2));
        Tensor out = poisonedOutput(s);
        fn(in, ones, &bias, cropped, s.resolvedPadding, out);
        requireValues(out, { 1.5, 2.5, 3.5, 4.5 });

        const auto padded = convT(1, { 2, 2 }, { 2, 2 }, {}, { 1, 1 }, { 1, 1 }, 1, true);
        const LayerShape sp = shapeOf(padded, in.shape());
        REQUIRE(sp.out == Shape::nchw(1, 1, 5, 5));
        Tensor outPadded = poisonedOutput(sp);
        fn(in, ones, &bias, padded, sp.resolvedPadding, outPadded);
        requireValues(outPadded,
            { 1.5, 1.5, 2.5, 2.5, 0.5, //
                1.5, 1.5, 2.5, 2.5, 0.5, //
                3.5, 3.5, 4.5, 4.5, 0.5, //
                3.5, 3.5, 4.5, 4.5, 0.5, //
                0.5, 0.5, 0.5, 0.5, 0.5 });
    }
}

TEST_CASE("conv_transpose2d: is the adjoint of conv2d with the same weight tensor", "[cpu][conv_transpose2d]")
{
    // PyTorch defines ConvTranspose2d as the gradient of Conv2d with respect to its input, so with one
    // weight tensor W ([C_out, C_in/g, kh, kw] for the convolution is [C_in', C_out'/g, kh, kw] for the
    // transpose) <conv(x), y> = <x, convT(y)>. output_padding restores the rows the convolution's floor lost.
    // Both sides are sums of float-rounded outputs, hence agreement to 1e-5, not to double precision.
    struct Case {
        Shape x;
        Conv2d spec;
    };
    const std::vector<Case> cases = {
        { Shape::nchw(1, 2, 7, 6), conv(3, { 3, 3 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, false) },
        { Shape::nchw(2, 4, 9, 10), conv(6, { 3, 2 }, { 3, 2 }, explicitPad(2, 0, 1, 1), { 1, 2 }, 2, false) },
        { Shape::nchw(1, 3, 8, 8), conv(3, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(2, 2), { 2, 2 }, 3, false) },
    };
    uint64_t seed = 500;
    for (const Case& c : cases) {
        const LayerShape cs = shapeOf(c.spec, c.x);
        INFO(describe(c.x, c.spec, cs));
        const Padding2d& p = cs.resolvedPadding;
        auto outputPadding = [&](int axis, int64_t inSize, int64_t outSize, int64_t before, int64_t after) {
            const int64_t k = c.spec.kernel_size[axis], s = c.spec.stride[axis], d = c.spec.dilation[axis];
            return inSize - ((outSize - 1) * s - before - after + d * (k - 1) + 1);
        };
        const ConvTranspose2d t = convT(c.x.c, c.spec.kernel_size, c.spec.stride, p,
            { outputPadding(0, c.x.h, cs.out.h, p.top, p.bottom), outputPadding(1, c.x.w, cs.out.w, p.left, p.right) },
            c.spec.dilation, c.spec.groups, false);
        const LayerShape ts = shapeOf(t, cs.out);
        REQUIRE(ts.out == c.x);

        const Tensor x = randomTensor(c.x, seed++);
        const Tensor y = randomTensor(cs.out, seed++);
        const Tensor w = randomTensor(
            Shape::nchw(cs.out.c, c.x.c / c.spec.groups, c.spec.kernel_size[0], c.spec.kernel_size[1]), seed++);
        Tensor convX = poisonedOutput(cs);
        Tensor convTY = poisonedOutput(ts);
        cpu::direct::conv2d(x, w, nullptr, c.spec, p, convX);
        cpu::direct::convTranspose2d(y, w, nullptr, t, ts.resolvedPadding, convTY);
        CHECK(dot(convX, y) == Approx(dot(x, convTY)).epsilon(1e-5));
    }
}

TEST_CASE("conv_transpose2d: fast (sgemm + col2im) matches direct on a fixed sweep", "[cpu][conv_transpose2d]")
{
    struct Case {
        Shape in;
        ConvTranspose2d spec;
    };
    const std::vector<Case> cases = {
        { Shape::nchw(1, 3, 5, 6),
            convT(4, { 3, 3 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 1, 1 }, { 1, 1 }, 1, true) },
        { Shape::nchw(2, 4, 4, 7), convT(6, { 4, 3 }, { 2, 3 }, explicitPad(1, 0, 2, 1), { 0, 2 }, { 1, 1 }, 2, true) },
        { Shape::nchw(1, 6, 7, 5),
            convT(6, { 3, 3 }, { 1, 2 }, Padding2d::symmetric(2, 1), { 0, 1 }, { 2, 2 }, 6, false) },
        { Shape::nchw(3, 2, 3, 3), convT(5, { 1, 1 }, { 1, 1 }, {}, { 0, 0 }, { 1, 1 }, 1, true) },
        { Shape::nchw(1, 4, 6, 6), convT(2, { 5, 5 }, { 3, 3 }, explicitPad(0, 3, 4, 0), { 2, 1 }, { 1, 1 }, 2, true) },
        { Shape::nchw(2, 3, 1, 1), convT(4, { 4, 4 }, { 1, 1 }, {}, { 0, 0 }, { 1, 1 }, 1, true) },
        { Shape::nchw(1, 2, 5, 4), convT(3, { 2, 3 }, { 2, 2 }, {}, { 1, 2 }, { 3, 3 }, 1, false) },
    };
    uint64_t seed = 300;
    for (const Case& c : cases)
        checkConvTransposeFastAgainstDirect(c.in, c.spec, seed += 10);
}

TEST_CASE("conv_transpose2d: fast splits a large layer into chunks of input pixels", "[cpu][conv_transpose2d]")
{
    // Kc = 64·4·4 = 1024 column rows over 48·48 = 2304 input pixels ≈ 9.4 MB, above the 8 MiB floor and
    // input + output (2.4 MB): chunks of 2048 pixels, which end inside an input row.
    const Shape in = Shape::nchw(1, 4, 48, 48);
    const auto spec = convT(64, { 4, 4 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 0, 0 }, { 1, 1 }, 1, true);
    checkConvTransposeFastAgainstDirect(in, spec, 11);
}
