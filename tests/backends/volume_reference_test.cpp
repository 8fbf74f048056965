// The 3-D layers against PyTorch: tests/data/volumes holds one-layer networks (conv3d, conv_transpose3d, the 3-D
// pools, batchnorm3d; asymmetric padding, "same", dilation, groups, output_padding, ceil_mode, count_include_pad,
// divisor_override) with their input, weights and PyTorch's output, made by tools/make_volume_reference.py. Each is
// opened through the network file like a user's and run on cpu.direct and on every fast CPU algorithm.
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/profiler.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

using namespace convscope;

TEST_CASE("volume reference: every 3-D case matches PyTorch on cpu.direct and the fast CPU path", "[volume]")
{
    const std::filesystem::path dir = test::dataDir() / "volumes";
    std::vector<std::filesystem::path> cases;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".json")
            cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    REQUIRE(cases.size() >= 12);
    std::set<std::string> kinds;
    for (const auto& path : cases) {
        const Network net = loadNetwork(path);
        kinds.insert(layerTypeName(net.layers.at(0).spec));
        const NpyArray expected = readNpy(path.parent_path() / (path.stem().string() + ".output.npy"));
        ProfileOptions options;
        options.selections
            = { { "cpu", "direct" }, { "cpu", "im2col_gemm" }, { "cpu", "tap_gemm" }, { "onednn", "auto" } };
        options.warmup = 0;
        options.repeat = 1;
        options.keepOutputs = true;
        options.reference = std::nullopt;
        const RunResult run = profile(net, options);
        for (const SelectionResult& s : run.selections) {
            INFO(path.filename().string() << " on " << s.selection.str() << ": " << s.failure);
            if (s.selection.backend == "onednn" && !s.ok) {
                // No libdnnl here, or PyTorch semantics oneDNN cannot express (divisor_override): said, not wrong.
                CHECK(s.unsupported);
                CHECK_FALSE(s.failure.empty());
                std::cout << "onednn: " << path.filename().string() << ": " << s.failure << "\n";
                continue;
            }
            REQUIRE(s.ok);
            const Tensor& out = *s.layers.at(0).output;
            REQUIRE(out.shape().dims() == expected.dims);
            double diff = 0, norm = 0, maxAbs = 0;
            for (int64_t i = 0; i < out.numel(); ++i) {
                const double e = expected.data[size_t(i)], d = double(out.data()[i]) - e;
                diff += d * d;
                norm += e * e;
                maxAbs = std::max(maxAbs, std::abs(d));
            }
            const double relL2 = std::sqrt(diff / std::max(norm, 1e-30));
            INFO("relL2 " << relL2 << " maxAbs " << maxAbs);
            // cpu.direct sums in double, as the reference did: only the final rounding to float differs.
            CHECK(relL2 <= (s.selection.algorithm == "direct" ? 1e-7 : 1e-6));
            CHECK(maxAbs <= 1e-5);
        }
    }
    CHECK(kinds == std::set<std::string> { "conv3d", "conv_transpose3d", "maxpool3d", "avgpool3d", "batchnorm3d" });
}
