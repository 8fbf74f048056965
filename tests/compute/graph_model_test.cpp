// Networks with skip connections, as the model and the file hold them: "inputs" by name, the errors for a name that
// is unknown, used before its layer or the layer's own; the merge kinds' shape rules (add, mul's broadcast gate,
// concat) and pad's; the one kind table; liveness (a skip keeps its tensor alive) and the peak; the file round trip.
#include "compute/error.h"
#include "compute/fusion.h"
#include "compute/layer_kinds.h"
#include "compute/network_json.h"
#include "compute/shape_inference.h"

#include <catch2/catch.hpp>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

std::string file(const std::string& layers)
{
    return R"({"format": "convscope-network", "version": 1, "name": "t", "input": {"batch": 2, "channels": 3,
        "height": 8, "width": 8, "source": "random"}, "layers": [)"
        + layers + "]}";
}

Network parse(const std::string& layers) { return parseNetwork(file(layers), "g.json", "/base"); }

std::string errorOf(const std::string& layers)
{
    try {
        parse(layers);
    } catch (const InputError& e) {
        return e.what();
    }
    FAIL("expected an InputError for " << layers);
    return {};
}

// conv a → conv b → add(a, b): the residual shape of a basic block.
const char* kResidual = R"({"type": "conv2d", "name": "a", "out_channels": 4, "kernel_size": 3, "padding": 1},
    {"type": "conv2d", "name": "b", "out_channels": 4, "kernel_size": 3, "padding": 1},
    {"type": "add", "name": "sum", "inputs": ["a", "b"]})";

} // namespace

TEST_CASE("graph: the kind table names every LayerSpec alternative once, in order", "[graph]")
{
    for (size_t i = 0; i < kLayerKinds.size(); ++i) {
        CAPTURE(i, kLayerKinds[i].type);
        CHECK(kLayerKinds[i].index == i);
        const LayerSpec spec = makeLayerSpec(kLayerKinds[i].type);
        CHECK(spec.index() == i);
        CHECK(layerTypeName(spec) == kLayerKinds[i].type);
        CHECK(kLayerKinds[i].minInputs >= 1);
        CHECK(kLayerKinds[i].maxInputs >= kLayerKinds[i].minInputs);
        for (size_t k = 0; k < i; ++k)
            CHECK(std::string(kLayerKinds[k].type) != kLayerKinds[i].type);
    }
    CHECK(layerKindOf<Concat>().family == KindFamily::Merge);
    CHECK(hasParameters(Conv2d {}));
    CHECK_FALSE(hasParameters(Add {}));
    CHECK(isActivation(ReLU6 {}));
    CHECK_FALSE(isActivation(Softmax {}));
}

TEST_CASE("graph: inputs by name resolve to earlier layers or the network input", "[graph]")
{
    const Network net = parse(std::string(kResidual) + R"(, {"type": "concat", "inputs": ["input", "sum"]})");
    const auto sources = resolveInputs(net);
    REQUIRE(sources.size() == 4);
    CHECK(sources[0] == std::vector<int> { -1 });
    CHECK(sources[1] == std::vector<int> { 0 });
    CHECK(sources[2] == std::vector<int> { 0, 1 });
    CHECK(sources[3] == std::vector<int> { -1, 2 });
    CHECK(hasSkipInputs(net));
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    CHECK(r.layers[2].out == Shape::nchw(2, 4, 8, 8));
    CHECK(r.layers[3].out == Shape::nchw(2, 7, 8, 8));
    CHECK(r.layers[3].formula == "C_out = 3 + 4 = 7");
    CHECK(r.readsLayerAbove(1));
    CHECK_FALSE(r.readsLayerAbove(2));
}

TEST_CASE("graph: a bad input name is an error naming the layer and the name", "[graph]")
{
    CHECK_THAT(errorOf(R"({"type": "relu", "name": "r", "inputs": ["nope"]})"),
        Contains("layer 0 (r)") && Contains("\"nope\" is not the name of any layer"));
    CHECK_THAT(errorOf(R"({"type": "relu", "name": "r", "inputs": ["later"]}, {"type": "relu", "name": "later"})"),
        Contains("layer 0 (r)") && Contains("\"later\" is used before its layer"));
    CHECK_THAT(errorOf(R"({"type": "relu", "name": "r", "inputs": ["r"]})"),
        Contains("layer 0 (r)") && Contains("\"r\" is the layer itself"));
    CHECK_THAT(errorOf(R"({"type": "relu", "name": "input"})"), Contains("the name \"input\""));
    CHECK_THAT(errorOf(R"({"type": "relu", "inputs": "r"})"), Contains("\"inputs\" must be a list of layer names"));
    CHECK_THAT(errorOf(R"({"type": "relu", "inputs": []})"), Contains("\"inputs\" must be a list"));
}

TEST_CASE("graph: merge layers check their arity and shapes", "[graph]")
{
    // add with one input: the layer above alone.
    ShapeReport r = inferShapes(parse(R"({"type": "relu"}, {"type": "add"})"));
    CHECK_THAT(r.layers[1].error, Contains("add reads at least 2 inputs, but it has 1") && Contains("\"inputs\""));
    // add of different shapes names both layers.
    r = inferShapes(parse(R"({"type": "conv2d", "name": "c", "out_channels": 5, "kernel_size": 1},
        {"type": "add", "inputs": ["input", "c"]})"));
    CHECK_THAT(r.layers[1].error, Contains("\"input\" gives [2, 3, 8, 8]") && Contains("\"c\" gives [2, 5, 8, 8]"));
    // concat with a different height names both and the mismatch.
    r = inferShapes(parse(R"({"type": "maxpool2d", "name": "p", "kernel_size": 2},
        {"type": "concat", "name": "cat", "inputs": ["input", "p"]})"));
    CHECK_THAT(r.layers[1].error,
        Contains("\"input\" gives [2, 3, 8, 8]") && Contains("\"p\" gives [2, 3, 4, 4]")
            && Contains("the height and width differ"));
    CHECK_THAT(r.firstError(), Contains("layer 1 (cat)"));
    // mul: equal shapes, or an [N, C, 1, 1] gate on either side.
    r = inferShapes(parse(R"({"type": "global_avgpool2d", "name": "g"}, {"type": "sigmoid", "name": "s"},
        {"type": "mul", "name": "m1", "inputs": ["input", "s"]}, {"type": "mul", "name": "m2", "inputs": ["s", "m1"]},
        {"type": "mul", "name": "m3", "inputs": ["m1", "m2"]})"));
    REQUIRE(r.ok());
    CHECK(r.layers[2].out == Shape::nchw(2, 3, 8, 8));
    CHECK(r.layers[3].out == Shape::nchw(2, 3, 8, 8));
    CHECK_THAT(r.layers[2].formula, Contains("broadcast"));
    r = inferShapes(parse(R"({"type": "maxpool2d", "name": "p", "kernel_size": 2},
        {"type": "mul", "inputs": ["input", "p"]})"));
    CHECK_THAT(r.layers[1].error, Contains("mul needs inputs of one shape, or one of [N, C, 1, 1]"));
    r = inferShapes(parse(R"({"type": "mul", "inputs": ["input", "input", "input"]})"));
    CHECK_THAT(r.layers[0].error, Contains("mul reads exactly 2 inputs, but it has 3"));
    // A layer after an invalid one is invalid and says which.
    r = inferShapes(parse(R"({"type": "add", "name": "bad"}, {"type": "relu", "inputs": ["bad"]},
        {"type": "relu", "inputs": ["input"]})"));
    CHECK_THAT(r.layers[1].error, Contains("layer 0 (bad) is invalid"));
    CHECK(r.layers[2].ok); // a branch that does not read the invalid layer is still valid
}

TEST_CASE("graph: pad follows F.pad's sizes and refuses what PyTorch refuses", "[graph]")
{
    ShapeReport r
        = inferShapes(parse(R"({"type": "pad", "padding": [1, 2, 3, 4], "mode": "constant", "value": -1.5})"));
    REQUIRE(r.ok());
    CHECK(r.layers[0].out == Shape::nchw(2, 3, 11, 15));
    r = inferShapes(parse(R"({"type": "pad", "padding": [8, 0, 0, 0], "mode": "reflect"})"));
    CHECK_THAT(r.layers[0].error, Contains("reflect padding 8 along H must be smaller than the input's 8"));
    r = inferShapes(parse(R"({"type": "pad", "padding": 9, "mode": "replicate"})"));
    CHECK(r.ok());
    CHECK_THAT(errorOf(R"({"type": "pad", "padding": [1, 2]})"), Contains("[top, bottom, left, right]"));
    CHECK_THAT(errorOf(R"({"type": "pad", "padding": 1, "mode": "circular"})"), Contains("\"mode\" must be"));
    CHECK_THAT(errorOf(R"({"type": "pad", "padding": 1, "mode": "reflect", "value": 2})"),
        Contains("\"value\" applies only to mode \"constant\""));
    CHECK_THAT(errorOf(R"({"type": "dropout", "p": 1.5})"), Contains("\"p\" must be between 0 and 1"));
    CHECK_THAT(errorOf(R"({"type": "add", "alpha": 2})"), Contains("unknown key \"alpha\" for add"));
}

TEST_CASE("graph: a skip keeps its tensor alive and the peak counts every live tensor", "[graph]")
{
    const Network net = parse(kResidual);
    const ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    const int64_t t = Shape::nchw(2, 4, 8, 8).bytes(), in = Shape::nchw(2, 3, 8, 8).bytes();
    CHECK(r.layers[0].liveBytes == in + t); // the input it reads and a
    CHECK(r.layers[1].liveBytes == 2 * t); // a is still needed by sum, and b
    CHECK(r.layers[2].liveBytes == 3 * t); // a, b and sum
    CHECK(r.peakBytes == 3 * t);
    // The same layers as a chain: a is dead once b has run.
    const ShapeReport chain = inferShapes(parse(R"({"type": "conv2d", "out_channels": 4, "kernel_size": 3,
        "padding": 1}, {"type": "conv2d", "out_channels": 4, "kernel_size": 3, "padding": 1}, {"type": "relu"})"));
    CHECK(chain.layers[2].liveBytes == 2 * t);
    CHECK(chain.peakBytes == 2 * t);
}

TEST_CASE("graph: the file round-trips inputs and the new kinds", "[graph]")
{
    const Network net = parse(std::string(kResidual) + R"(,
        {"type": "pad", "name": "p", "padding": [1, 0, 2, 0], "mode": "reflect"},
        {"type": "relu6"}, {"type": "hardswish"}, {"type": "hardsigmoid"}, {"type": "silu"}, {"type": "identity"},
        {"type": "dropout", "p": 0.25}, {"type": "global_avgpool2d", "name": "g"},
        {"type": "mul", "inputs": ["p", "g"]}, {"type": "concat", "inputs": ["p", "mul1", "p"]})");
    REQUIRE(inferShapes(net).ok());
    const Network again = parseNetwork(serializeNetwork(net), "again.json", "/base");
    CHECK(again.sameDescription(net));
    CHECK(again.layers[2].inputs == std::vector<std::string> { "a", "b" });
    CHECK(std::get<Pad>(again.layers[3].spec).mode == Pad::Mode::Reflect);
    CHECK(std::get<Dropout>(again.layers[9].spec).p == 0.25);
    CHECK(again.layers[4].name == "relu6_1");
    // A layer without "inputs" writes none, so a chain's file is unchanged.
    CHECK(serializeNetwork(net).find("\"name\": \"a\", \"inputs\"") == std::string::npos);
}

TEST_CASE("graph: fusion never folds across a skip", "[graph]")
{
    // conv c → bn → relu r, and add(c, r): c's own output is read twice, so nothing folds into it.
    Network net = parse(R"({"type": "conv2d", "name": "c", "out_channels": 3, "kernel_size": 3, "padding": 1},
        {"type": "batchnorm2d", "name": "bn"}, {"type": "relu", "name": "r"},
        {"type": "add", "name": "s", "inputs": ["c", "r"]},
        {"type": "conv2d", "name": "c2", "out_channels": 3, "kernel_size": 1}, {"type": "batchnorm2d", "name": "bn2"},
        {"type": "relu", "name": "r2"}, {"type": "add", "inputs": ["s", "r2"]})");
    ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    for (Layer& l : net.layers)
        if (hasParameters(l.spec)) {
            // Parameters are only read by the fold; shapes of [C] are all fusion needs.
            const auto v = std::make_shared<const Tensor>(Tensor::filled(Shape::nchw(3, 1, 1, 1), 1.0f));
            l.runningMean = l.runningVar = l.weight = l.bias = v;
            if (std::holds_alternative<Conv2d>(l.spec)) {
                const auto& c = std::get<Conv2d>(l.spec);
                l.weight = std::make_shared<const Tensor>(
                    Tensor::filled(Shape::nchw(3, 3, c.kernel_size[0], c.kernel_size[1]), 0.5f));
            }
        }
    const FusedNetwork f = fuseNetwork(net, shapes, [](FusedActivation::Kind) { return true; });
    // c stays alone; bn and r stay; c2+bn2+r2 fold into one layer, and the last add now reads it by c2's name.
    REQUIRE(f.net.layers.size() == 6);
    CHECK(f.map[1].fusedIndex == 1);
    CHECK(f.map[6].fusedIndex == 4);
    CHECK(f.net.layers[5].inputs == std::vector<std::string> { "s", "c2" });
    CHECK(f.shapes.ok());
}
