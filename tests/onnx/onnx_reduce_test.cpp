// softmax, log_softmax and reduce through ONNX (issue 30): every one of ONNX's own backend tests of Softmax,
// LogSoftmax and ReduceMean / Sum / Max / Min / L2 passes on the CPU (none is left as not applicable); export writes
// them (opset 17) and they read back to the same outputs; an opset-11 Softmax is over the axes from `axis` on.
#include "compute/network_json.h"
#include "compute/onnx_model.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/onnx/onnx_backend_suite.h"
#include "tests/test_support.h"

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>

#include <cmath>

using namespace convscope;
using namespace convscope::test;

namespace {

Tensor runOn(const Network& net, const Tensor& input, const char* selection = "cpu.direct")
{
    return test::onePassOutput(net, input, selection);
}

} // namespace

TEST_CASE("every ONNX backend test of Softmax, LogSoftmax and ReduceMean/Sum/Max/Min/L2 passes on the CPU",
    "[onnx][conformance]")
{
    const auto root = onnxTestDataRoot();
    if (root.empty()) {
        WARN("SKIPPED: libonnx-testdata is not installed");
        return;
    }
    int passed = 0;
    for (const char* filter : { "softmax", "Softmax", "reduce_mean", "reduce_sum_", "reduce_max", "reduce_min",
             "reduce_l2", "reduced_mean", "reduced_sum" }) {
        const OnnxSuiteResult suite = runOnnxBackendTests(
            root, { Selection::parse("cpu.direct"), Selection::parse("cpu.im2col_gemm") }, filter);
        for (const OnnxCaseResult& c : suite.cases) {
            if (c.name.find("reduce_sum_square") != std::string::npos) // ReduceSumSquare: no PyTorch kind
                continue;
            INFO(c.name << ": " << c.detail);
            CHECK(c.status == OnnxCaseResult::Status::Passed);
            passed += c.status == OnnxCaseResult::Status::Passed;
        }
    }
    CHECK(passed >= 80);
}

TEST_CASE("softmax, log_softmax and reduce export to ONNX and read back to the same outputs", "[onnx][export]")
{
    const char* layers[] = {
        R"({"type": "softmax", "dim": -1})",
        R"({"type": "softmax"})",
        R"({"type": "log_softmax", "dim": 0})",
        R"({"type": "log_softmax", "dim": 2})",
        R"({"type": "reduce", "op": "mean", "dim": [2, 3], "keepdim": true})",
        R"({"type": "reduce", "op": "sum", "dim": [1]})",
        R"({"type": "reduce", "op": "max", "dim": [-1, 0], "keepdim": true})",
        R"({"type": "reduce", "op": "min", "dim": [2]})",
        R"({"type": "reduce", "op": "l2"})",
        R"({"type": "reduce", "op": "mean", "dim": [], "keepdim": true})",
    };
    for (const char* layer : layers) {
        INFO(layer);
        const Network net = parseNetwork(std::string(R"({"format": "convscope-network", "version": 1, "input":
            {"shape": [2, 3, 4, 5], "source": "random"}, "layers": [)")
                + layer + "]}",
            "net", {});
        REQUIRE(inferShapes(net).ok());
        const Tensor input = randomTensor(net.input.shape(), 5);
        const Tensor expected = runOn(net, input);
        const Network back = importOnnxBytes(exportOnnxBytes(net), "exported", {}, net.input.batch);
        const Tensor got = runOn(back, input);
        REQUIRE(got.numel() == expected.numel());
        const ErrorMetrics m = compare(got, expected);
        CHECK(m.relL2 <= 1e-6);
        // The network file's round trip keeps the layer as it was.
        const Network again = parseNetwork(serializeNetwork(net), "again", {});
        CHECK(again.layers.at(0).spec == net.layers.at(0).spec);
    }
}

TEST_CASE("an opset-11 Softmax is over the axes from `axis` on, flattened together", "[onnx]")
{
    ::onnx::ModelProto m;
    m.set_ir_version(6);
    m.add_opset_import()->set_version(11);
    auto* g = m.mutable_graph();
    g->set_name("softmax11");
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    for (int d : { 2, 3, 4 })
        tt->mutable_shape()->add_dim()->set_dim_value(d);
    g->add_output()->set_name("y");
    for (const char* op : { "Softmax", "LogSoftmax" }) {
        INFO(op);
        g->clear_node();
        auto* n = g->add_node();
        n->set_op_type(op);
        n->add_input("x");
        n->add_output("y");
        auto* axis = n->add_attribute();
        axis->set_name("axis");
        axis->set_type(::onnx::AttributeProto::INT);
        axis->set_i(1);
        const Network net = importOnnxBytes(m.SerializeAsString(), "model.onnx", {}, 0);
        const Tensor x = randomTensor(net.input.shape(), 9);
        const Tensor y = runOn(net, x);
        REQUIRE(y.shape().dims() == std::vector<int64_t> { 2, 3, 4 });
        const bool log = std::string(op) == "LogSoftmax";
        for (int64_t b = 0; b < 2; ++b) { // each item's 12 values are one softmax
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < 12; ++k)
                mx = std::max(mx, double(x.data()[b * 12 + k]));
            for (int64_t k = 0; k < 12; ++k)
                sum += std::exp(double(x.data()[b * 12 + k]) - mx);
            for (int64_t k = 0; k < 12; ++k) {
                const double v = double(x.data()[b * 12 + k]) - mx;
                const double want = log ? v - std::log(sum) : std::exp(v) / sum;
                CHECK(std::abs(y.data()[b * 12 + k] - want) < 1e-6);
            }
        }
    }
}
