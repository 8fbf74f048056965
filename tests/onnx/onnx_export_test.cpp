// ONNX export and the round trips the issue asks for: every example network written as ONNX passes ONNX's checker
// and reads back to the same outputs; an imported model saved as JSON (weights as .npy beside it) opens to the same
// outputs, and exporting that again gives them too (open → save → export). What ONNX cannot say is an InputError
// naming the layer.
#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/network_weights.h"
#include "compute/onnx_model.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace convscope;
using namespace convscope::test;
using Catch::Matchers::Contains;

namespace {

// The network's last output on cpu.im2col_gemm for `input`.
Tensor finalOutput(const Network& net, const Tensor& input)
{
    return test::onePassOutput(net, input, "cpu.im2col_gemm");
}

void requireSame(const Tensor& a, const Tensor& b, double tolerance)
{
    const ErrorMetrics m = compare(a, b);
    INFO(m.note << " relL2 " << m.relL2 << " maxAbs " << m.maxAbs);
    REQUIRE(m.valid);
    CHECK(m.relL2 <= tolerance);
}

} // namespace

TEST_CASE("every example network exports to ONNX and reads back to the same outputs", "[onnx][export]")
{
    int exported = 0;
    for (const auto& entry : std::filesystem::directory_iterator(examplesDir())) {
        if (entry.path().extension() != ".json")
            continue;
        const Network net = loadNetwork(entry.path());
        if (!inferShapes(net).ok())
            continue;
        INFO(entry.path().filename().string());
        const Tensor input = randomTensor(net.input.shape(), 7);
        const Tensor expected = finalOutput(net, input);

        const std::string bytes = exportOnnxBytes(net); // throws when ONNX's checker refuses it
        const Network back = importOnnxBytes(bytes, "exported", {}, net.input.batch);
        CHECK(back.input.shape() == net.input.shape());
        requireSame(finalOutput(back, input), expected, 1e-6);

        // Open → save (JSON + .npy) → open again → export again: the same outputs at every step.
        TempDir dir;
        const auto json = dir.path / "imported.json";
        saveNetworkWithWeights(back, json);
        CHECK(std::filesystem::is_directory(dir.path / "imported.weights"));
        const Network saved = loadNetwork(json);
        CHECK_FALSE(hasEmbeddedWeights(saved));
        requireSame(finalOutput(saved, input), expected, 1e-6);
        const Network again = importOnnxBytes(exportOnnxBytes(saved), "exported again", {}, net.input.batch);
        requireSame(finalOutput(again, input), expected, 1e-6);
        ++exported;
    }
    CHECK(exported >= 8);
}

TEST_CASE("hardtanh and prelu export as Clip and PRelu (slopes broadcast per channel) and read back the same",
    "[onnx][export]")
{
    const std::pair<const char*, const char*> inputs[] = {
        { "image", R"("batch": 2, "channels": 3, "height": 5, "width": 4)" },
        { "volume", R"("batch": 1, "channels": 3, "depth": 3, "height": 4, "width": 2)" },
        { "flat", R"("batch": 4, "features": 3)" },
    };
    for (const auto& [what, inputFields] : inputs) {
        INFO(what);
        const Network net = parseNetwork(std::string(R"({"format": "convscope-network", "version": 1, "input": {)")
                + inputFields + R"(, "source": "random"}, "layers": [
                {"type": "prelu", "name": "pr", "num_parameters": 3, "init": {"kind": "uniform", "low": -1.5,
                    "high": 1.5}},
                {"type": "hardtanh", "name": "ht", "min_val": -0.75, "max_val": 0.5},
                {"type": "prelu", "name": "one"}]})",
            what, {});
        Tensor input = randomTensor(net.input.shape(), 3);
        for (int64_t i = 0; i < input.numel(); ++i) // spread to ±3: past both bounds and on both sides of 0
            input.data()[i] *= 3.0f;
        const Tensor expected = finalOutput(net, input);
        const Network back = importOnnxBytes(exportOnnxBytes(net), "exported", {}, net.input.batch);
        REQUIRE(back.layers.size() == 3);
        CHECK(std::get<PReLU>(back.layers[0].spec).num_parameters == 3);
        CHECK(std::get<Hardtanh>(back.layers[1].spec) == Hardtanh { -0.75, 0.5 });
        CHECK(std::get<PReLU>(back.layers[2].spec).num_parameters == 1);
        requireSame(finalOutput(back, input), expected, 0.0);
    }
}

TEST_CASE("ONNX export writes the file atomically and says what ONNX cannot express", "[onnx][export]")
{
    Network net;
    net.name = "pool";
    net.input = { 1, 2, 6, 6, false, "random" };
    Layer pool;
    pool.name = "p";
    AvgPool2d a;
    a.divisor_override = 3;
    pool.spec = a;
    net.layers.push_back(pool);
    TempDir dir;
    const auto path = dir.path / "pool.onnx";
    REQUIRE_THROWS_WITH(exportOnnxModel(net, path), Contains("layer 0 (p)") && Contains("divisor_override"));
    CHECK_FALSE(std::filesystem::exists(path)); // nothing half-written

    std::get<AvgPool2d>(net.layers[0].spec).divisor_override.reset();
    std::get<AvgPool2d>(net.layers[0].spec).kernel_size = { 9, 9 }; // larger than the input
    REQUIRE_THROWS_AS(exportOnnxModel(net, path), InputError);
    CHECK_FALSE(std::filesystem::exists(path));

    std::get<AvgPool2d>(net.layers[0].spec).kernel_size = { 2, 2 };
    exportOnnxModel(net, path);
    CHECK(std::filesystem::file_size(path) > 0);
    CHECK(isOnnxFile(path));
}
