// hardtanh (torch.nn.Hardtanh) and prelu (torch.nn.PReLU): shapes and cost, the messages for bounds in the wrong
// order and for a slope count that fits neither rule, the file format (round trip, init kinds, refusals), the slopes'
// weight (PyTorch's 0.25, constant, a file, an imported model's tensor written back as [num_parameters]) and the
// values both CPU families give on images, flat inputs and volumes, against numbers worked out by hand.
#include "compute/error.h"
#include "compute/materialize.h"
#include "compute/network.h"
#include "compute/network_json.h"
#include "compute/network_weights.h"
#include "compute/npy.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string inputJson(const Shape& s)
{
    std::string j = "\"batch\": " + std::to_string(s.n) + ", ";
    if (s.flat)
        return j + "\"features\": " + std::to_string(s.c) + ", \"source\": \"random\"";
    j += "\"channels\": " + std::to_string(s.c) + ", ";
    if (s.isVolume())
        j += "\"depth\": " + std::to_string(s.d) + ", ";
    return j + "\"height\": " + std::to_string(s.h) + ", \"width\": " + std::to_string(s.w)
        + ", \"source\": \"random\"";
}

Network parse(const std::string& layers, const Shape& input, const std::filesystem::path& baseDir = {})
{
    return parseNetwork(R"({"format": "convscope-network", "version": 1, "input": {)" + inputJson(input)
            + R"(}, "layers": [)" + layers + "]}",
        "parametric_activation.json", baseDir);
}

// The one layer's output on cpu.direct and cpu.im2col_gemm (the double loops and the threaded float ones).
std::vector<std::vector<float>> runBoth(const Network& net, const std::vector<float>& values)
{
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    Tensor input(shapes.input);
    REQUIRE(size_t(input.numel()) == values.size());
    std::copy(values.begin(), values.end(), input.data());
    ProfileOptions options;
    options.selections = { { "cpu", "direct" }, { "cpu", "im2col_gemm" } };
    options.warmup = 0;
    options.repeat = 1;
    options.keepOutputs = true;
    options.reference = std::nullopt;
    const RunResult run = profile(net, input, options);
    std::vector<std::vector<float>> outs;
    for (const SelectionResult& s : run.selections) {
        INFO(s.selection.str() << ": " << s.failure);
        REQUIRE(s.ok);
        const Tensor& out = *s.layers.back().output;
        REQUIRE(out.shape() == shapes.layers.back().out);
        outs.emplace_back(out.data(), out.data() + out.numel());
    }
    return outs;
}

void checkValues(const std::vector<float>& got, const std::vector<float>& want)
{
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        INFO("element " << i);
        if (std::isnan(want[i]))
            CHECK(std::isnan(got[i]));
        else
            CHECK(got[i] == Approx(want[i]).epsilon(1e-7));
    }
}

} // namespace

TEST_CASE("hardtanh: shape, cost, formula, and bounds in the wrong order name the layer", "[parametric_activation]")
{
    const Network net
        = parse(R"({"type": "hardtanh", "name": "clip", "min_val": -0.5, "max_val": 2})", Shape::nchw(2, 3, 4, 5));
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    CHECK(r.layers[0].out == Shape::nchw(2, 3, 4, 5));
    CHECK(r.layers[0].cost.params == 0);
    CHECK(r.layers[0].cost.flops == Approx(2.0 * 120));
    CHECK_THAT(r.layers[0].formula, Contains("y = min(max(x, -0.5), 2)"));

    const auto* h = std::get_if<Hardtanh>(&net.layers[0].spec);
    REQUIRE(h);
    CHECK(h->min_val == -0.5);
    CHECK(h->max_val == 2.0);
    // PyTorch's defaults: -1 and 1.
    const Network defaults = parse(R"({"type": "hardtanh"})", Shape::features(1, 4));
    CHECK(std::get<Hardtanh>(defaults.layers[0].spec) == Hardtanh { -1.0, 1.0 });

    // The file names the layer and both keys; shape inference says the same for a spec made in code.
    CHECK_THROWS_WITH(
        parse(R"({"type": "hardtanh", "name": "bad", "min_val": 3, "max_val": 3})", Shape::nchw(1, 1, 2, 2)),
        Contains("bad") && Contains("\"min_val\" must be below \"max_val\""));
    CHECK_THROWS_AS(parse(R"({"type": "hardtanh", "min_val": 2})", Shape::nchw(1, 1, 2, 2)), InputError);
    CHECK_THROWS_AS(parse(R"({"type": "hardtanh", "max_val": "big"})", Shape::nchw(1, 1, 2, 2)), InputError);
    const LayerShape bad = inferLayer(Hardtanh { 1.0, -1.0 }, Shape::nchw(1, 1, 2, 2));
    CHECK_FALSE(bad.ok);
    CHECK_THAT(bad.error, Contains("min_val below max_val") && Contains("min_val 1") && Contains("max_val -1"));

    // Round trip: the keys come back as written.
    const std::string text = serializeNetwork(net);
    CHECK_THAT(text, Contains("\"min_val\": -0.5") && Contains("\"max_val\": 2"));
    CHECK(parseNetwork(text, "again", {}).sameDescription(net));
}

TEST_CASE("hardtanh: CPU values clamp to the bounds and keep NaN", "[parametric_activation]")
{
    const Network net = parse(R"({"type": "hardtanh", "min_val": -0.5, "max_val": 2})", Shape::nchw(1, 2, 2, 2));
    const std::vector<float> x = { -3.0f, -0.5f, 0.0f, 0.25f, 1.5f, 2.0f, 7.0f, kNaN };
    const std::vector<float> want = { -0.5f, -0.5f, 0.0f, 0.25f, 1.5f, 2.0f, 2.0f, kNaN };
    for (const auto& got : runBoth(net, x))
        checkValues(got, want);
    // Flat [N, F] with the defaults ±1.
    const Network flat = parse(R"({"type": "hardtanh"})", Shape::features(2, 3));
    for (const auto& got : runBoth(flat, { -1.5f, -1.0f, 0.75f, 1.0f, 3.0f, -0.125f }))
        checkValues(got, { -1.0f, -1.0f, 0.75f, 1.0f, 1.0f, -0.125f });
}

TEST_CASE("prelu: one slope or one per channel of an image, a volume or a flat input; any other count says why",
    "[parametric_activation]")
{
    const ShapeReport image = inferShapes(parse(R"({"type": "prelu", "num_parameters": 3})", Shape::nchw(2, 3, 4, 4)));
    REQUIRE(image.ok());
    CHECK(image.layers[0].out == Shape::nchw(2, 3, 4, 4));
    CHECK(image.layers[0].cost.params == 3);
    CHECK(image.layers[0].cost.flops == Approx(2.0 * 96));
    CHECK(image.total.params == 3);
    const ShapeReport shared = inferShapes(parse(R"({"type": "prelu"})", Shape::nchw(1, 5, 2, 2)));
    REQUIRE(shared.ok());
    CHECK(shared.layers[0].cost.params == 1);
    CHECK(inferShapes(parse(R"({"type": "prelu", "num_parameters": 7})", Shape::features(2, 7))).ok());
    CHECK(inferShapes(parse(R"({"type": "prelu", "num_parameters": 2})", Shape::ncdhw(1, 2, 3, 4, 5))).ok());

    const ShapeReport bad
        = inferShapes(parse(R"({"type": "prelu", "name": "act", "num_parameters": 2})", Shape::nchw(1, 3, 4, 4)));
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(bad.firstError(),
        Contains("(act)") && Contains("num_parameters 2") && Contains("3 channels") && Contains("must be 1"));
    const ShapeReport badFlat = inferShapes(parse(R"({"type": "prelu", "num_parameters": 4})", Shape::features(1, 6)));
    CHECK_THAT(badFlat.firstError(), Contains("6 features"));
    CHECK_THROWS_WITH(
        parse(R"({"type": "prelu", "num_parameters": 0})", Shape::nchw(1, 1, 2, 2)), Contains("num_parameters"));
}

TEST_CASE("prelu: init kinds in the file, PyTorch's 0.25 by default, refusals name the kind", "[parametric_activation]")
{
    Network net = parse(R"({"type": "prelu", "name": "p", "num_parameters": 3})", Shape::nchw(1, 3, 2, 2));
    CHECK(net.layers[0].init.kind == "default");
    const std::string text = serializeNetwork(net);
    CHECK_THAT(text, Contains("\"num_parameters\": 3") && Contains("\"init\""));
    CHECK(parseNetwork(text, "again", {}).sameDescription(net));
    materializeParameters(net, inferShapes(net));
    REQUIRE(net.layers[0].weight);
    CHECK(net.layers[0].weight->shape() == Shape::nchw(3, 1, 1, 1));
    for (int c = 0; c < 3; ++c)
        CHECK(net.layers[0].weight->data()[c] == 0.25f);
    CHECK_FALSE(net.layers[0].bias);

    Network constant = parse(R"({"type": "prelu", "num_parameters": 2, "init": {"kind": "constant", "value": -0.5}})",
        Shape::nchw(1, 2, 1, 1));
    materializeParameters(constant, inferShapes(constant));
    CHECK(constant.layers[0].weight->data()[1] == -0.5f);

    Network uniform = parse(R"({"type": "prelu", "num_parameters": 4, "init": {"kind": "uniform", "low": 0.1,
        "high": 0.2, "seed": 5}})",
        Shape::nchw(1, 4, 1, 1));
    materializeParameters(uniform, inferShapes(uniform));
    for (int c = 0; c < 4; ++c) {
        CHECK(uniform.layers[0].weight->data()[c] >= 0.1f);
        CHECK(uniform.layers[0].weight->data()[c] < 0.2f);
    }

    CHECK_THROWS_WITH(parse(R"({"type": "prelu", "init": {"kind": "he_uniform"}})", Shape::nchw(1, 1, 2, 2)),
        Contains("does not apply to prelu") && Contains("default, constant, uniform, file"));
    CHECK_THROWS_WITH(parse(R"({"type": "prelu", "init": {"kind": "sobel_x"}})", Shape::nchw(1, 1, 2, 2)),
        Contains("does not apply to prelu"));
    CHECK_THROWS_AS(
        parse(R"({"type": "prelu", "init": {"weight": "a.npy", "bias": "b.npy"}})", Shape::nchw(1, 1, 2, 2)),
        InputError);
}

TEST_CASE(
    "prelu: slopes from an .npy file, a file of the wrong shape, and per-channel CPU values", "[parametric_activation]")
{
    test::TempDir dir;
    const float slopes[] = { 0.1f, -2.0f };
    writeNpy(dir.path / "slopes.npy", { 2 }, slopes);
    const float wrong[] = { 1.0f, 2.0f, 3.0f };
    writeNpy(dir.path / "three.npy", { 3 }, wrong);

    // [2, 2, 1, 2]: image 0 channel 0 {-2, 3}, channel 1 {-4, 0.5}; image 1 channel 0 {-1, -6}, channel 1 {2, -8}.
    const Network net = parse(R"({"type": "prelu", "num_parameters": 2, "init": {"weight": "slopes.npy"}})",
        Shape::nchw(2, 2, 1, 2), dir.path);
    CHECK(net.layers[0].init.kind == "file");
    for (const auto& got : runBoth(net, { -2, 3, -4, 0.5f, -1, -6, 2, -8 }))
        checkValues(got, { -0.2f, 3, 8, 0.5f, -0.1f, -0.6f, 2, 16 });

    Network mismatch = parse(R"({"type": "prelu", "name": "pr", "num_parameters": 2, "init": {"weight": "three.npy"}})",
        Shape::nchw(1, 2, 2, 2), dir.path);
    CHECK_THROWS_WITH(materializeParameters(mismatch, inferShapes(mismatch)),
        Contains("(pr)") && Contains("[3]") && Contains("prelu needs [2]"));

    // One slope (PyTorch's 0.25) over everything; NaN stays NaN, 0 stays 0.
    const Network one = parse(R"({"type": "prelu"})", Shape::nchw(1, 3, 1, 2));
    for (const auto& got : runBoth(one, { -4, 4, 0, -0.5f, kNaN, -1 }))
        checkValues(got, { -1, 4, 0, -0.125f, kNaN, -0.25f });
}

TEST_CASE("prelu: the features of a flat input and the channels of a volume are dim 1", "[parametric_activation]")
{
    test::TempDir dir;
    const float three[] = { 1.0f, 2.0f, 3.0f };
    writeNpy(dir.path / "three.npy", { 3 }, three);
    const Network flat = parse(R"({"type": "prelu", "num_parameters": 3, "init": {"kind": "file", "weight":
        "three.npy"}})",
        Shape::features(2, 3), dir.path);
    for (const auto& got : runBoth(flat, { -2, 4, -6, -1, -1, -1 }))
        checkValues(got, { -2, 4, -18, -1, -2, -3 });

    const float two[] = { 0.5f, 3.0f };
    writeNpy(dir.path / "two.npy", { 2 }, two);
    // [1, 2, 2, 1, 2]: channel 0 holds {-2, -4, 6, -8}, channel 1 {-1, 5, -3, 0}.
    const Network volume = parse(R"({"type": "prelu", "num_parameters": 2, "init": {"weight": "two.npy"}})",
        Shape::ncdhw(1, 2, 2, 1, 2), dir.path);
    for (const auto& got : runBoth(volume, { -2, -4, 6, -8, -1, 5, -3, 0 }))
        checkValues(got, { -1, -2, 6, -4, -3, 5, -9, 0 });
}

TEST_CASE(
    "prelu: an imported model's slopes are saved beside the network as [num_parameters]", "[parametric_activation]")
{
    test::TempDir dir;
    Network net = parse(R"({"type": "prelu", "name": "act", "num_parameters": 3})", Shape::nchw(1, 3, 2, 2));
    Tensor w(Shape::nchw(3, 1, 1, 1));
    w.data()[0] = 0.5f, w.data()[1] = -1.0f, w.data()[2] = 2.0f;
    auto e = std::make_shared<Layer::Embedded>();
    e->weight = std::make_shared<const Tensor>(std::move(w));
    net.layers[0].init.kind = "embedded";
    net.layers[0].embedded = e;
    Network materialised = net;
    materializeParameters(materialised, inferShapes(materialised));
    CHECK(materialised.layers[0].weight == e->weight); // shared, not copied

    const Network saved = externalizeWeights(net, dir.path / "model.json");
    REQUIRE(saved.layers[0].init.kind == "file");
    const NpyArray a = readNpy(dir.path / saved.layers[0].init.weight_file);
    CHECK(a.dims == std::vector<int64_t> { 3 });
    CHECK(a.data == std::vector<float> { 0.5f, -1.0f, 2.0f });
    Network again = saved;
    materializeParameters(again, inferShapes(again));
    CHECK(again.layers[0].weight->data()[2] == 2.0f);

    // An embedded tensor of the wrong count is refused with both shapes.
    Network wrong = net;
    auto e2 = std::make_shared<Layer::Embedded>();
    e2->weight = std::make_shared<const Tensor>(Tensor::filled(Shape::nchw(2, 1, 1, 1), 1.0f));
    wrong.layers[0].embedded = e2;
    CHECK_THROWS_WITH(materializeParameters(wrong, inferShapes(wrong)), Contains("prelu needs [3]"));
}
