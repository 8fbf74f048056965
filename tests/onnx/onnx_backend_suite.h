// ONNX's own backend tests (Debian's libonnx-testdata: node/, pytorch-converted/, pytorch-operator/) run through
// ConvScope: each test's model is imported with the graph inputs after the first bound to the test's data (ONNX's
// node tests feed weights as inputs), its first input fed to the network, and the network's output compared with
// the expected one by ONNX's own rule (numpy.testing.assert_allclose with rtol 1e-3, atol 1e-7).
//
// A test is "not applicable" when the importer refuses the model (an operator ConvScope has no layer for, a rank it
// does not take, a non-float input): the importer's message is the reason, kept so the list can be reviewed. A test
// that imports but fails to run, or runs and differs, is a failure.
#pragma once

#include "compute/backend.h"

#include <filesystem>
#include <string>
#include <vector>

namespace convscope::test {

struct OnnxCaseResult {
    enum class Status { Passed, Failed, NotApplicable };
    std::string name; // "node/test_conv_with_strides_padding"
    Status status = Status::NotApplicable;
    std::string detail; // why not applicable, or how it failed
};

struct OnnxSuiteResult {
    std::vector<OnnxCaseResult> cases;
    int passed = 0, failed = 0, notApplicable = 0;
    // "N passed, M failed, K not applicable"
    std::string summary() const;
};

// The test data root (…/libonnx-testdata/data), or empty when libonnx-testdata is not installed.
std::filesystem::path onnxTestDataRoot();

// Runs every test under root's node/, pytorch-converted/ and pytorch-operator/ on each selection (every selection
// must pass for a test to pass). `filter`: run only tests whose name contains it.
OnnxSuiteResult runOnnxBackendTests(
    const std::filesystem::path& root, const std::vector<Selection>& selections, const std::string& filter = {});

} // namespace convscope::test
