// The CPU ops other than convolution: hand-computed small cases for the PyTorch rules that are easy to get
// wrong (pooling divisors and padding, batch-norm, activations, linear, softmax) and the fast:: versions
// against the direct:: reference with poisoned outputs. Convolutions are in cpu_conv_ops_test.cpp; random pooling
// shapes on every cpu algorithm are the cross-backend test (tests/backends).
#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/random.h"
#include "tests/compute/cpu_test_helpers.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace convscope;
using namespace convscope::test;

// --------------------------------------------------------------------------------------------- pooling

TEST_CASE("maxpool2d: padding is -inf, so an all-negative border stays negative", "[cpu][pool]")
{
    const Tensor in = tensorOf(Shape::nchw(1, 1, 3, 3), { -1, -2, -3, -4, -5, -6, -7, -8, -9 });
    MaxPool2d spec;
    spec.kernel_size = { 2, 2 };
    spec.stride = Pair { 2, 2 };
    spec.padding = Padding2d::symmetric(1, 1);
    const LayerShape s = shapeOf(spec, in.shape());
    REQUIRE(s.out == Shape::nchw(1, 1, 2, 2));
    Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
    cpu::direct::maxPool2d(in, spec, s.resolvedPadding, direct);
    cpu::fast::maxPool2d(in, spec, s.resolvedPadding, fast);
    requireValues(direct, { -1, -2, -4, -5 }); // zero padding would give 0 in three corners
    requireValues(fast, { -1, -2, -4, -5 });
}

TEST_CASE("maxpool2d: dilation and ceil_mode", "[cpu][pool]")
{
    const Tensor in = tensorOf(Shape::nchw(1, 1, 4, 4), { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 });
    SECTION("a 2x2 kernel with dilation 2 takes every second pixel")
    {
        MaxPool2d spec;
        spec.kernel_size = { 2, 2 };
        spec.stride = Pair { 1, 1 };
        spec.dilation = { 2, 2 };
        const LayerShape s = shapeOf(spec, in.shape());
        REQUIRE(s.out == Shape::nchw(1, 1, 2, 2));
        Tensor out = poisonedOutput(s);
        cpu::direct::maxPool2d(in, spec, s.resolvedPadding, out);
        requireValues(out, { 11, 12, 15, 16 });
    }
    SECTION("ceil_mode keeps the last, partial window and clips it to the input")
    {
        MaxPool2d spec;
        spec.kernel_size = { 3, 3 };
        spec.stride = Pair { 2, 2 };
        spec.ceil_mode = true;
        const LayerShape s = shapeOf(spec, in.shape());
        REQUIRE(s.out == Shape::nchw(1, 1, 2, 2));
        Tensor out = poisonedOutput(s);
        cpu::fast::maxPool2d(in, spec, s.resolvedPadding, out);
        requireValues(out, { 11, 12, 15, 16 });
    }
}

TEST_CASE("avgpool2d: PyTorch's divisor with count_include_pad and ceil_mode", "[cpu][pool]")
{
    // x = 1..16 in a 4x4 image, kernel 3, stride 2, padding 1, ceil_mode → 3x3 outputs. Along each axis the
    // windows are [−1, 2) → clipped [0, 2) (pool size 3), [1, 4) (3), and [3, 5) (the end clipped first to the
    // padded size 4 + 1 = 5, so pool size 2) → clipped [3, 4).
    const Tensor in = tensorOf(Shape::nchw(1, 1, 4, 4), { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 });
    AvgPool2d spec;
    spec.kernel_size = { 3, 3 };
    spec.stride = Pair { 2, 2 };
    spec.padding = Padding2d::symmetric(1, 1);
    spec.ceil_mode = true;
    using Fn = void (*)(const Tensor&, const AvgPool2d&, const Padding2d&, Tensor&);
    const Fn fn = GENERATE(values<Fn>({ &cpu::direct::avgPool2d, &cpu::fast::avgPool2d }));
    SECTION("count_include_pad = true divides by the window inside the padded input")
    {
        spec.count_include_pad = true;
        const LayerShape s = shapeOf(spec, in.shape());
        REQUIRE(s.out == Shape::nchw(1, 1, 3, 3));
        Tensor out = poisonedOutput(s);
        fn(in, spec, s.resolvedPadding, out);
        // (0,0): (1+2+5+6)/9; (0,2): (4+8)/(3·2); (2,2): 16/(2·2)
        requireValues(
            out, { 14.0 / 9, 30.0 / 9, 12.0 / 6, 57.0 / 9, 99.0 / 9, 36.0 / 6, 27.0 / 6, 45.0 / 6, 16.0 / 4 });
    }
    SECTION("count_include_pad = false divides by the real pixels only")
    {
        spec.count_include_pad = false;
        const LayerShape s = shapeOf(spec, in.shape());
        Tensor out = poisonedOutput(s);
        fn(in, spec, s.resolvedPadding, out);
        requireValues(out, { 3.5, 5, 6, 9.5, 11, 12, 13.5, 15, 16 });
    }
    SECTION("divisor_override replaces both")
    {
        spec.divisor_override = 2;
        const LayerShape s = shapeOf(spec, in.shape());
        Tensor out = poisonedOutput(s);
        fn(in, spec, s.resolvedPadding, out);
        requireValues(out, { 7, 15, 6, 28.5, 49.5, 18, 13.5, 22.5, 8 });
    }
}

TEST_CASE("avgpool2d: a ceil_mode window past the input without padding counts only real pixels", "[cpu][pool]")
{
    // Kernel 3, stride 2, no padding on 4x4: the second window along each axis is [2, 5), clipped to [2, 4)
    // before pool_size is taken, so even count_include_pad = true divides by 2 there, not by 3.
    const Tensor in = tensorOf(Shape::nchw(1, 1, 4, 4), { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 });
    AvgPool2d spec;
    spec.kernel_size = { 3, 3 };
    spec.stride = Pair { 2, 2 };
    spec.ceil_mode = true;
    spec.count_include_pad = true;
    const LayerShape s = shapeOf(spec, in.shape());
    REQUIRE(s.out == Shape::nchw(1, 1, 2, 2));
    Tensor out = poisonedOutput(s);
    cpu::direct::avgPool2d(in, spec, s.resolvedPadding, out);
    requireValues(out, { 54.0 / 9, 45.0 / 6, 72.0 / 6, 54.0 / 4 });
}

TEST_CASE("global_avgpool2d: one mean per channel", "[cpu][pool]")
{
    const Tensor in = tensorOf(Shape::nchw(2, 2, 1, 3), { 1, 2, 3, -1, -1, 5, 0, 0, 0, 10, 20, 30 });
    const LayerShape s = shapeOf(GlobalAvgPool2d {}, in.shape());
    Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
    cpu::direct::globalAvgPool2d(in, direct);
    cpu::fast::globalAvgPool2d(in, fast);
    requireValues(direct, { 2, 1, 0, 20 });
    requireValues(fast, { 2, 1, 0, 20 });

    const Tensor big = randomTensor(Shape::nchw(2, 3, 150, 170), 5);
    const LayerShape sb = shapeOf(GlobalAvgPool2d {}, big.shape());
    Tensor bigDirect = poisonedOutput(sb), bigFast = poisonedOutput(sb);
    cpu::direct::globalAvgPool2d(big, bigDirect);
    cpu::fast::globalAvgPool2d(big, bigFast);
    requireClose(bigFast, bigDirect);
}

// ----------------------------------------------------------------------------------- batchnorm2d

TEST_CASE("batchnorm2d: inference formula, with and without affine parameters", "[cpu][batchnorm]")
{
    // Channel 0: mean 1, var 3, eps 1 → (x − 1) / 2 · 2 + 0.5; channel 1: mean −1, var 0, eps 1 → (x + 1) · −1 + 0.
    const Tensor in = tensorOf(Shape::nchw(1, 2, 1, 2), { 3, 1, 0, 2 });
    const Tensor mean = tensorOf(Shape::nchw(2, 1, 1, 1), { 1, -1 });
    const Tensor var = tensorOf(Shape::nchw(2, 1, 1, 1), { 3, 0 });
    const Tensor weight = tensorOf(Shape::nchw(2, 1, 1, 1), { 2, -1 });
    const Tensor bias = tensorOf(Shape::nchw(2, 1, 1, 1), { 0.5, 0 });
    const LayerShape s = shapeOf(BatchNorm2d {}, in.shape());
    using Fn = void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor*, const Tensor*, double, Tensor&);
    for (Fn fn : { &cpu::direct::batchNorm2d, &cpu::fast::batchNorm2d }) {
        Tensor out = poisonedOutput(s);
        fn(in, mean, var, &weight, &bias, 1.0, out);
        requireValues(out, { 2.5, 0.5, -1, -3 });
        Tensor plain = poisonedOutput(s);
        fn(in, mean, var, nullptr, nullptr, 1.0, plain);
        requireValues(plain, { 1, 0, 1, 3 });
    }
}

TEST_CASE("batchnorm2d: fast matches direct", "[cpu][batchnorm]")
{
    const Shape shape = Shape::nchw(3, 5, 7, 6);
    const Tensor in = randomTensor(shape, 1);
    const Tensor mean = randomTensor(Shape::nchw(5, 1, 1, 1), 2);
    Tensor var = randomTensor(Shape::nchw(5, 1, 1, 1), 3);
    for (int64_t i = 0; i < var.numel(); ++i)
        var.data()[i] = std::fabs(var.data()[i]) + 0.1f;
    const Tensor weight = randomTensor(Shape::nchw(5, 1, 1, 1), 4);
    const Tensor bias = randomTensor(Shape::nchw(5, 1, 1, 1), 5);
    const LayerShape s = shapeOf(BatchNorm2d {}, shape);
    Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
    cpu::direct::batchNorm2d(in, mean, var, &weight, &bias, 1e-5, direct);
    cpu::fast::batchNorm2d(in, mean, var, &weight, &bias, 1e-5, fast);
    requireClose(fast, direct);
    const Tensor wrongMean = randomTensor(Shape::nchw(4, 1, 1, 1), 6);
    REQUIRE_THROWS_AS(cpu::fast::batchNorm2d(in, wrongMean, var, nullptr, nullptr, 1e-5, fast), InputError);
}

// ----------------------------------------------------------------------------------- activations

TEST_CASE("activations: PyTorch's definitions at known points", "[cpu][activation]")
{
    const Tensor in = tensorOf(Shape::nchw(1, 1, 1, 5), { -2, -1, 0, 0.5, 3 });
    struct Expected {
        LayerSpec spec;
        std::vector<double> values;
    };
    const std::vector<Expected> cases = {
        { ReLU {}, { 0, 0, 0, 0.5, 3 } },
        { LeakyReLU { 0.1 }, { -0.2, -0.1, 0, 0.5, 3 } },
        { Sigmoid {}, { 0.11920292202211755, 0.2689414213699951, 0.5, 0.6224593312018546, 0.9525741268224334 } },
        { Tanh {}, { -0.9640275800758169, -0.7615941559557649, 0, 0.46211715726000974, 0.9950547536867305 } },
        { ELU { 1.0 }, { -0.8646647167633873, -0.6321205588285577, 0, 0.5, 3 } },
        { ELU { 0.5 }, { -0.43233235838169365, -0.31606027941427883, 0, 0.5, 3 } },
    };
    for (const Expected& e : cases) {
        INFO(layerSummary(e.spec));
        const LayerShape s = shapeOf(e.spec, in.shape());
        Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
        cpu::direct::activation(in, e.spec, direct);
        cpu::fast::activation(in, e.spec, fast);
        for (size_t i = 0; i < e.values.size(); ++i) {
            CHECK(direct.data()[i] == Approx(e.values[i]).margin(1e-7));
            CHECK(fast.data()[i] == Approx(e.values[i]).margin(1e-6));
        }
    }
    Tensor out(in.shape());
    REQUIRE_THROWS_AS(cpu::direct::activation(in, Linear {}, out), InputError);
}

TEST_CASE("activations: fast matches direct on a large tensor; ReLU keeps NaN", "[cpu][activation]")
{
    const Tensor in = randomTensor(Shape::nchw(2, 3, 31, 17), 9);
    for (const LayerSpec& spec : { LayerSpec { ReLU {} }, LayerSpec { LeakyReLU { 0.2 } }, LayerSpec { Sigmoid {} },
             LayerSpec { Tanh {} }, LayerSpec { ELU { 1.5 } } }) {
        INFO(layerSummary(spec));
        const LayerShape s = shapeOf(spec, in.shape());
        Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
        cpu::direct::activation(in, spec, direct);
        cpu::fast::activation(in, spec, fast);
        requireClose(fast, direct);
    }
    const Tensor nan = tensorOf(Shape::nchw(1, 1, 1, 1), { std::numeric_limits<float>::quiet_NaN() });
    Tensor out(nan.shape());
    cpu::fast::activation(nan, ReLU {}, out);
    CHECK(std::isnan(out.data()[0]));
}

// ------------------------------------------------------------------------------------- linear

TEST_CASE("linear: out = in · Wᵀ + b on a flat input and on [N, C, 1, 1]", "[cpu][linear]")
{
    const Tensor w = tensorOf(Shape::nchw(2, 3, 1, 1), { 1, 0, -1, 2, 1, 0 });
    const Tensor b = tensorOf(Shape::nchw(2, 1, 1, 1), { 0.5, -1 });
    Linear spec;
    spec.out_features = 2;
    const Tensor flat = tensorOf(Shape::features(2, 3), { 1, 2, 3, -1, 0, 4 });
    const Tensor image = tensorOf(Shape::nchw(2, 3, 1, 1), { 1, 2, 3, -1, 0, 4 });
    for (const Tensor* in : { &flat, &image }) {
        const LayerShape s = shapeOf(spec, in->shape());
        REQUIRE(s.out == Shape::features(2, 2));
        Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
        cpu::direct::linear(*in, w, &b, direct);
        cpu::fast::linear(*in, w, &b, fast);
        requireValues(direct, { -1.5, 3, -4.5, -3 });
        requireValues(fast, { -1.5, 3, -4.5, -3 });
    }
}

TEST_CASE("linear: fast (sgemm) matches direct", "[cpu][linear]")
{
    Linear spec;
    spec.out_features = 37;
    const Tensor in = randomTensor(Shape::features(5, 301), 1);
    const Tensor w = randomTensor(Shape::nchw(37, 301, 1, 1), 2);
    const Tensor b = randomTensor(Shape::nchw(37, 1, 1, 1), 3);
    const LayerShape s = shapeOf(spec, in.shape());
    Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
    cpu::direct::linear(in, w, &b, direct);
    cpu::fast::linear(in, w, &b, fast);
    requireClose(fast, direct);
    cpu::direct::linear(in, w, nullptr, direct);
    cpu::fast::linear(in, w, nullptr, fast);
    requireClose(fast, direct);
    const Tensor wrong = randomTensor(Shape::nchw(37, 300, 1, 1), 4);
    REQUIRE_THROWS_AS(cpu::fast::linear(in, wrong, nullptr, fast), InputError);
}

// ------------------------------------------------------------------------------------ softmax

TEST_CASE("softmax: over features, stable for huge logits", "[cpu][softmax]")
{
    const Tensor in = tensorOf(Shape::features(2, 3), { 1, 2, 3, 1000, 1000, -1000 });
    const LayerShape s = shapeOf(Softmax {}, in.shape());
    Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
    cpu::direct::softmax(in, direct);
    cpu::fast::softmax(in, fast);
    requireValues(direct, { 0.09003057317038046, 0.24472847105479764, 0.6652409557748218, 0.5, 0.5, 0 });
    requireValues(fast, { 0.09003057317038046, 0.24472847105479764, 0.6652409557748218, 0.5, 0.5, 0 });
}

TEST_CASE("softmax: over the channels of every pixel of a 4-D tensor", "[cpu][softmax]")
{
    const Shape shape = Shape::nchw(2, 4, 3, 5);
    const Tensor in = randomTensor(shape, 12);
    const LayerShape s = shapeOf(Softmax {}, shape);
    Tensor direct = poisonedOutput(s), fast = poisonedOutput(s);
    cpu::direct::softmax(in, direct);
    cpu::fast::softmax(in, fast);
    requireClose(fast, direct);
    for (int64_t n = 0; n < shape.n; ++n) {
        for (int64_t h = 0; h < shape.h; ++h) {
            for (int64_t w = 0; w < shape.w; ++w) {
                double sum = 0;
                for (int64_t c = 0; c < shape.c; ++c)
                    sum += direct.at(n, c, h, w);
                CHECK(sum == Approx(1.0).epsilon(1e-6));
            }
        }
    }
    // The largest channel at a pixel keeps the largest probability: the ordering survives.
    int64_t best = 0;
    for (int64_t c = 1; c < shape.c; ++c)
        if (in.at(1, c, 2, 4) > in.at(1, best, 2, 4))
            best = c;
    for (int64_t c = 0; c < shape.c; ++c)
        CHECK(direct.at(1, c, 2, 4) <= direct.at(1, best, 2, 4));
}
