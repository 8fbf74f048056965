// ONNX's own backend tests (Debian's libonnx-testdata) on ConvScope's backends: every test whose operators
// ConvScope takes must pass with ONNX's tolerance; the rest are listed as not applicable with the importer's reason.
// CONVSCOPE_ONNX_REPORT=FILE writes every test's status and reason (the not-applicable list for review).
#include "tests/onnx/onnx_backend_suite.h"

#include "compute/backend_registry.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>

using namespace convscope;
using namespace convscope::test;

namespace {

const char* statusName(OnnxCaseResult::Status s)
{
    switch (s) {
    case OnnxCaseResult::Status::Passed:
        return "passed";
    case OnnxCaseResult::Status::Failed:
        return "FAILED";
    default:
        return "not applicable";
    }
}

// The not-applicable reasons, shortened to their kind ("the operator Abs is not one ConvScope has a layer for"
// → one line per operator), with counts: what the suite does not reach, at a glance.
void printSummary(const std::string& label, const OnnxSuiteResult& suite)
{
    std::map<std::string, int> reasons;
    for (const auto& c : suite.cases) {
        if (c.status == OnnxCaseResult::Status::Failed)
            std::cout << "FAILED " << c.name << ": " << c.detail << "\n";
        if (c.status != OnnxCaseResult::Status::NotApplicable)
            continue;
        std::string r = c.detail;
        if (const auto p = r.find("): "); p != std::string::npos)
            r = r.substr(p + 3); // drop "model.onnx: node 0 (\"…\", Op)"
        if (const auto p = r.find("; ConvScope takes"); p != std::string::npos)
            r = r.substr(0, p);
        ++reasons[r.substr(0, 110)];
    }
    std::cout << "not applicable, by reason:\n";
    for (const auto& [r, n] : reasons)
        std::cout << "  " << n << " × " << r << "\n";
    std::cout << "ONNX backend tests on " << label << ": " << suite.summary() << std::endl;
    if (const char* path = std::getenv("CONVSCOPE_ONNX_REPORT")) {
        std::ofstream out(std::string(path) + "." + label.substr(0, label.find(' ')) + ".txt");
        for (const auto& c : suite.cases)
            out << statusName(c.status) << "\t" << c.name << "\t" << c.detail << "\n";
    }
}

void runOn(const std::string& label, const std::vector<Selection>& selections)
{
    const auto root = onnxTestDataRoot();
    if (root.empty()) {
        std::cout << "SKIPPED: libonnx-testdata is not installed (apt install libonnx-testdata)" << std::endl;
        return;
    }
    for (const Selection& s : selections) {
        const auto backend = BackendRegistry::instance().find(s.backend);
        if (!backend) {
            std::cout << "SKIPPED: the " << s.backend << " backend is not built" << std::endl;
            return;
        }
        if (const Availability a = backend->availability(); !a.available) {
            std::cout << "SKIPPED: " << s.backend << ": " << a.reason << std::endl;
            return;
        }
    }
    const char* filter = std::getenv("CONVSCOPE_ONNX_FILTER");
    const OnnxSuiteResult suite = runOnnxBackendTests(root, selections, filter ? filter : "");
    printSummary(label, suite);
    CHECK(suite.failed == 0);
    CHECK(suite.passed > 0);
}

} // namespace

TEST_CASE("ONNX's backend tests pass on cpu.direct and the fast CPU paths", "[onnx][conformance]")
{
    runOn("cpu (direct, im2col_gemm, tap_gemm)",
        { Selection::parse("cpu.direct"), Selection::parse("cpu.im2col_gemm"), Selection::parse("cpu.tap_gemm") });
}

TEST_CASE("ONNX's backend tests pass on our CUDA kernels", "[onnx][conformance][gpu]")
{
    runOn("cuda (direct, implicit_gemm)", { Selection::parse("cuda.direct"), Selection::parse("cuda.implicit_gemm") });
}

TEST_CASE("ONNX's backend tests pass on cuDNN", "[onnx][conformance][gpu]")
{
    runOn("cudnn (auto)", { Selection::parse("cudnn.auto") });
}
