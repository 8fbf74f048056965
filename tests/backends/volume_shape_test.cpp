// Rank-5 tensors (N, C, D, H, W): the shape's count and text, the NCDHW layout, .npy round trips, network inputs
// of volumes and the refusals a volume meets at a 2-D layer.
#include "compute/error.h"
#include "compute/load_input.h"
#include "compute/network.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "compute/tensor.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace convscope;
using Catch::Matchers::Contains;

TEST_CASE("volume: a rank-5 shape counts, prints and lists its depth", "[volume]")
{
    const Shape s = Shape::ncdhw(2, 3, 4, 5, 6);
    CHECK(s.isVolume());
    CHECK(s.numel() == 2 * 3 * 4 * 5 * 6);
    CHECK(s.str() == "[2, 3, 4, 5, 6]");
    CHECK(s.dims() == std::vector<int64_t> { 2, 3, 4, 5, 6 });
    CHECK(s.rankText() == "5-D [N, C, D, H, W]");
    CHECK(s != Shape::nchw(2, 3, 20, 6)); // equal count, different rank
    CHECK(Shape::nchw(1, 2, 3, 4).dims() == std::vector<int64_t> { 1, 2, 3, 4 });
    CHECK_THROWS_AS(Shape::ncdhw(1, 1, -1, 2, 2).numel(), InputError);
    CHECK_THROWS_AS(Shape::ncdhw(1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20).numel(), InputError);
}

TEST_CASE("volume: at(n, c, d, h, w) is PyTorch's contiguous NCDHW", "[volume]")
{
    Tensor t = Tensor::zeros(Shape::ncdhw(2, 2, 3, 4, 5));
    t.at(1, 1, 2, 3, 4) = 7.0f;
    CHECK(t.data()[t.numel() - 1] == 7.0f);
    t.at(0, 1, 0, 0, 0) = 3.0f;
    CHECK(t.data()[3 * 4 * 5] == 3.0f);
    t.at(0, 0, 1, 0, 0) = 2.0f;
    CHECK(t.data()[4 * 5] == 2.0f);
}

TEST_CASE("volume: a volume input is read from .npy, whole or one volume repeated, and saved back", "[volume]")
{
    test::TempDir tmp;
    std::vector<float> v(3 * 4 * 5);
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = float(i);
    writeNpy(tmp.path / "one.npy", { 1, 3, 4, 5 }, v.data()); // [C, D, H, W]
    InputSpec in;
    in.batch = 2;
    in.channels = 1;
    in.depth = 3;
    in.height = 4;
    in.width = 5;
    in.source = "one.npy";
    const Tensor t = loadInput(in, tmp.path);
    REQUIRE(t.shape() == Shape::ncdhw(2, 1, 3, 4, 5));
    CHECK(t.at(1, 0, 2, 3, 4) == 59.0f);
    CHECK(t.at(0, 0, 1, 2, 3) == float(1 * 20 + 2 * 5 + 3));

    writeNpy(tmp.path / "saved.npy", t.shape().dims(), t.data());
    const NpyArray back = readNpy(tmp.path / "saved.npy");
    CHECK(back.dims == std::vector<int64_t> { 2, 1, 3, 4, 5 });
    CHECK(back.data[60 + 59] == 59.0f);

    in.source = "saved.npy";
    CHECK(loadInput(in, tmp.path).at(1, 0, 2, 3, 4) == 59.0f);

    in.depth = 4; // the file is 3 deep
    CHECK_THROWS_WITH(loadInput(in, tmp.path), Contains("[2, 1, 4, 4, 5]") && Contains("[C, D, H, W]"));
    in.source = "sample:digit";
    CHECK_THROWS_WITH(loadInput(in, tmp.path), Contains("volume") && Contains(".npy"));
}

TEST_CASE("volume: the file's \"depth\" makes a volume input that round trips", "[volume]")
{
    const std::string text
        = R"({"format": "convscope-network", "version": 1, "input": {"batch": 1, "channels": 1, "depth": 8,
        "height": 8, "width": 8, "source": "random"}, "layers": [{"type": "relu"}, {"type": "flatten"}]})";
    const Network net = parseNetwork(text, "volume.json", {});
    CHECK(net.input.shape() == Shape::ncdhw(1, 1, 8, 8, 8));
    CHECK(parseNetwork(serializeNetwork(net), "again.json", {}).input == net.input);
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.layers.size() == 2);
    CHECK(r.layers[0].out == Shape::ncdhw(1, 1, 8, 8, 8));
    CHECK(r.layers[1].out == Shape::features(1, 512));
}

TEST_CASE("volume: a 2-D layer fed a volume names itself and both ranks", "[volume]")
{
    const std::string text
        = R"({"format": "convscope-network", "version": 1, "input": {"batch": 1, "channels": 1, "depth": 4,
        "height": 8, "width": 8, "source": "random"}, "layers": [{"type": "conv2d", "name": "c2", "out_channels": 2,
        "kernel_size": 3}]})";
    const Network net = parseNetwork(text, "mixed.json", {});
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.layers.size() == 1);
    CHECK_THAT(r.layers[0].error, Contains("conv2d") && Contains("4-D") && Contains("5-D"));
}

TEST_CASE("volume: element-wise layers, softmax and flatten run on volumes on cpu and onednn; a backend that does not "
          "take volumes refuses them by name",
    "[volume]")
{
    const std::string text = R"({"format": "convscope-network", "version": 1, "input": {"batch": 2, "channels": 3,
        "depth": 3, "height": 4, "width": 5, "source": "random"}, "layers": [{"type": "sigmoid", "name": "s"},
        {"type": "mul", "name": "m", "inputs": ["s", "input"]}, {"type": "softmax", "name": "p"},
        {"type": "flatten", "name": "f"}]})";
    const Network net = parseNetwork(text, "volume_ops.json", {});
    const Tensor input = test::randomTensor(net.input.shape(), 5);
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct" }, { "cpu", "im2col_gemm" }, { "onednn", "auto" }, { "cuda", "direct" } };
    opt.warmup = 0;
    opt.repeat = 1;
    opt.keepOutputs = true;
    const RunResult r = profile(net, input, opt);
    REQUIRE(r.selections.size() == 4);
    for (size_t k = 0; k < 3; ++k) {
        const SelectionResult& s = r.selections[k];
        if (k == 2 && !s.ok
            && (s.failure.find("unavailable") != std::string::npos
                || s.failure.find("unknown backend") != std::string::npos))
            continue; // no libdnnl here
        INFO(s.selection.str() << ": " << s.failure);
        REQUIRE(s.ok);
        REQUIRE(s.layers[2].output);
        const Tensor& p = *s.layers[2].output;
        REQUIRE(p.shape() == Shape::ncdhw(2, 3, 3, 4, 5));
        // x · sigmoid(x), then softmax over the channels at every (n, d, h, w).
        for (int64_t n = 0; n < 2; ++n)
            for (int64_t d = 0; d < 3; ++d)
                for (int64_t h = 0; h < 4; ++h)
                    for (int64_t w = 0; w < 5; ++w) {
                        double sum = 0, e[3];
                        for (int64_t c = 0; c < 3; ++c) {
                            const double x = input.at(n, c, d, h, w);
                            e[c] = std::exp(x / (1 + std::exp(-x)));
                            sum += e[c];
                        }
                        for (int64_t c = 0; c < 3; ++c)
                            CHECK(p.at(n, c, d, h, w) == Approx(e[c] / sum).epsilon(1e-5));
                    }
        REQUIRE(s.layers[3].output);
        CHECK(s.layers[3].output->shape() == Shape::features(2, 180));
    }
    // cuda: unavailable here, or it takes volumes (its element-wise kernels count D·H·W) and agrees with cpu.direct.
    const SelectionResult& gpu = r.selections[3];
    INFO(gpu.failure);
    if (gpu.ok) {
        for (size_t i = 0; i < 4; ++i) {
            REQUIRE(gpu.layers[i].output);
            CHECK(compare(*gpu.layers[i].output, *r.selections[0].layers[i].output).relL2 <= 1e-5);
        }
    } else {
        CHECK((gpu.failure.find("unknown backend") != std::string::npos
            || gpu.failure.find("unavailable") != std::string::npos));
    }
}
