// ONNX's LayerNormalization node tests (libonnx-testdata's node/test_layer_normalization_*): each model has three
// outputs — Y and the optional Mean and InvStdDev — so the backend suite (onnx_backend_suite.h), whose networks have
// one output, lists them as not applicable. Here the same models are read with Y as their only graph output (Mean and
// InvStdDev are statistics a ConvScope layer does not output) and Y is compared with the test's output_0 by ONNX's rule
// (rtol 1e-3, atol 1e-7), on cpu.direct, cpu.im2col_gemm and, where it is built, onednn.auto; the GPU selections in
// the [gpu] case. Every test of the folder must import and pass.
#include "tests/onnx/onnx_backend_suite.h"

#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/onnx/onnx_import.h"
#include "compute/onnx/onnx_tensor.h"
#include "compute/profiler.h"
#include "tests/test_support.h"

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

std::string readBytes(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

convscope::onnx::ConstTensor readPb(const fs::path& p)
{
    ::onnx::TensorProto t;
    REQUIRE(t.ParseFromString(readBytes(p)));
    return convscope::onnx::readTensor(t, p.parent_path(), p.filename().string());
}

// How many elements break |actual − expected| ≤ 1e-7 + 1e-3·|expected|.
int64_t outside(const Tensor& actual, const convscope::onnx::ConstTensor& expected)
{
    int64_t bad = 0;
    for (int64_t k = 0; k < actual.numel(); ++k) {
        const double a = actual.data()[k], e = expected.f[size_t(k)];
        bad += !(std::fabs(a - e) <= 1e-7 + 1e-3 * std::fabs(e));
    }
    return bad;
}

void runLayerNormalizationTests(const std::vector<Selection>& selections)
{
    const fs::path root = test::onnxTestDataRoot();
    if (root.empty()) {
        std::cout << "SKIPPED: libonnx-testdata is not installed (apt install libonnx-testdata)" << std::endl;
        return;
    }
    for (const Selection& s : selections) {
        const auto backend = BackendRegistry::instance().find(s.backend);
        if (!backend || !backend->availability().available) {
            std::cout << "SKIPPED: " << s.backend << " is not built or has no device" << std::endl;
            return;
        }
    }
    int passed = 0;
    for (const auto& e : fs::directory_iterator(root / "node")) {
        const std::string name = e.path().filename().string();
        if (name.rfind("test_layer_normalization_", 0) != 0 || name.find("_expanded") != std::string::npos)
            continue;
        INFO(name);
        ::onnx::ModelProto model;
        REQUIRE(model.ParseFromString(readBytes(e.path() / "model.onnx")));
        REQUIRE(model.graph().output_size() >= 1);
        model.mutable_graph()->mutable_output()->DeleteSubrange(1, model.graph().output_size() - 1);
        const fs::path set = e.path() / "test_data_set_0";
        convscope::onnx::ImportOptions options;
        options.bound[model.graph().input(1).name()] = readPb(set / "input_1.pb");
        if (model.graph().input_size() > 2)
            options.bound[model.graph().input(2).name()] = readPb(set / "input_2.pb");
        const convscope::onnx::ConstTensor x = readPb(set / "input_0.pb"), want = readPb(set / "output_0.pb");
        options.batch = x.dims.at(0);
        const Network net = convscope::onnx::importModel(model.SerializeAsString(), "model.onnx", e.path(), options);
        REQUIRE(std::holds_alternative<LayerNorm>(net.layers.at(0).spec));
        Tensor input(net.input.shape());
        REQUIRE(input.numel() == x.numel());
        std::copy(x.f.begin(), x.f.end(), input.data());
        const ProfileOptions po = test::onePassOptions(selections);
        const RunResult run = profile(net, input, po);
        for (const SelectionResult& sr : run.selections) {
            INFO(sr.selection.str() << ": " << sr.failure);
            REQUIRE(sr.ok);
            const Tensor& y = *sr.layers.back().output;
            REQUIRE(y.numel() == want.numel());
            CHECK(outside(y, want) == 0);
        }
        ++passed;
    }
    std::cout << "ONNX LayerNormalization node tests (Y only): " << passed << " passed" << std::endl;
    CHECK(passed > 0);
}

} // namespace

TEST_CASE("ONNX's LayerNormalization node tests pass on the CPU (their Y)", "[onnx][conformance][norm]")
{
    runLayerNormalizationTests({ Selection::parse("cpu.direct"), Selection::parse("cpu.im2col_gemm") });
}

// Apart from the CPU case so that the asan preset can leave out this one alone: LeakSanitizer's tracer crashes at exit
// scanning the dlopen'd oneDNN module's threads and dynamic TLS (the onednn and backends suites run without the leak
// check for the same reason; CMakePresets.json).
TEST_CASE("ONNX's LayerNormalization node tests pass on oneDNN (their Y)", "[onnx][conformance][norm][onednn]")
{
    if (!BackendRegistry::instance().find("onednn")) {
        std::cout << "SKIPPED: this build has no onednn module" << std::endl;
        return;
    }
    runLayerNormalizationTests({ Selection::parse("onednn.auto") });
}

TEST_CASE("ONNX's LayerNormalization node tests pass on the GPUs (their Y)", "[onnx][conformance][norm][gpu]")
{
    runLayerNormalizationTests({ Selection::parse("cuda.direct"), Selection::parse("cudnn.auto") });
}
