// cuda.fft (kernels/cuda/conv2d_fft.cu) against cpu.direct: stride-1 shapes with padding, dilation, groups and a
// fused activation, forced small tiles (many overlap-save tiles, partial ones at the edges) and forced small batches
// (several passes of the transforms), outputs poisoned before each pass; the fft bench suite's cases, including the
// lecture's 10000×10000 image, against sums in double; and the refusals. Relative L2 ≤ 1e-5. Without a usable GPU
// every case prints "SKIPPED: <reason>".
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/load_input.h"
#include "compute/materialize.h"
#include "compute/network.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using namespace convscope;
using convscope::test::oneLayer;
using convscope::test::randomParameters;

namespace {

using test::conv2dSpec;

Padding2d pad4(int64_t top, int64_t bottom, int64_t left, int64_t right)
{
    return { Padding2d::Mode::Explicit, top, bottom, left, right };
}

// cuda.fft with `extra` on a one-layer network against cpu.direct.
void checkFft(Backend& cuda, const Shape& in, const Conv2d& conv, uint64_t seed,
    const std::map<std::string, std::string>& extra = {})
{
    Network net = oneLayer(in, conv);
    const ShapeReport shapes = inferShapes(net);
    INFO(layerSummary(conv) << " on " << in.str() << " " << shapes.firstError());
    REQUIRE(shapes.ok());
    REQUIRE(cuda.supports("fft", conv, shapes.layers[0]).supported);
    randomParameters(net, shapes, seed);
    const Tensor input = test::randomTensor(shapes.input, seed + 7);
    auto ref = BackendRegistry::instance().find("cpu")->createSession("direct", {});
    ref->prepare(net, shapes);
    ref->runPass(input);
    SessionOptions options;
    options.extra = extra;
    options.extra["poison_outputs"] = "1";
    auto fft = cuda.createSession("fft", options);
    fft->prepare(net, shapes);
    INFO(fft->layerNote(0));
    for (int pass = 0; pass < 2; ++pass) {
        fft->runPass(input);
        const ErrorMetrics m = compare(fft->fetchOutput(0, nullptr), ref->fetchOutput(0, nullptr));
        INFO("relL2 " << m.relL2 << " maxAbs " << m.maxAbs << " " << m.note);
        CHECK(m.valid);
        CHECK(m.relL2 <= 1e-5);
    }
}

} // namespace

TEST_CASE("cuda.fft matches cpu.direct on stride-1 shapes, forced tiles and batches", "[gpu][cuda][fft]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    Conv2d fused = conv2dSpec(4, { 5, 5 }, Padding2d::symmetric(2, 2));
    fused.fused_activation = { FusedActivation::Kind::LeakyReLU, 0.1 };
    const std::vector<std::pair<Shape, Conv2d>> cases = {
        { Shape::nchw(1, 1, 20, 20), conv2dSpec(1, { 5, 5 }, Padding2d::symmetric(0, 0)) },
        { Shape::nchw(2, 3, 17, 23), conv2dSpec(4, { 3, 3 }, Padding2d::symmetric(1, 1)) },
        { Shape::nchw(1, 2, 19, 13), conv2dSpec(3, { 3, 5 }, pad4(0, 2, 3, 1)) },
        { Shape::nchw(1, 2, 16, 16), conv2dSpec(2, { 4, 4 }, Padding2d { Padding2d::Mode::Same }) },
        { Shape::nchw(1, 3, 21, 18), conv2dSpec(2, { 3, 3 }, Padding2d::symmetric(2, 2), { 2, 3 }) },
        { Shape::nchw(2, 4, 15, 15), conv2dSpec(6, { 3, 3 }, Padding2d::symmetric(1, 1), { 1, 1 }, 2) },
        { Shape::nchw(1, 5, 14, 11), conv2dSpec(5, { 5, 5 }, Padding2d::symmetric(2, 2), { 1, 1 }, 5, false) },
        { Shape::nchw(1, 16, 24, 24), conv2dSpec(12, { 7, 7 }, Padding2d::symmetric(3, 3)) }, // 8 + 4 channel tiles
        { Shape::nchw(1, 1, 9, 9), conv2dSpec(2, { 3, 3 }, Padding2d::symmetric(4, 4)) },
        { Shape::nchw(2, 3, 18, 18), fused },
    };
    uint64_t seed = 1901;
    for (const auto& [in, conv] : cases) {
        checkFft(*cuda, in, conv, seed += 10);
        checkFft(*cuda, in, conv, seed += 10, { { "fft_tile", "16" } });
        checkFft(*cuda, in, conv, seed += 10, { { "fft_tile", "16" }, { "fft_batch", "3" } });
    }
}

TEST_CASE("cuda.fft: the fft suite's cases, the lecture's 10000x10000 included, within 1e-5", "[gpu][cuda][fft]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    // Sizes as `convscope-cli bench --suite fft`; the reference is summed in double at sampled positions (all of
    // the 1000² image would take cpu.direct a second, the others minutes to hours).
    struct Case {
        int64_t channels, size, kernel, padding;
        uint64_t seed;
    };
    for (const Case& c : { Case { 1, 1000, 15, 0, 300 }, Case { 1, 10000, 15, 0, 301 }, Case { 64, 256, 3, 1, 302 },
             Case { 64, 256, 7, 3, 303 }, Case { 64, 256, 15, 7, 304 }, Case { 64, 256, 31, 15, 305 } }) {
        INFO(c.channels << " channels, " << c.size << "², kernel " << c.kernel);
        Network net = singleConvNetwork("fft case", 1, c.channels, c.size, c.channels, c.kernel, 1, c.padding, c.seed);
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        materializeParameters(net, shapes);
        const Tensor input = loadInput(net.input, net.baseDir);
        auto fft = cuda->createSession("fft", {});
        fft->prepare(net, shapes);
        fft->runPass(input);
        const std::string note = fft->layerNote(0);
        INFO(note);
        CHECK(note.find("cuFFT") == 0);
        CHECK(note.find("workspace") != std::string::npos);
        const Layer& l = net.layers[0];
        const double err = test::sampledConv2dRelL2(fft->fetchOutput(0, nullptr), input, *l.weight, l.bias.get(),
            std::get<Conv2d>(l.spec), shapes.layers[0].resolvedPadding, 2000, c.seed);
        INFO("relative L2 " << err);
        CHECK(err <= 1e-5);
        CHECK(err > 0);
    }
}

TEST_CASE("cuda.fft refuses stride 2 with a reason, and bad options by name", "[gpu][cuda][fft]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    Conv2d strided = conv2dSpec(4, { 3, 3 }, Padding2d::symmetric(1, 1));
    strided.stride = { 2, 1 };
    const Support s = cuda->supports("fft", strided, inferLayer(strided, Shape::nchw(1, 3, 16, 16)));
    CHECK_FALSE(s.supported);
    CHECK_THAT(s.reason, Catch::Contains("cuda.fft") && Catch::Contains("stride 2×1"));
    CHECK(cuda->supports("fft", MaxPool2d {}, inferLayer(MaxPool2d {}, Shape::nchw(1, 3, 16, 16))).supported);
    SessionOptions bad;
    bad.extra["fft_batch"] = "0";
    CHECK_THROWS_AS(cuda->createSession("fft", bad), InputError);
    bad.extra = { { "fft_tile", "2" } };
    CHECK_THROWS_AS(cuda->createSession("fft", bad), InputError);
}
