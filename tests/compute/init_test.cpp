// Parameter initialisation: PyTorch's default bounds, the other seeded rules, the classic filters, batch norm
// statistics and weights from .npy files whose shape must match exactly.
#include "compute/error.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

// A network with the given input channels (28x28) and layers, materialised; files resolve against `dir`.
Network build(const std::string& layers, int64_t channels = 3, const std::filesystem::path& dir = "/nonexistent")
{
    Network net = parseNetwork(R"({"format": "convscope-network", "input": {"channels": )" + std::to_string(channels)
            + R"(, "height": 28, "width": 28, "source": "random"}, "layers": [)" + layers + "]}",
        "init.json", dir);
    const ShapeReport shapes = inferShapes(net);
    materializeParameters(net, shapes);
    return net;
}

std::string materializeError(const std::string& layers, int64_t channels = 3, const std::filesystem::path& dir = "/x")
{
    try {
        build(layers, channels, dir);
    } catch (const InputError& e) {
        return e.what();
    }
    FAIL("expected an InputError");
    return {};
}

double maxAbs(const Tensor& t)
{
    double m = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
        m = std::max(m, double(std::abs(t.data()[i])));
    return m;
}

// Every value within ±bound, and the largest close to it: the draw really uses that bound.
void checkBound(const Tensor& t, double bound)
{
    CAPTURE(bound);
    CHECK(maxAbs(t) <= bound * (1 + 1e-6)); // the float cast may round up in the last bit
    CHECK(maxAbs(t) > 0.8 * bound);
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data(), t.data() + t.numel()); }

} // namespace

TEST_CASE("init: PyTorch's default bounds are 1/sqrt(fan_in) for weight and bias", "[init]")
{
    const Network net = build(R"({"type": "conv2d", "out_channels": 8, "kernel_size": 5},
        {"type": "conv2d", "out_channels": 6, "kernel_size": 3, "groups": 2},
        {"type": "conv_transpose2d", "out_channels": 12, "kernel_size": 3, "groups": 3},
        {"type": "flatten"}, {"type": "linear", "out_features": 200})");
    const Layer& c1 = net.layers[0];
    REQUIRE(c1.weight);
    CHECK(c1.weight->shape() == Shape::nchw(8, 3, 5, 5));
    checkBound(*c1.weight, 1 / std::sqrt(75.0));
    REQUIRE(c1.bias);
    CHECK(c1.bias->shape() == Shape::nchw(8, 1, 1, 1));
    CHECK(maxAbs(*c1.bias) <= 1 / std::sqrt(75.0));
    CHECK(maxAbs(*c1.bias) > 0);

    // groups: fan_in = C_in / groups * kh * kw = 4 * 9
    const Layer& c2 = net.layers[1];
    CHECK(c2.weight->shape() == Shape::nchw(6, 4, 3, 3));
    checkBound(*c2.weight, 1 / std::sqrt(36.0));

    // transposed: weight [C_in, C_out / g, kh, kw]; PyTorch's fan_in is C_out / g * kh * kw = 4 * 9
    const Layer& t = net.layers[2];
    CHECK(t.weight->shape() == Shape::nchw(6, 4, 3, 3));
    checkBound(*t.weight, 1 / std::sqrt(36.0));
    CHECK(t.bias->shape() == Shape::nchw(12, 1, 1, 1));

    // linear: fan_in = in_features, weight [out, in] stored as {out, in, 1, 1}
    const Layer& fc = net.layers[4];
    const int64_t in = 12 * 24 * 24; // 28 -> k5 -> 24 -> k3 -> 22 -> transposed k3 -> 24
    CHECK(fc.weight->shape() == Shape::nchw(200, in, 1, 1));
    checkBound(*fc.weight, 1 / std::sqrt(double(in)));
    checkBound(*fc.bias, 1 / std::sqrt(double(in)));

    // layers without parameters stay empty
    CHECK_FALSE(net.layers[3].weight);
}

TEST_CASE("init: he_uniform, xavier_uniform, uniform and constant", "[init]")
{
    const Network net = build(R"(
        {"type": "conv2d", "out_channels": 16, "kernel_size": 3, "init": {"kind": "he_uniform", "seed": 2}},
        {"type": "conv2d", "out_channels": 8, "kernel_size": 3, "init": {"kind": "xavier_uniform", "seed": 2}},
        {"type": "conv2d", "out_channels": 8, "kernel_size": 3, "init": {"kind": "uniform", "low": 2, "high": 3}},
        {"type": "conv2d", "out_channels": 2, "kernel_size": 1, "init": {"kind": "constant", "value": 0.5}})");
    const Layer& he = net.layers[0];
    checkBound(*he.weight, std::sqrt(6.0 / 27));
    CHECK(maxAbs(*he.bias) == 0);
    const Layer& xa = net.layers[1];
    checkBound(*xa.weight, std::sqrt(6.0 / (16 * 9 + 8 * 9)));
    CHECK(maxAbs(*xa.bias) == 0);
    const auto u = values(*net.layers[2].weight);
    CHECK(*std::min_element(u.begin(), u.end()) >= 2.0f);
    CHECK(*std::max_element(u.begin(), u.end()) < 3.0f);
    const auto ub = values(*net.layers[2].bias);
    CHECK(*std::min_element(ub.begin(), ub.end()) >= 2.0f);
    const auto c = values(*net.layers[3].weight);
    CHECK(std::all_of(c.begin(), c.end(), [](float v) { return v == 0.5f; }));
    CHECK(maxAbs(*net.layers[3].bias) == 0);
}

TEST_CASE("init: seeded rules repeat with the same seed and change with another", "[init]")
{
    const auto weights = [](int seed) {
        const Network net
            = build(R"({"type": "conv2d", "out_channels": 4, "kernel_size": 3, "init": {"kind": "default", "seed": )"
                + std::to_string(seed) + "}}");
        return values(*net.layers[0].weight);
    };
    CHECK(weights(5) == weights(5));
    CHECK(weights(5) != weights(6));
}

TEST_CASE("init: classic filters sit on every (out, in) pair divided by the inputs per group", "[init]")
{
    const std::pair<const char*, std::array<float, 9>> filters[] = {
        { "sobel_x", { -1, 0, 1, -2, 0, 2, -1, 0, 1 } },
        { "sobel_y", { -1, -2, -1, 0, 0, 0, 1, 2, 1 } },
        { "laplacian", { 0, 1, 0, 1, -4, 1, 0, 1, 0 } },
        { "gaussian_blur",
            { 1 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 4 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 1 / 16.f } },
        { "sharpen", { 0, -1, 0, -1, 5, -1, 0, -1, 0 } },
        { "box_blur", { 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f, 1 / 9.f } },
        { "identity", { 0, 0, 0, 0, 1, 0, 0, 0, 0 } },
    };
    for (const auto& [kind, filter] : filters) {
        CAPTURE(kind);
        const Network net = build(R"({"type": "conv2d", "out_channels": 2, "kernel_size": 3, "init": {"kind": ")"
            + std::string(kind) + R"("}})");
        const Tensor& w = *net.layers[0].weight;
        REQUIRE(w.shape() == Shape::nchw(2, 3, 3, 3));
        for (int64_t o = 0; o < 2; ++o)
            for (int64_t i = 0; i < 3; ++i)
                for (int k = 0; k < 9; ++k)
                    CHECK(w.at(o, i, k / 3, k % 3) == Approx(filter[size_t(k)] / 3.0f));
        CHECK(maxAbs(*net.layers[0].bias) == 0);
    }
    // depthwise: one input per group, so the filter is not divided
    const Network dw
        = build(R"({"type": "conv2d", "out_channels": 3, "kernel_size": 3, "groups": 3, "init": {"kind": "sobel_x"}})");
    CHECK(dw.layers[0].weight->shape() == Shape::nchw(3, 1, 3, 3));
    CHECK(dw.layers[0].weight->at(2, 0, 1, 0) == -2.0f);
}

TEST_CASE("init: a classic filter on a kernel that is not 3x3 names the layer", "[init]")
{
    const std::string message = materializeError(
        R"({"type": "conv2d", "name": "edge", "out_channels": 1, "kernel_size": 5, "init": {"kind": "laplacian"}})");
    CHECK_THAT(message, Contains("layer 0 (edge)"));
    CHECK_THAT(message, Contains("\"init\""));
    CHECK_THAT(message, Contains("3x3"));
    CHECK_THAT(message, Contains("kernel_size is [5, 5]"));
}

TEST_CASE("init: weights from .npy files, and files of the wrong shape are refused", "[init]")
{
    test::TempDir dir;
    std::vector<float> w(4 * 3 * 3 * 3);
    std::iota(w.begin(), w.end(), 0.0f);
    const std::vector<float> b = { 1, 2, 3, 4 };
    writeNpy(dir.path / "w.npy", { 4, 3, 3, 3 }, w.data());
    writeNpy(dir.path / "b.npy", { 4 }, b.data());
    writeNpy(dir.path / "w_wrong.npy", { 2, 3, 3, 3 }, w.data());
    writeNpy(dir.path / "b_wrong.npy", { 4, 1 }, b.data());
    writeNpy(dir.path / "fc.npy", { 5, 3 }, w.data());

    const Network net = build(
        R"({"type": "conv2d", "out_channels": 4, "kernel_size": 3, "init": {"weight": "w.npy", "bias": "b.npy"}})", 3,
        dir.path);
    CHECK(values(*net.layers[0].weight) == w);
    CHECK(values(*net.layers[0].bias) == b);
    const Network noBias = build(
        R"({"type": "conv2d", "out_channels": 4, "kernel_size": 3, "init": {"kind": "file", "weight": "w.npy"}})", 3,
        dir.path);
    CHECK(values(*noBias.layers[0].weight) == w);
    CHECK(maxAbs(*noBias.layers[0].bias) == 0); // no bias file: zero bias

    std::string message = materializeError(
        R"({"type": "conv2d", "name": "c1", "out_channels": 4, "kernel_size": 3, "init": {"weight": "w_wrong.npy"}})",
        3, dir.path);
    CHECK_THAT(message, Contains("layer 0 (c1)"));
    CHECK_THAT(message, Contains("\"init.weight\""));
    CHECK_THAT(message, Contains("has shape [2, 3, 3, 3] but conv2d needs [4, 3, 3, 3]"));

    message = materializeError(
        R"({"type": "conv2d", "name": "c1", "out_channels": 4, "kernel_size": 3, "init": {"weight": "w.npy", "bias": "b_wrong.npy"}})",
        3, dir.path);
    CHECK_THAT(message, Contains("\"init.bias\""));
    CHECK_THAT(message, Contains("has shape [4, 1] but conv2d needs [4]"));

    // linear wants [out, in] exactly; [5, 3] for out_features 3 and in 5 is the transpose
    message = materializeError(
        R"({"type": "flatten"}, {"type": "linear", "name": "fc", "out_features": 3, "init": {"weight": "fc.npy"}})", 1,
        dir.path);
    CHECK_THAT(message, Contains("layer 1 (fc)"));
    CHECK_THAT(message, Contains("has shape [5, 3] but linear needs [3, 784]"));

    message = materializeError(
        R"({"type": "conv2d", "name": "c1", "out_channels": 4, "kernel_size": 3, "init": {"weight": "gone.npy"}})", 3,
        dir.path);
    CHECK_THAT(message, Contains("layer 0 (c1)"));
    CHECK_THAT(message, Contains("cannot read"));
    CHECK_THAT(message, Contains("gone.npy"));
}

TEST_CASE("init: batch norm defaults, seeded statistics and explicit values", "[init]")
{
    test::TempDir dir;
    const std::vector<float> mean = { 0.1f, 0.2f, 0.3f };
    writeNpy(dir.path / "mean.npy", { 3 }, mean.data());
    const Network net = build(R"({"type": "batchnorm2d"},
        {"type": "batchnorm2d", "init": {"kind": "random", "seed": 4}},
        {"type": "batchnorm2d", "running_mean": "mean.npy", "running_var": [1, 2, 3], "weight": 0.5, "bias": [0, 1, 2]},
        {"type": "batchnorm2d", "affine": false, "running_var": 4})",
        3, dir.path);
    const Layer& d = net.layers[0];
    CHECK(values(*d.weight) == std::vector<float> { 1, 1, 1 });
    CHECK(values(*d.bias) == std::vector<float> { 0, 0, 0 });
    CHECK(values(*d.runningMean) == std::vector<float> { 0, 0, 0 });
    CHECK(values(*d.runningVar) == std::vector<float> { 1, 1, 1 });
    CHECK(d.runningVar->shape() == Shape::nchw(3, 1, 1, 1));
    const Layer& r = net.layers[1];
    for (float v : values(*r.runningVar))
        CHECK((v >= 0.5f && v < 2.0f));
    for (float v : values(*r.weight))
        CHECK((v >= 0.5f && v < 1.5f));
    CHECK(values(*r.runningMean) != std::vector<float> { 0, 0, 0 });
    const Layer& e = net.layers[2];
    CHECK(values(*e.runningMean) == mean);
    CHECK(values(*e.runningVar) == std::vector<float> { 1, 2, 3 });
    CHECK(values(*e.weight) == std::vector<float> { 0.5f, 0.5f, 0.5f });
    CHECK(values(*e.bias) == std::vector<float> { 0, 1, 2 });
    const Layer& n = net.layers[3];
    CHECK(values(*n.runningVar) == std::vector<float> { 4, 4, 4 });
    CHECK(values(*n.weight) == std::vector<float> { 1, 1, 1 }); // no affine: the identity scale

    const std::string message = materializeError(R"({"type": "batchnorm2d", "name": "bn1", "running_mean": [1, 2]})");
    CHECK_THAT(message, Contains("layer 0 (bn1)"));
    CHECK_THAT(message, Contains("\"running_mean\" has 2 values but the layer has 3 channels"));
    const std::string fileMessage
        = materializeError(R"({"type": "batchnorm2d", "name": "bn1", "running_var": "mean.npy"})", 4, dir.path);
    CHECK_THAT(fileMessage, Contains("\"running_var\""));
    CHECK_THAT(fileMessage, Contains("has shape [3] but batchnorm2d needs [4]"));
}

TEST_CASE("init: a layer whose shape is invalid is left without parameters", "[init]")
{
    const Network net = build(R"({"type": "conv2d", "out_channels": 2, "kernel_size": 3},
        {"type": "conv2d", "out_channels": 2, "kernel_size": 99},
        {"type": "conv2d", "out_channels": 2, "kernel_size": 3})");
    CHECK(net.layers[0].weight);
    CHECK_FALSE(net.layers[1].weight);
    CHECK_FALSE(net.layers[2].weight);
}
