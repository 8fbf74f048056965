// The 3-D kinds (conv3d, conv_transpose3d, maxpool3d, avgpool3d, global_avgpool3d, batchnorm3d): PyTorch's output
// sizes with the formula of each of D, H and W, the cost, the file format (round trip and refusals), the weights'
// shapes, and the message a 3-D layer gives for an image (and a 2-D one for a volume) naming both ranks.
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/load_input.h"
#include "compute/materialize.h"
#include "compute/network.h"
#include "compute/network_json.h"
#include "compute/shape_inference.h"
#include "compute/voxel_samples.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

Network parse(const std::string& layers,
    const std::string& input
    = R"("batch": 1, "channels": 1, "depth": 32, "height": 32, "width": 32, "source": "random")")
{
    return parseNetwork(
        R"({"format": "convscope-network", "version": 1, "input": {)" + input + R"(}, "layers": [)" + layers + "]}",
        "volume_layers.json", {});
}

} // namespace

TEST_CASE("volume layers: the lecture's encoder, 5×5×5 'same' strides 2, 2, 4, gives 16³, 8³ and a 2×2×2×8 latent",
    "[volume]")
{
    const Network net = parse(R"(
        {"type": "conv3d", "name": "e1", "out_channels": 32, "kernel_size": 5, "stride": 2, "padding": "same"},
        {"type": "conv3d", "name": "e2", "out_channels": 16, "kernel_size": 5, "stride": 2, "padding": "same"},
        {"type": "conv3d", "name": "latent", "out_channels": 8, "kernel_size": 5, "stride": 4, "padding": "same"})");
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    CHECK(r.layers[0].out == Shape::ncdhw(1, 32, 16, 16, 16));
    CHECK(r.layers[1].out == Shape::ncdhw(1, 16, 8, 8, 8));
    CHECK(r.layers[2].out == Shape::ncdhw(1, 8, 2, 2, 2));
    // TensorFlow's "same": total padding (16 − 1)·2 + 5 − 32 = 3, the odd plane at the back.
    const Padding3d& p = r.layers[0].resolvedPadding3d;
    CHECK(p == Padding3d { Padding3d::Mode::Explicit, 1, 2, 1, 2, 1, 2 });
    CHECK(r.layers[0].formula
        == "D_out = ⌊(32 + 1 + 2 − 1·(5−1) − 1) / 2⌋ + 1 = 16\nH_out = ⌊(32 + 1 + 2 − 1·(5−1) − 1) / 2⌋ + 1 = 16\n"
           "W_out = ⌊(32 + 1 + 2 − 1·(5−1) − 1) / 2⌋ + 1 = 16");
    // Stride 4 on 8: out 2, total padding (2 − 1)·4 + 5 − 8 = 1, all of it at the back.
    CHECK(r.layers[2].resolvedPadding3d.front == 0);
    CHECK(r.layers[2].resolvedPadding3d.back == 1);
    // Cost: 2 · outputs · C_in·125, parameters C_out·C_in·125 + C_out.
    CHECK(r.layers[0].cost.params == 32 * 125 + 32);
    CHECK(r.layers[0].cost.flops == Approx(2.0 * 32 * 16 * 16 * 16 * 125));
    CHECK(r.layers[1].cost.params == 16 * 32 * 125 + 16);
}

TEST_CASE("volume layers: conv3d with asymmetric padding, dilation and groups per axis", "[volume]")
{
    const Network net = parse(R"({"type": "conv3d", "out_channels": 6, "kernel_size": [3, 2, 3], "stride": [2, 1, 3],
        "padding": [1, 0, 2, 1, 0, 3], "dilation": [2, 1, 2], "groups": 2, "bias": false})",
        R"("batch": 2, "channels": 4, "depth": 9, "height": 7, "width": 11, "source": "random")");
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    // D: ⌊(9 + 1 + 0 − 2·2 − 1) / 2⌋ + 1 = 3; H: ⌊(7 + 3 − 1·1 − 1) / 1⌋ + 1 = 9; W: ⌊(11 + 3 − 2·2 − 1) / 3⌋ + 1 = 4.
    CHECK(r.layers[0].out == Shape::ncdhw(2, 6, 3, 9, 4));
    CHECK_THAT(r.layers[0].formula, Contains("D_out = ⌊(9 + 1 + 0 − 2·(3−1) − 1) / 2⌋ + 1 = 3"));
    CHECK_THAT(r.layers[0].formula, Contains("H_out = ⌊(7 + 2 + 1 − 1·(2−1) − 1) / 1⌋ + 1 = 9"));
    CHECK_THAT(r.layers[0].formula, Contains("W_out = ⌊(11 + 0 + 3 − 2·(3−1) − 1) / 3⌋ + 1 = 4"));
    CHECK(r.layers[0].cost.params == 6 * 2 * 3 * 2 * 3);
}

TEST_CASE("volume layers: conv_transpose3d grows each axis, crops, adds output_padding, counts FLOPs on its input",
    "[volume]")
{
    const Network net = parse(R"({"type": "conv_transpose3d", "name": "d1", "out_channels": 3, "kernel_size": [4, 3, 2],
        "stride": [2, 3, 1], "padding": [1, 2, 0, 1, 0, 0], "output_padding": [1, 2, 0], "dilation": [1, 1, 2]})",
        R"("batch": 1, "channels": 4, "depth": 2, "height": 3, "width": 5, "source": "random")");
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    // D: (2 − 1)·2 − 1 − 2 + 1·3 + 1 + 1 = 4; H: (3 − 1)·3 − 0 − 1 + 2 + 2 + 1 = 10; W: (5 − 1)·1 + 2·1 + 1 = 7.
    CHECK(r.layers[0].out == Shape::ncdhw(1, 3, 4, 10, 7));
    CHECK_THAT(r.layers[0].formula, Contains("D_out = (2 − 1)·2 − 1 − 2 + 1·(4−1) + 1 + 1 = 4"));
    CHECK(r.layers[0].cost.params == 4 * 3 * 4 * 3 * 2 + 3);
    CHECK(r.layers[0].cost.flops == Approx(2.0 * (4 * 2 * 3 * 5) * (3 * 4 * 3 * 2)));

    const Network bad = parse(R"({"type": "conv_transpose3d", "out_channels": 1, "kernel_size": 3, "stride": 2,
        "output_padding": [0, 2, 0]})");
    CHECK_THAT(inferShapes(bad).firstError(), Contains("output_padding 2 along H"));
    const Network same
        = parse(R"({"type": "conv_transpose3d", "out_channels": 1, "kernel_size": 3, "padding": "same"})");
    CHECK_THAT(inferShapes(same).firstError(), Contains("\"same\""));
}

TEST_CASE(
    "volume layers: 3-D pools follow ceil_mode's last-window rule and refuse padding over half the kernel", "[volume]")
{
    // D: ⌈(5 + 2 − 1·(2−1) − 1) / 2⌉ + 1 = 4, but window 3 would start at 6 ≥ 5 + 1: 3. H, W: 4 → ⌈(4+2−2)/2⌉+1 = 3.
    const Network net = parse(R"({"type": "maxpool3d", "kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": true},
        {"type": "avgpool3d", "kernel_size": [1, 2, 2], "count_include_pad": false})",
        R"("batch": 1, "channels": 2, "depth": 5, "height": 4, "width": 4, "source": "random")");
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    CHECK(r.layers[0].out == Shape::ncdhw(1, 2, 3, 3, 3));
    CHECK_THAT(r.layers[0].formula, Contains("D_out = ⌈(5 + 2·1 − 1·(2−1) − 1) / 2⌉ + 1 − 1 (last window"));
    CHECK(r.layers[1].out == Shape::ncdhw(1, 2, 3, 1, 1)); // stride defaults to the kernel
    const Network bad = parse(R"({"type": "avgpool3d", "kernel_size": [4, 2, 4], "padding": [0, 2, 0]})");
    CHECK_THAT(inferShapes(bad).firstError(), Contains("padding 2 along H") && Contains("half"));
    const Network big = parse(R"({"type": "maxpool3d", "kernel_size": [3, 3, 40]})");
    CHECK_THAT(inferShapes(big).firstError(), Contains("kernel 40 along W"));
}

TEST_CASE("volume layers: a 3-D layer fed an image, or features, names itself and both ranks", "[volume]")
{
    const std::string image = R"("batch": 1, "channels": 3, "height": 8, "width": 8, "source": "random")";
    for (const char* type :
        { "conv3d", "conv_transpose3d", "maxpool3d", "avgpool3d", "global_avgpool3d", "batchnorm3d" }) {
        std::string layer = std::string(R"({"type": ")") + type + R"(", "name": "v")";
        if (std::string(type).find("conv") == 0)
            layer += R"(, "out_channels": 2, "kernel_size": 3)";
        else if (std::string(type).find("pool3d") != std::string::npos && std::string(type) != "global_avgpool3d")
            layer += R"(, "kernel_size": 2)";
        const ShapeReport r = inferShapes(parse(layer + "}", image));
        INFO(type);
        CHECK_THAT(r.firstError(),
            Contains("layer 0 (v)") && Contains(type) && Contains("5-D [N, C, D, H, W]") && Contains("4-D [N, C, H, W]")
                && Contains("[1, 3, 8, 8]"));
    }
    const ShapeReport flat = inferShapes(parse(R"({"type": "flatten"}, {"type": "batchnorm3d", "name": "bn"})"));
    CHECK_THAT(flat.firstError(), Contains("layer 1 (bn)") && Contains("5-D") && Contains("2-D [N, F]"));
    // The reverse: a 2-D layer after a 3-D one.
    const ShapeReport mixed = inferShapes(parse(R"({"type": "conv3d", "name": "c", "out_channels": 2,
        "kernel_size": 3}, {"type": "maxpool2d", "name": "p", "kernel_size": 2})"));
    CHECK_THAT(mixed.firstError(), Contains("layer 1 (p)") && Contains("4-D") && Contains("5-D"));
}

TEST_CASE("volume layers: every 3-D kind round trips through the file, and bad keys name the layer", "[volume]")
{
    const Network net = parse(R"(
        {"type": "conv3d", "name": "c", "out_channels": 4, "kernel_size": [3, 5, 1], "stride": [1, 2, 1],
         "padding": [1, 2, 3, 0, 1, 1], "dilation": [2, 1, 1], "groups": 1, "bias": false, "init": {"kind": "xavier_uniform", "seed": 9}},
        {"type": "batchnorm3d", "name": "bn", "eps": 0.001, "running_mean": 0.5, "running_var": [1, 2, 3, 4]},
        {"type": "maxpool3d", "name": "mp", "kernel_size": 2, "stride": null, "padding": "valid", "dilation": 1, "ceil_mode": true},
        {"type": "avgpool3d", "name": "ap", "kernel_size": [1, 2, 2], "stride": [1, 1, 1], "padding": [0, 1, 1],
         "count_include_pad": false, "divisor_override": 3},
        {"type": "conv_transpose3d", "name": "t", "out_channels": 2, "kernel_size": 2, "stride": 2, "output_padding": [1, 0, 1]},
        {"type": "global_avgpool3d", "name": "g"})");
    const auto& c = std::get<Conv3d>(net.layers[0].spec);
    CHECK(c.kernel_size == Triple { 3, 5, 1 });
    CHECK(c.padding == Padding3d { Padding3d::Mode::Explicit, 1, 2, 3, 0, 1, 1 });
    CHECK(std::get<AvgPool3d>(net.layers[3].spec).padding == Padding3d::symmetric(0, 1, 1));
    CHECK(std::get<ConvTranspose3d>(net.layers[4].spec).output_padding == Triple { 1, 0, 1 });
    const Network again = parseNetwork(serializeNetwork(net), "again.json", {});
    CHECK(again.sameDescription(net));
    CHECK_THAT(serializeNetwork(net), Contains(R"("padding": [1, 2, 3, 0, 1, 1])"));
    CHECK(inferShapes(net).ok());

    CHECK_THROWS_WITH(parse(R"({"type": "conv3d", "name": "c", "out_channels": 1, "kernel_size": [3, 3]})"),
        Contains("layer 0 (c)") && Contains("kernel_size") && Contains("[d, h, w]"));
    CHECK_THROWS_WITH(parse(R"({"type": "conv3d", "out_channels": 1, "kernel_size": 3, "padding": [1, 1, 1, 1]})"),
        Contains("[front, back, top, bottom, left, right]"));
    CHECK_THROWS_WITH(parse(R"({"type": "maxpool3d", "kernel_size": 2, "count_include_pad": true})"),
        Contains("unknown key \"count_include_pad\""));
    CHECK_THROWS_WITH(parse(R"({"type": "conv3d", "out_channels": 1, "kernel_size": 3, "init": {"kind": "sobel_x"}})"),
        Contains("sobel_x"));
    CHECK(layerSummary(c) == "conv3d →4 k3×5×1 s1×2×1 d2×1×1");
}

TEST_CASE("volume layers: weights take PyTorch's 5-D layouts and seeded rules", "[volume]")
{
    Network net = parse(R"({"type": "conv3d", "out_channels": 6, "kernel_size": [3, 2, 1], "groups": 2},
        {"type": "conv_transpose3d", "out_channels": 4, "kernel_size": 2, "stride": 2, "groups": 2, "init": {"kind": "he_uniform", "seed": 3}},
        {"type": "batchnorm3d", "init": {"kind": "random", "seed": 2}})",
        R"("batch": 1, "channels": 4, "depth": 4, "height": 4, "width": 4, "source": "random")");
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    materializeParameters(net, r);
    CHECK(net.layers[0].weight->shape() == Shape::ncdhw(6, 2, 3, 2, 1));
    CHECK(net.layers[0].bias->numel() == 6);
    CHECK(net.layers[1].weight->shape() == Shape::ncdhw(6, 2, 2, 2, 2));
    // he_uniform: bound sqrt(6 / fan_in), fan_in = C_out/g · 8 = 16 (PyTorch's fans of the transposed weight).
    const double bound = std::sqrt(6.0 / 16.0);
    const Tensor& w = *net.layers[1].weight;
    float largest = 0;
    for (int64_t i = 0; i < w.numel(); ++i)
        largest = std::max(largest, std::abs(w.data()[i]));
    CHECK(largest <= bound);
    CHECK(largest > 0.5 * bound);
    CHECK(net.layers[2].runningVar->numel() == 4);
    CHECK(net.layers[2].runningVar->data()[0] != 1.0f);
}

TEST_CASE("volume layers: the voxel samples are solid shapes of any size, and need a volume input", "[volume]")
{
    const auto filled = [](const Tensor& t, int64_t from, int64_t count) {
        int64_t n = 0;
        for (int64_t i = from; i < from + count; ++i)
            n += t.data()[i] == 1.0f;
        return n;
    };
    const int64_t v = 32 * 32 * 32;
    const Tensor sphere = makeVoxelSample("voxels:sphere", 2, 1, 32, 32, 32);
    // A ball of radius 0.7 fills 4/3·π·0.35³ of the cube's volume: 17,960 of 32,768 voxels, give or take the edge.
    CHECK(filled(sphere, 0, v) == Approx(4.0 / 3.0 * M_PI * 0.35 * 0.35 * 0.35 * v).epsilon(0.03));
    CHECK(filled(sphere, v, v) == filled(sphere, 0, v)); // every item the same
    CHECK(sphere.at(0, 0, 16, 16, 16) == 1.0f);
    CHECK(sphere.at(0, 0, 0, 0, 0) == 0.0f);
    const Tensor torus = makeVoxelSample("voxels:torus", 1, 1, 32, 32, 32);
    CHECK(torus.at(0, 0, 16, 16, 16) == 0.0f); // the hole
    CHECK(torus.at(0, 0, 16, 16, 7) == 1.0f); // the ring, 0.55 to the left of the centre
    const Tensor cube = makeVoxelSample("voxels:cube", 1, 1, 20, 20, 20);
    CHECK(filled(cube, 0, 8000) == 12 * 12 * 12); // half-side 0.55 of 20 voxels: the 12 in the middle
    const Tensor chair = makeVoxelSample("voxels:chair", 1, 1, 32, 32, 32);
    CHECK(chair.at(0, 0, 16, 17, 16) == 1.0f); // the seat, just below the middle
    CHECK(chair.at(0, 0, 24, 5, 16) == 1.0f); // the back rest, at the back (high D), near the top (low H)
    CHECK(chair.at(0, 0, 10, 5, 16) == 0.0f); // nothing above the front of the seat
    CHECK(chair.at(0, 0, 7, 28, 7) == 1.0f); // a front leg reaches down
    CHECK(chair.at(0, 0, 16, 30, 16) == 0.0f); // nothing under the seat's middle
    const Tensor other = makeVoxelSample("voxels:chair", 1, 1, 32, 32, 32, 7);
    CHECK(filled(other, 0, v) != filled(chair, 0, v)); // a variant is another chair
    CHECK_THROWS_WITH(makeVoxelSample("voxels:teapot", 1, 1, 8, 8, 8), Contains("voxels:chair"));

    CHECK_THROWS_WITH(
        parse(R"({"type": "relu"})", R"("channels": 1, "height": 32, "width": 32, "source": "sample:voxels:cube")"),
        Contains("\"depth\""));
    const Network net = parse(R"({"type": "relu"})",
        R"("batch": 1, "channels": 2, "depth": 8, "height": 6, "width": 4, "source": "sample:voxels:torus")");
    const Tensor in = loadInput(net.input, {});
    CHECK(in.shape() == Shape::ncdhw(1, 2, 8, 6, 4));
}
