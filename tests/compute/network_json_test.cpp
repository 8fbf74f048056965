// The network file: every example round-trips losslessly, every accepted spelling parses to the right spec,
// and every mistake is an InputError whose message names the file, the layer and the key.
#include "compute/error.h"
#include "compute/network_json.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <fstream>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

// A network file around the given layer list (and input, when given).
std::string file(const std::string& layers,
    const std::string& input = R"({"batch": 1, "channels": 3, "height": 32, "width": 32, "source": "random"})")
{
    return R"({"format": "convscope-network", "version": 1, "name": "t", "input": )" + input + R"(, "layers": [)"
        + layers + "]}";
}

Network parse(const std::string& json) { return parseNetwork(json, "test.json", "/base"); }

std::string errorOf(const std::string& json)
{
    try {
        parse(json);
    } catch (const InputError& e) {
        return e.what();
    }
    FAIL("expected an InputError for " << json);
    return {};
}

} // namespace

TEST_CASE("network json: every example round-trips losslessly", "[network_json]")
{
    size_t examples = 0;
    for (const auto& entry : std::filesystem::directory_iterator(test::examplesDir())) {
        if (entry.path().extension() != ".json")
            continue;
        CAPTURE(entry.path().filename().string());
        const Network net = loadNetwork(entry.path());
        CHECK(net.baseDir == entry.path().parent_path());
        CHECK_FALSE(net.layers.empty());
        const std::string text = serializeNetwork(net);
        const Network back = parseNetwork(text, "round trip", net.baseDir);
        CHECK(back.sameDescription(net));
        CHECK(serializeNetwork(back) == text);
        ++examples;
    }
    CHECK(examples > 0);
}

TEST_CASE(
    "network json: a description is kept through a round trip and written only when there is one", "[network_json]")
{
    Network net = parse(file(R"({"type": "relu"})"));
    CHECK(net.description.empty());
    CHECK(serializeNetwork(net).find("description") == std::string::npos);
    net.description = "Trained on \"digits\"\nseed 0 · 97.3 %";
    const std::string text = serializeNetwork(net);
    const Network back = parse(text);
    CHECK(back.description == net.description);
    CHECK(back.sameDescription(net));
    Network other = back;
    other.description = "untrained";
    CHECK_FALSE(other.sameDescription(net)); // an edit of the description is an edit of the document
}

TEST_CASE("network json: save writes the file atomically and load reads it back", "[network_json]")
{
    test::TempDir dir;
    Network net = parse(file(R"({"type": "conv2d", "name": "c1", "out_channels": 4, "kernel_size": 3, "padding": "same",
                                 "init": {"kind": "he_uniform", "seed": 7}},
                                {"type": "batchnorm2d", "running_mean": [0, 0.5, 1, 1.5], "running_var": 2.0,
                                 "weight": "bn_w.npy", "init": {"kind": "random", "seed": 3}},
                                {"type": "leaky_relu", "negative_slope": 0.2},
                                {"type": "maxpool2d", "kernel_size": 2},
                                {"type": "avgpool2d", "kernel_size": 2, "stride": 1, "divisor_override": 3},
                                {"type": "flatten"},
                                {"type": "linear", "out_features": 10, "init": {"weight": "w.npy", "bias": "b.npy"}},
                                {"type": "softmax", "dim": 1})"));
    const auto path = dir.path / "net.json";
    saveNetwork(net, path);
    const Network loaded = loadNetwork(path);
    CHECK(loaded.sameDescription(net));
    CHECK(loaded.baseDir == dir.path);
    // Saving again over the file leaves exactly one file: the temporary was renamed.
    saveNetwork(loaded, path);
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator {}) == 1);
}

TEST_CASE("network json: a minimal layer takes PyTorch's defaults and a default name", "[network_json]")
{
    const Network net = parse(file(R"({"type": "conv2d", "out_channels": 6, "kernel_size": 5}, {"type": "relu"},
                                       {"type": "conv2d", "out_channels": 8, "kernel_size": [3, 1]})"));
    REQUIRE(net.layers.size() == 3);
    CHECK(net.name == "t");
    CHECK(net.baseDir == "/base");
    const auto& c = std::get<Conv2d>(net.layers[0].spec);
    CHECK(c.out_channels == 6);
    CHECK(c.kernel_size == Pair { 5, 5 });
    CHECK(c.stride == Pair { 1, 1 });
    CHECK(c.padding == Padding2d {});
    CHECK(c.dilation == Pair { 1, 1 });
    CHECK(c.groups == 1);
    CHECK(c.bias);
    CHECK(net.layers[0].init == InitSpec {});
    CHECK(std::get<Conv2d>(net.layers[2].spec).kernel_size == Pair { 3, 1 });
    CHECK(net.layers[0].name == "conv1");
    CHECK(net.layers[1].name == "relu1");
    CHECK(net.layers[2].name == "conv2");
    CHECK(net.input == InputSpec { 1, 3, 32, 32, false, "random" });
}

TEST_CASE("network json: default names skip names used explicitly anywhere in the file", "[network_json]")
{
    const Network net = parse(file(R"({"type": "conv2d", "out_channels": 1, "kernel_size": 3},
                                      {"type": "conv2d", "name": "conv1", "out_channels": 1, "kernel_size": 3})"));
    CHECK(net.layers[0].name == "conv2");
    CHECK(net.layers[1].name == "conv1");
    CHECK(defaultLayerName(net, Conv2d {}) == "conv3");
    CHECK(defaultLayerName(net, Linear {}) == "fc1");
    CHECK(defaultLayerName(net, BatchNorm2d {}) == "bn1");
}

TEST_CASE("network json: every spelling of padding, pairs and optional strides", "[network_json]")
{
    const Network net = parse(file(R"({"type": "conv2d", "out_channels": 1, "kernel_size": 3, "padding": 2},
        {"type": "conv2d", "out_channels": 1, "kernel_size": 3, "padding": [1, 2], "stride": [2, 1]},
        {"type": "conv2d", "out_channels": 1, "kernel_size": 3, "padding": [0, 1, 2, 3], "dilation": 2},
        {"type": "conv2d", "out_channels": 1, "kernel_size": 3, "padding": "same"},
        {"type": "conv2d", "out_channels": 1, "kernel_size": 3, "padding": "valid"},
        {"type": "maxpool2d", "kernel_size": 3, "stride": null, "ceil_mode": true},
        {"type": "maxpool2d", "kernel_size": [2, 3], "stride": 1, "dilation": [1, 2]},
        {"type": "avgpool2d", "kernel_size": 2, "count_include_pad": false, "divisor_override": null},
        {"type": "conv_transpose2d", "out_channels": 2, "kernel_size": 4, "stride": 2, "output_padding": [1, 0]})"));
    auto conv = [&](size_t i) { return std::get<Conv2d>(net.layers[i].spec); };
    CHECK(conv(0).padding == Padding2d::symmetric(2, 2));
    CHECK(conv(1).padding == Padding2d { Padding2d::Mode::Explicit, 1, 1, 2, 2 });
    CHECK(conv(1).stride == Pair { 2, 1 });
    CHECK(conv(2).padding == Padding2d { Padding2d::Mode::Explicit, 0, 1, 2, 3 });
    CHECK(conv(2).dilation == Pair { 2, 2 });
    CHECK(conv(3).padding.mode == Padding2d::Mode::Same);
    CHECK(conv(4).padding.mode == Padding2d::Mode::Valid);
    const auto& p1 = std::get<MaxPool2d>(net.layers[5].spec);
    CHECK_FALSE(p1.stride.has_value());
    CHECK(p1.effectiveStride() == Pair { 3, 3 });
    CHECK(p1.ceil_mode);
    const auto& p2 = std::get<MaxPool2d>(net.layers[6].spec);
    CHECK(p2.stride == Pair { 1, 1 });
    CHECK(p2.kernel_size == Pair { 2, 3 });
    CHECK(p2.dilation == Pair { 1, 2 });
    const auto& a = std::get<AvgPool2d>(net.layers[7].spec);
    CHECK_FALSE(a.count_include_pad);
    CHECK_FALSE(a.divisor_override.has_value());
    const auto& t = std::get<ConvTranspose2d>(net.layers[8].spec);
    CHECK(t.output_padding == Pair { 1, 0 });
    CHECK(t.stride == Pair { 2, 2 });
    // The round trip keeps "no stride" apart from "stride equal to the kernel".
    CHECK(parse(serializeNetwork(net)).sameDescription(net));
}

TEST_CASE("network json: init rules and batch norm parameters", "[network_json]")
{
    const Network net = parse(file(R"(
        {"type": "conv2d", "out_channels": 2, "kernel_size": 3, "bias": false, "init": {"kind": "sobel_x"}},
        {"type": "conv2d", "out_channels": 2, "kernel_size": 3, "init": {"kind": "uniform", "seed": 9, "low": -0.5}},
        {"type": "conv2d", "out_channels": 2, "kernel_size": 3, "init": {"kind": "constant", "value": 0.25}},
        {"type": "conv2d", "out_channels": 2, "kernel_size": 3, "init": {"weight": "w.npy"}},
        {"type": "batchnorm2d", "eps": 0.001, "affine": true, "running_mean": 0.5, "running_var": [1, 2],
         "weight": "g.npy", "bias": [0, 1], "init": {"kind": "random", "seed": 18446744073709551615}})"));
    CHECK(net.layers[0].init.kind == "sobel_x");
    CHECK_FALSE(std::get<Conv2d>(net.layers[0].spec).bias);
    const InitSpec& u = net.layers[1].init;
    CHECK(u.kind == "uniform");
    CHECK(u.seed == 9);
    CHECK(u.low == -0.5);
    CHECK_FALSE(u.high.has_value());
    CHECK(net.layers[2].init.value == 0.25);
    CHECK(net.layers[3].init.kind == "file");
    CHECK(net.layers[3].init.weight_file == "w.npy");
    CHECK(net.layers[3].init.bias_file.empty());
    const Layer& bn = net.layers[4];
    CHECK(std::get<BatchNorm2d>(bn.spec).eps == 0.001);
    CHECK(bn.init.seed == 18446744073709551615ULL);
    CHECK(bn.explicitParams.at("running_mean") == ParamValue { ParamValue::Kind::Scalar, 0.5, {}, {} });
    CHECK(bn.explicitParams.at("running_var") == ParamValue { ParamValue::Kind::List, 0, { 1, 2 }, {} });
    CHECK(bn.explicitParams.at("weight") == ParamValue { ParamValue::Kind::File, 0, {}, "g.npy" });
    CHECK(bn.explicitParams.count("bias") == 1);
    CHECK(parse(serializeNetwork(net)).sameDescription(net));
}

TEST_CASE("network json: a flat input with features", "[network_json]")
{
    const Network net = parse(file(R"({"type": "linear", "out_features": 4})", R"({"batch": 8, "features": 100})"));
    CHECK(net.input.flat);
    CHECK(net.input.batch == 8);
    CHECK(net.input.channels == 100);
    CHECK(net.input.shape() == Shape::features(8, 100));
    CHECK(net.input.source == "random");
    CHECK_THAT(serializeNetwork(net), Contains(R"("input": { "batch": 8, "features": 100, "source": "random" })"));
    CHECK(parse(serializeNetwork(net)).sameDescription(net));
}

TEST_CASE("network json: layer mistakes name the file, the layer and the key", "[network_json]")
{
    struct Case {
        const char* layers;
        std::vector<const char*> expected;
    };
    const std::vector<Case> cases = {
        { R"({"type": "relu"}, {"type": "conv2d", "name": "c2", "out_channels": 6, "kernel_size": 5, "stride": -1})",
            { R"(test.json: layer 1 (c2): "stride" must be a positive integer or [h, w], got -1)" } },
        { R"({"type": "relu"}, {"type": "relu"}, {"type": "conv2d", "out_channels": 1, "kernel_size": 3, "strid": 2})",
            { R"(test.json: layer 2 (conv2d): unknown key "strid")", R"(did you mean "stride"?)" } },
        { R"({"type": "conv4d"})", { "test.json: layer 0: unknown layer type \"conv4d\"", "conv2d" } },
        { R"({"name": "x"})", { "test.json: layer 0:", "\"type\" is missing" } },
        { R"(42)", { "test.json: layer 0:", "must be an object" } },
        { R"({"type": "conv2d", "name": "a", "out_channels": 1, "kernel_size": 0})",
            { "layer 0 (a):", "\"kernel_size\" must be a positive integer or [h, w], got 0" } },
        { R"({"type": "conv2d", "name": "a", "out_channels": 1, "kernel_size": [3]})",
            { "layer 0 (a):", "\"kernel_size\"", "got [3]" } },
        { R"({"type": "conv2d", "name": "a", "out_channels": 2.5, "kernel_size": 3})",
            { "layer 0 (a):", "\"out_channels\" must be a positive integer, got 2.5" } },
        { R"({"type": "conv2d", "name": "a", "kernel_size": 3})", { "layer 0 (a):", "\"out_channels\" is missing" } },
        { R"({"type": "conv2d", "name": "a", "out_channels": 1, "kernel_size": 3, "groups": 0})",
            { "layer 0 (a):", "\"groups\" must be a positive integer, got 0" } },
        { R"({"type": "conv2d", "name": "a", "out_channels": 1, "kernel_size": 3, "bias": "yes"})",
            { "layer 0 (a):", "\"bias\" must be true or false, got \"yes\"" } },
        { R"({"type": "conv2d", "name": "a", "out_channels": 1, "kernel_size": 3, "padding": "full"})",
            { "layer 0 (a):", "\"padding\" must be", "\"same\" or \"valid\", got \"full\"" } },
        { R"({"type": "conv2d", "name": "a", "out_channels": 1, "kernel_size": 3, "padding": [1, 2, 3]})",
            { "layer 0 (a):", "\"padding\"", "got [1,2,3]" } },
        { R"({"type": "conv_transpose2d", "name": "up", "out_channels": 1, "kernel_size": 3, "output_padding": -1})",
            { "layer 0 (up):", "\"output_padding\" must be a non-negative integer or [h, w], got -1" } },
        { R"({"type": "batchnorm2d", "name": "bn", "eps": 0})", { "layer 0 (bn):", "\"eps\" must be positive" } },
        { R"({"type": "batchnorm2d", "name": "bn", "eps": -1e-5})", { "layer 0 (bn):", "\"eps\" must be positive" } },
        { R"({"type": "batchnorm2d", "name": "bn", "affine": false, "weight": 2})",
            { "layer 0 (bn):", "\"weight\" is given but \"affine\" is false" } },
        { R"({"type": "batchnorm2d", "name": "bn", "running_var": [1, -1]})",
            { "layer 0 (bn):", "\"running_var\" must hold non-negative numbers, got -1" } },
        { R"({"type": "batchnorm2d", "name": "bn", "running_mean": [1, "x"]})",
            { "layer 0 (bn):", "\"running_mean\" must be a number, a list of numbers" } },
        { R"({"type": "batchnorm2d", "name": "bn", "momentum": 0.1})",
            { "layer 0 (bn):", "unknown key \"momentum\"" } },
        { R"({"type": "softmax", "name": "sm", "dim": 6})",
            { "layer 0 (sm):", "\"dim\" must be an axis from -6 to 5" } },
        { R"({"type": "reduce", "name": "r", "op": "mean", "dim": [1, 1]})", { "layer 0 (r):", "names axis 1 twice" } },
        { R"({"type": "leaky_relu", "name": "l", "negative_slope": "x"})",
            { "layer 0 (l):", "\"negative_slope\" must be a number" } },
        { R"({"type": "relu", "name": "r", "init": {"kind": "uniform"}})", { "layer 0 (r):", "unknown key \"init\"" } },
        { R"({"type": "relu", "name": 5})", { "layer 0:", "\"name\" must be a non-empty string, got 5" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "init": {"kind": "sobel_x"}})",
            { "layer 0 (fc):", "kind \"sobel_x\" does not apply to linear" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "init": {"kind": "xavier", "seed": 1}})",
            { "layer 0 (fc):", "kind \"xavier\" does not apply to linear", "xavier_uniform" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "init": {"kind": "he_uniform", "low": -1}})",
            { "layer 0 (fc):", "\"low\" applies only to kind \"uniform\"" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "init": {"kind": "constant"}})",
            { "layer 0 (fc):", "kind \"constant\" needs a \"value\"" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "init": {"kind": "uniform", "low": 1, "high": 1}})",
            { "layer 0 (fc):", "\"low\"", "must be below \"high\"" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "init": {"kind": "he_uniform", "seed": -1}})",
            { "layer 0 (fc):", "\"seed\" must be a non-negative integer, got -1" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "init": {"kind": "sobel_y", "sed": 1}})",
            { "layer 0 (fc):", "unknown key \"sed\" for \"init\"", "did you mean \"seed\"?" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "bias": false, "init": {"weight": "w.npy", "bias": "b.npy"}})",
            { "layer 0 (fc):", "\"bias\" file is given but the layer has \"bias\": false" } },
        { R"({"type": "linear", "name": "fc", "out_features": 3, "out_features": 4})",
            { "test.json: duplicate key \"out_features\" in layer 0" } },
        { R"({"type": "relu", "name": "a"}, {"type": "tanh", "name": "a"})",
            { "layer 1 (a): name \"a\" is already used by layer 0" } },
    };
    for (const Case& c : cases) {
        CAPTURE(c.layers);
        const std::string message = errorOf(file(c.layers));
        CHECK_THAT(message, Contains("test.json"));
        for (const char* e : c.expected)
            CHECK_THAT(message, Contains(e));
    }
}

TEST_CASE("network json: file-level and input mistakes", "[network_json]")
{
    const std::string layers = R"({"type": "relu"})";
    const std::vector<std::pair<std::string, std::vector<const char*>>> cases = {
        { R"({"format": "convscope-network", "input": {"channels": 1, "height": 2, "width": 2}, "layers": [)",
            { "test.json: malformed JSON: parse error at line 1, column" } },
        { "{\n  \"format\": \"convscope-network\",\n  \"layers\": [,]\n}", { "malformed JSON", "line 3" } },
        // A number beyond double (found by the network fuzzer; nlohmann throws out_of_range, not parse_error).
        { R"({"format": "convscope-network", "input": 4444444E44444444444482})",
            { "test.json: malformed JSON: number overflow parsing '4444444E44444444444482'" } },
        { R"([1, 2])", { "test.json: a network file must be a JSON object" } },
        { R"({"input": {"channels": 1, "height": 2, "width": 2}, "layers": []})",
            { "test.json: \"format\" must be \"convscope-network\" (the key is missing)" } },
        { R"({"format": "onnx", "input": {"channels": 1, "height": 2, "width": 2}})", { "got \"onnx\"" } },
        { R"({"format": "convscope-network", "version": 2, "input": {"channels": 1, "height": 2, "width": 2}})",
            { "version 2 was written by a newer ConvScope" } },
        { R"({"format": "convscope-network", "input": {"channels": 1, "height": 2, "width": 2}, "layer": []})",
            { "unknown key \"layer\" for the network file", "did you mean \"layers\"?" } },
        { R"({"format": "convscope-network", "input": {"channels": 1, "height": 2, "width": 2}, "layers": {}})",
            { "\"layers\" must be a list" } },
        { R"({"format": "convscope-network", "layers": []})", { "\"input\" is missing" } },
        { R"({"format": "convscope-network", "description": ["a", "b"], "input": {"channels": 1, "height": 2,)"
          R"( "width": 2}, "layers": []})",
            { "test.json: \"description\" must be a string, got [\"a\",\"b\"]" } },
        // Without "layers" the file is not taken as an empty network (an explicit [] is one).
        { R"({"format": "convscope-network", "input": {"channels": 1, "height": 2, "width": 2}})",
            { "test.json: \"layers\" is missing" } },
        // Binary files: what they look like, not a JSON parser's complaint about byte 0x08.
        { std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16),
            { "test.json: not a ConvScope network file: it looks like a PNG image" } },
        { std::string("\x08\x07\x12\x07pytorch\x1a\x03"
                      "2.1:\x8a\x01",
              18),
            { "test.json: not a ConvScope network file: it looks like an ONNX model" } },
        { std::string("\x93NUMPY\x01\0v\0{'descr'", 18), { "it looks like a NumPy .npy array" } },
        { std::string("\x01\x02\0\xff garbage", 12), { "not a ConvScope network file: it looks like a binary file" } },
        { file(layers, R"({"channels": 1, "height": 2})"), { "test.json: input: \"width\" is missing" } },
        { file(layers, R"({"channels": 1, "height": 2, "width": 0})"),
            { "test.json: input: \"width\" must be a positive integer, got 0" } },
        { file(layers, R"({"batch": 1, "features": 10, "channels": 3})"),
            { "test.json: input: unknown key \"channels\" for a flat input" } },
        { file(layers, R"({"channels": 1, "height": 2, "width": 2, "source": "sample:cat"})"),
            { "test.json: input: \"source\": unknown sample \"cat\" (known: digit, edges, voxels:sphere, "
              "voxels:torus, voxels:cube, voxels:chair)" } },
        { file(layers, R"({"channels": 1, "height": 2, "width": 2, "source": "random:x1"})"),
            { "test.json: input: \"source\": \"random:x1\" must be" } },
        { file(layers, R"({"features": 4, "source": "sample:digit"})"),
            { "test.json: input: \"source\": a sample picture needs an image input" } },
        { file(layers, R"({"channels": 1, "height": 2, "width": 2, "channels": 3})"),
            { "duplicate key \"channels\" in \"input\"" } },
    };
    for (const auto& [json, expected] : cases) {
        CAPTURE(json);
        const std::string message = errorOf(json);
        for (const char* e : expected)
            CHECK_THAT(message, Contains(e));
    }
}

TEST_CASE("network json: loadNetwork names the file in its errors", "[network_json]")
{
    test::TempDir dir;
    const auto path = dir.path / "lenet.json";
    std::ofstream(path) << file(
        R"({"type": "conv2d", "name": "c1", "out_channels": 6, "kernel_size": 5, "stride": -1})");
    try {
        loadNetwork(path);
        FAIL("expected an InputError");
    } catch (const InputError& e) {
        CHECK_THAT(
            e.what(), Contains("lenet.json: layer 0 (c1): \"stride\" must be a positive integer or [h, w], got -1"));
    }
    CHECK_THROWS_WITH(loadNetwork(dir.path / "missing.json"), Contains("cannot read") && Contains("missing.json"));
}
