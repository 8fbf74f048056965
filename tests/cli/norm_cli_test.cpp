// The normalization kinds through convscope-cli: a network of all three runs on both cpu selections, one trains, and
// bad parameters (num_groups that does not divide C, normalized_shape beyond the input's axes, a negative eps) exit 2
// naming the layer and the numbers.
#include "tests/cli/cli_runner.h"
#include "tests/test_support.h"

#include "compute/npy.h"

#include <catch2/catch.hpp>
#include <fstream>

using namespace convscope;
namespace fs = std::filesystem;

namespace {
std::string network(const std::string& layers)
{
    return R"({"format": "convscope-network", "version": 1, "name": "norms", "input": {"shape": [2, 6, 5, 4], "source": "random"}, "layers": [)"
        + layers + "]}";
}

test::CliResult runNetwork(const fs::path& dir, const std::string& json, const std::string& args)
{
    const fs::path p = dir / "norms.json";
    std::ofstream(p) << json;
    return test::runCli(args + " '" + p.string() + "'");
}
} // namespace

TEST_CASE("normalization kinds run through the cli, and bad parameters exit 2", "[cli][norm]")
{
    test::TempDir dir;
    test::CliResult r
        = runNetwork(dir.path, network(R"({"type": "layer_norm", "name": "ln", "normalized_shape": [5, 4]},
            {"type": "group_norm", "name": "gn", "num_groups": 3, "eps": 1e-3},
            {"type": "instance_norm", "name": "in", "affine": true, "init": {"kind": "uniform", "seed": 2}})"),
            "run --backends cpu.direct,cpu.im2col_gemm --repeat 1");
    INFO(r.output);
    CHECK(r.status == 0);
    struct Bad {
        const char* layer;
        std::vector<std::string> mention;
    };
    for (const Bad& b : { Bad { R"({"type": "group_norm", "name": "g4", "num_groups": 4})", { "g4", "num_groups 4" } },
             Bad { R"({"type": "layer_norm", "name": "l5", "normalized_shape": [2, 2, 6, 5, 4]})",
                 { "l5", "has only 4" } },
             Bad { R"({"type": "layer_norm", "name": "l3", "normalized_shape": [3]})", { "l3", "dim 3 is 4" } },
             Bad { R"({"type": "instance_norm", "name": "e", "eps": -0.001})", { "e", "eps" } } }) {
        INFO(b.layer);
        r = runNetwork(dir.path, network(b.layer), "run --repeat 1");
        INFO(r.output);
        CHECK(r.status == 2);
        for (const std::string& word : b.mention)
            CHECK(r.output.find(word) != std::string::npos);
    }
    // They train on the CPU (norm_backward.cpp); the GPU sessions refuse them by name (exit 3 there).
    const std::vector<float> target(2 * 6 * 5 * 4, 0.5f);
    writeNpy(dir.path / "t.npy", { 2, 6, 5, 4 }, target.data());
    r = runNetwork(dir.path, network(R"({"type": "conv2d", "name": "c", "out_channels": 6, "kernel_size": 1},
            {"type": "layer_norm", "name": "ln", "normalized_shape": [4]})"),
        "train --loss mse --steps 1 --backends cpu.direct --target '" + (dir.path / "t.npy").string() + "'");
    INFO(r.output);
    CHECK(r.status == 0);
}
