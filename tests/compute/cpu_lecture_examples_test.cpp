// The worked examples of the convolution lecture, checked on both CPU algorithms and, end to end, through a
// cpu backend session. Numbers are PyTorch's (nn.Conv2d is a cross-correlation: the kernel is not flipped).
#include "compute/cpu/cpu_backend.h"
#include "compute/cpu/cpu_ops.h"
#include "tests/compute/cpu_test_helpers.h"

using namespace convscope;
using namespace convscope::test;

namespace {

Tensor edgeInput()
{
    return tensorOf(Shape::nchw(1, 1, 5, 5),
        { 7, 2, 3, 3, 8, //
            4, 5, 3, 8, 4, //
            3, 3, 2, 8, 4, //
            2, 8, 7, 2, 7, //
            5, 4, 4, 5, 4 });
}

Tensor verticalEdgeKernel() { return tensorOf(Shape::nchw(1, 1, 3, 3), { 1, 0, -1, 1, 0, -1, 1, 0, -1 }); }

Tensor paddedInput()
{
    return tensorOf(Shape::nchw(1, 1, 5, 5),
        { 2, 2, 3, 3, 3, //
            0, 1, 3, 0, 3, //
            2, 3, 0, 1, 3, //
            3, 3, 2, 1, 2, //
            3, 3, 0, 2, 3 });
}

Tensor paddedKernel() { return tensorOf(Shape::nchw(1, 1, 3, 3), { 2, 0, 1, 1, 0, 0, 0, 1, 1 }); }

Conv2d conv3x3(int64_t stride, int64_t padding)
{
    Conv2d c;
    c.out_channels = 1;
    c.kernel_size = { 3, 3 };
    c.stride = { stride, stride };
    c.padding = Padding2d::symmetric(padding, padding);
    c.bias = false;
    return c;
}

using ConvFn = void (*)(const Tensor&, const Tensor&, const Tensor*, const Conv2d&, const Padding2d&, Tensor&);

} // namespace

TEST_CASE("lecture: a vertical-edge kernel on a 5x5 image gives 6 at the top left", "[cpu][lecture]")
{
    const Tensor in = edgeInput();
    const Tensor w = verticalEdgeKernel();
    const Conv2d spec = conv3x3(1, 0);
    const LayerShape s = shapeOf(spec, in.shape());
    REQUIRE(s.out == Shape::nchw(1, 1, 3, 3));
    for (ConvFn fn : { &cpu::direct::conv2d, &cpu::fast::conv2d }) {
        Tensor out = poisonedOutput(s);
        fn(in, w, nullptr, spec, s.resolvedPadding, out);
        // Top left: (7 + 4 + 3) − (3 + 3 + 2) = 6; the left column minus the right column of each window.
        requireValues(out, { 6, -9, -8, -3, -2, -3, -3, 0, -2 });
    }
}

TEST_CASE("lecture: padding 1 and stride 2 on a 5x5 image", "[cpu][lecture]")
{
    const Tensor in = paddedInput();
    const Tensor w = paddedKernel();

    SECTION("stride 2 gives a 3x3 output sampled at every second position")
    {
        const Conv2d spec = conv3x3(2, 1);
        const LayerShape s = shapeOf(spec, in.shape());
        REQUIRE(s.out == Shape::nchw(1, 1, 3, 3));
        for (ConvFn fn : { &cpu::direct::conv2d, &cpu::fast::conv2d }) {
            Tensor out = poisonedOutput(s);
            fn(in, w, nullptr, spec, s.resolvedPadding, out);
            // out[0][1]: window rows −1..1, columns 1..3: the padding row gives 0, [2 3 3]·[1 0 0] = 2,
            // [1 3 0]·[0 1 1] = 3, so 5.
            requireValues(out, { 1, 5, 6, 7, 8, 3, 3, 10, 4 });
        }
    }

    SECTION("stride 1 gives the full 5x5 map; its top-left 3x3 block is [[1 6 5] [7 10 9] [7 10 8]]")
    {
        const Conv2d spec = conv3x3(1, 1);
        const LayerShape s = shapeOf(spec, in.shape());
        REQUIRE(s.out == Shape::nchw(1, 1, 5, 5));
        for (ConvFn fn : { &cpu::direct::conv2d, &cpu::fast::conv2d }) {
            Tensor out = poisonedOutput(s);
            fn(in, w, nullptr, spec, s.resolvedPadding, out);
            requireValues(out,
                { 1, 6, 5, 6, 6, //
                    7, 10, 9, 16, 9, //
                    7, 10, 8, 12, 3, //
                    9, 10, 12, 10, 6, //
                    3, 11, 10, 6, 4 });
        }
    }
}

TEST_CASE("lecture: the edge example runs end to end through both cpu algorithms", "[cpu][lecture][backend]")
{
    Network net;
    net.name = "lecture edge";
    net.input = InputSpec { 1, 1, 5, 5, false, "random" };
    Layer conv;
    conv.name = "edge";
    Conv2d spec = conv3x3(1, 0);
    spec.bias = true;
    conv.spec = spec;
    conv.weight = shared(verticalEdgeKernel());
    conv.bias = shared(tensorOf(Shape::nchw(1, 1, 1, 1), { 0.5f }));
    net.layers.push_back(conv);
    Layer relu;
    relu.name = "relu";
    relu.spec = ReLU {};
    net.layers.push_back(relu);

    const ShapeReport shapes = inferShapes(net);
    INFO(shapes.firstError());
    REQUIRE(shapes.ok());
    const auto backend = makeCpuBackend();
    for (const char* algorithm : { "direct", "im2col_gemm" }) {
        INFO(algorithm);
        auto session = backend->createSession(algorithm, {});
        session->prepare(net, shapes);
        const PassTiming timing = session->runPass(edgeInput());
        REQUIRE(timing.layerMs.size() == 2);
        double ms = -1;
        requireValues(session->fetchOutput(0, &ms), { 6.5, -8.5, -7.5, -2.5, -1.5, -2.5, -2.5, 0.5, -1.5 });
        CHECK(ms >= 0);
        requireValues(session->fetchOutput(1, &ms), { 6.5, 0, 0, 0, 0, 0, 0, 0.5, 0 });
    }
}
