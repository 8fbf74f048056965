#include "tests/onnx/onnx_backend_suite.h"

#include "compute/error.h"
#include "compute/onnx/onnx_import.h"
#include "compute/onnx/onnx_tensor.h"
#include "compute/profiler.h"
#include "tests/test_support.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace convscope::test {

namespace fs = std::filesystem;

namespace {

    std::string readBytes(const fs::path& p)
    {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }

    onnx::ConstTensor readPb(const fs::path& p)
    {
        ::onnx::TensorProto t;
        if (!t.ParseFromString(readBytes(p)))
            throw Error(p.string() + ": not a TensorProto");
        return onnx::readTensor(t, p.parent_path(), p.filename().string());
    }

    // test_data_set_*/input_0.pb … input_K.pb (or output_…), in index order.
    std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix)
    {
        std::vector<fs::path> files;
        for (int k = 0;; ++k) {
            fs::path p = dir / (prefix + "_" + std::to_string(k) + ".pb");
            if (!fs::exists(p))
                break;
            files.push_back(p);
        }
        return files;
    }

    // ONNX's check: |actual − expected| ≤ atol + rtol·|expected| everywhere, and the same shape.
    std::string compare(const Tensor& actual, const onnx::ConstTensor& expected)
    {
        const std::vector<int64_t> dims = actual.shape().dims();
        int64_t expectedCount = 1;
        for (int64_t d : expected.dims)
            expectedCount *= d;
        // A rank-4 [N, F, 1, 1] against [N, F] is the same data: ConvScope keeps features as [N, F].
        if (expectedCount != actual.numel())
            return "output shape " + npyDimsText(dims) + ", expected " + npyDimsText(expected.dims);
        if (!expected.isFloat)
            return "expected output is not float";
        constexpr double rtol = 1e-3, atol = 1e-7;
        double worst = 0;
        int64_t bad = 0, first = -1;
        for (int64_t k = 0; k < actual.numel(); ++k) {
            const double a = actual.data()[k], e = expected.f[size_t(k)];
            const double excess = std::fabs(a - e) - (atol + rtol * std::fabs(e));
            if (!(excess <= 0) && !(std::isnan(a) && std::isnan(e)) && !(std::isinf(e) && a == e)) {
                if (first < 0)
                    first = k;
                ++bad;
                worst = std::max(worst, std::fabs(a - e));
            }
        }
        if (bad == 0)
            return {};
        std::ostringstream s;
        s << bad << " of " << actual.numel() << " elements differ (max |Δ| " << worst << "; element " << first << ": "
          << actual.data()[first] << " vs " << expected.f[size_t(first)] << ")";
        return s.str();
    }

    // One test folder: every data set on every selection. Sets result.status/detail.
    void runCase(const fs::path& dir, const std::vector<Selection>& selections, OnnxCaseResult& result)
    {
        const std::string modelBytes = readBytes(dir / "model.onnx");
        ::onnx::ModelProto model;
        if (!model.ParseFromString(modelBytes)) {
            result.detail = "model.onnx does not parse";
            return;
        }
        std::set<std::string> initializers;
        for (const auto& i : model.graph().initializer())
            initializers.insert(i.name());
        std::vector<std::string> feeds; // the graph inputs the data sets feed, in order
        for (const auto& v : model.graph().input()) {
            if (initializers.count(v.name()))
                continue;
            if (!v.type().has_tensor_type()) {
                result.detail = "graph input \"" + v.name() + "\" is a sequence, map or optional, not a tensor";
                return;
            }
            feeds.push_back(v.name());
        }

        std::vector<fs::path> sets;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
                sets.push_back(e.path());
        std::sort(sets.begin(), sets.end());
        if (sets.empty()) {
            result.detail = "no test data set";
            return;
        }
        int checked = 0;
        for (const fs::path& set : sets) {
            const std::vector<fs::path> inputs = numbered(set, "input"), outputs = numbered(set, "output");
            if (inputs.empty() || inputs.size() != feeds.size() || outputs.size() != 1) {
                result.status = OnnxCaseResult::Status::NotApplicable;
                result.detail = std::to_string(inputs.size()) + " inputs and " + std::to_string(outputs.size())
                    + " outputs (ConvScope networks have one input and one output)";
                return;
            }
            onnx::ImportOptions options;
            onnx::ConstTensor x;
            try {
                for (size_t k = 1; k < inputs.size(); ++k)
                    options.bound[feeds[k]] = readPb(inputs[k]);
                x = readPb(inputs[0]);
            } catch (const InputError& e) {
                // Data ConvScope has no tensor type for (float16, uint32, strings): the model cannot be fed.
                result.detail = std::string("the test data: ") + e.what();
                return;
            }
            if (!x.dims.empty())
                options.batch = x.dims[0];
            Network net;
            try {
                net = onnx::importModel(modelBytes, "model.onnx", dir, options);
            } catch (const InputError& e) {
                result.status = OnnxCaseResult::Status::NotApplicable;
                result.detail = e.what();
                return;
            }
            if (!x.isFloat) {
                result.status = OnnxCaseResult::Status::NotApplicable;
                result.detail = "the input is not float";
                return;
            }
            Tensor input(net.input.shape());
            if (input.numel() != x.numel()) {
                result.status = OnnxCaseResult::Status::Failed;
                result.detail = "input data " + npyDimsText(x.dims) + " does not fit the network input "
                    + net.input.shape().str();
                return;
            }
            std::copy(x.f.begin(), x.f.end(), input.data());
            const onnx::ConstTensor expected = readPb(outputs[0]);

            const ProfileOptions po = test::onePassOptions(selections);
            RunResult run;
            try {
                run = profile(std::move(net), input, po);
            } catch (const Error& e) {
                result.status = OnnxCaseResult::Status::Failed;
                result.detail = std::string("the run failed: ") + e.what();
                return;
            }
            for (const SelectionResult& sr : run.selections) {
                if (!sr.ok) {
                    result.status = OnnxCaseResult::Status::Failed;
                    result.detail = sr.selection.str() + ": " + sr.failure;
                    return;
                }
                const auto& out = sr.layers.back().output;
                const std::string diff = out ? compare(*out, expected) : "no output kept";
                if (!diff.empty()) {
                    result.status = OnnxCaseResult::Status::Failed;
                    result.detail = set.filename().string() + " on " + sr.selection.str() + ": " + diff;
                    return;
                }
                ++checked;
            }
        }
        result.status = checked > 0 ? OnnxCaseResult::Status::Passed : OnnxCaseResult::Status::Failed;
        if (checked == 0)
            result.detail = "nothing was compared";
    }

} // namespace

std::string OnnxSuiteResult::summary() const
{
    return std::to_string(passed) + " passed, " + std::to_string(failed) + " failed, " + std::to_string(notApplicable)
        + " not applicable";
}

fs::path onnxTestDataRoot()
{
    // CONVSCOPE_ONNX_TESTDATA: a copy elsewhere (the GPU machine has no Debian packages; tools/gpu-check.sh sets it).
    const char* env = std::getenv("CONVSCOPE_ONNX_TESTDATA");
    for (const char* p : { env ? env : "", "/usr/share/libonnx-testdata/data" })
        if (*p && fs::is_directory(fs::path(p) / "node"))
            return p;
    return {};
}

OnnxSuiteResult runOnnxBackendTests(
    const fs::path& root, const std::vector<Selection>& selections, const std::string& filter)
{
    OnnxSuiteResult suite;
    for (const char* category : { "node", "pytorch-converted", "pytorch-operator" }) {
        if (!fs::is_directory(root / category))
            continue;
        std::vector<fs::path> dirs;
        for (const auto& e : fs::directory_iterator(root / category))
            if (fs::exists(e.path() / "model.onnx"))
                dirs.push_back(e.path());
        std::sort(dirs.begin(), dirs.end());
        for (const fs::path& dir : dirs) {
            OnnxCaseResult r;
            r.name = std::string(category) + "/" + dir.filename().string();
            if (!filter.empty() && r.name.find(filter) == std::string::npos)
                continue;
            try {
                runCase(dir, selections, r);
            } catch (const std::exception& e) {
                r.status = OnnxCaseResult::Status::Failed;
                r.detail = std::string("unexpected error: ") + e.what();
            }
            switch (r.status) {
            case OnnxCaseResult::Status::Passed:
                ++suite.passed;
                break;
            case OnnxCaseResult::Status::Failed:
                ++suite.failed;
                break;
            case OnnxCaseResult::Status::NotApplicable:
                ++suite.notApplicable;
                break;
            }
            suite.cases.push_back(std::move(r));
        }
    }
    return suite;
}

} // namespace convscope::test
