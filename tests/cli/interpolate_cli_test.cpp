// convscope-cli interpolate end to end: the lecture's autoencoder between two voxel samples, the table and the .npy
// files it writes, the lecture's workload on a few pairs, and the exit status and message for bad input.
#include "tests/cli/cli_runner.h"
#include "tests/test_support.h"

#include "compute/npy.h"

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sys/wait.h>

using namespace convscope;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

struct Output {
    int status = -1;
    std::string text; // stdout and stderr together
};

Output interpolateCli(const std::string& args)
{
    const test::CliResult r = test::runCli("interpolate " + args);
    return { r.status, r.output };
}

std::string autoencoder() { return "'" + (test::examplesDir() / "autoencoder3d.json").string() + "'"; }

// A small autoencoder for the error cases: 8³ → conv3d stride 2 → relu "latent" [1, 4, 4, 4, 4] → back to 8³; the
// second one adds the input back at the end (a skip across every possible cut).
const char* kSmall = R"({"format": "convscope-network", "version": 1, "name": "small",
  "input": {"batch": 1, "channels": 1, "depth": 8, "height": 8, "width": 8, "source": "sample:voxels:sphere"},
  "layers": [
    {"type": "conv3d", "name": "enc", "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": "same"},
    {"type": "relu", "name": "latent"},
    {"type": "conv_transpose3d", "name": "dec", "out_channels": 1, "kernel_size": 2, "stride": 2},
    {"type": "tanh", "name": "out"}
  ]})";
const char* kSkip = R"({"format": "convscope-network", "version": 1, "name": "skip",
  "input": {"batch": 1, "channels": 1, "depth": 8, "height": 8, "width": 8, "source": "sample:voxels:sphere"},
  "layers": [
    {"type": "conv3d", "name": "enc", "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": "same"},
    {"type": "relu", "name": "latent"},
    {"type": "conv_transpose3d", "name": "dec", "out_channels": 1, "kernel_size": 2, "stride": 2},
    {"type": "add", "name": "skip", "inputs": ["dec", "input"]}
  ]})";

} // namespace

TEST_CASE("interpolate: the lecture's autoencoder between a sphere and a torus, batched and one by one", "[cli]")
{
    test::TempDir tmp;
    const Output r = interpolateCli(autoencoder() + " --at latent --from sample:voxels:sphere --to sample:voxels:torus "
        + "--steps 3 --both --warmup 0 --repeat 1 --backends cpu.im2col_gemm,cpu.direct --out '" + tmp.path.string()
        + "'");
    INFO(r.text);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.text,
        Contains("latent [1, 8, 2, 2, 2]") && Contains("decoder batched ms") && Contains("decoder one by one ms")
            && Contains("batching speed-up") && Contains("cpu.direct"));
    const NpyArray latents = readNpy(tmp.path / "latents.npy");
    CHECK(latents.dims == std::vector<int64_t> { 3, 8, 2, 2, 2 });
    // The middle step is the mean of the two ends.
    for (size_t i = 0; i < 64; ++i)
        CHECK(latents.data[64 + i] == Approx(0.5 * (latents.data[i] + latents.data[128 + i])).margin(1e-6));
    CHECK(readNpy(tmp.path / "t.npy").data == std::vector<float> { 0.0f, 0.5f, 1.0f });
    const NpyArray batched = readNpy(tmp.path / "cpu.im2col_gemm.batched.decoded.npy");
    const NpyArray single = readNpy(tmp.path / "cpu.im2col_gemm.one_by_one.decoded.npy");
    const NpyArray direct = readNpy(tmp.path / "cpu.direct.batched.decoded.npy");
    REQUIRE(batched.dims == std::vector<int64_t> { 3, 1, 32, 32, 32 });
    REQUIRE(single.dims == batched.dims);
    REQUIRE(direct.dims == batched.dims);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < batched.data.size(); ++i) {
        CHECK(std::abs(batched.data[i]) <= 1.0f); // tanh
        diff += std::pow(double(batched.data[i]) - direct.data[i], 2)
            + std::pow(double(single.data[i]) - direct.data[i], 2);
        norm += std::pow(double(direct.data[i]), 2);
    }
    CHECK(std::sqrt(diff / norm) < 1e-5);
}

TEST_CASE("interpolate: the lecture's workload on the first pairs", "[cli]")
{
    const Output r
        = interpolateCli(autoencoder() + " --lecture --inputs 3 --pairs 2 --steps 2 --backends cpu.im2col_gemm");
    INFO(r.text);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.text,
        Contains("3 chair variants, 2 ordered pairs × 2 steps = 4 decoder runs") && Contains("decode batched s")
            && Contains("µs per decoder run"));
}

TEST_CASE("interpolate: bad input names what is wrong and exits 2", "[cli]")
{
    test::TempDir tmp;
    const fs::path small = tmp.path / "small.json", skip = tmp.path / "skip.json";
    std::ofstream(small) << kSmall;
    std::ofstream(skip) << kSkip;
    const std::string net = "'" + small.string() + "' ";
    const std::string ab = " --from sample:voxels:cube --to sample:voxels:chair";
    struct Case {
        std::string args;
        std::vector<std::string> mention;
    };
    const std::vector<Case> cases = {
        { net + "--at nowhere" + ab, { "no layer named \"nowhere\"", "enc, latent, dec, out" } },
        { net + "--at out" + ab, { "last layer" } },
        { "'" + skip.string() + "' --at latent" + ab, { "layer 3 (skip)", "network's input", "before the cut" } },
        { net + "--at enc --from sample:voxels:cube", { "--from A and --to B" } },
        { net + "--at enc --from sample:digit --to sample:voxels:cube", { "volume" } },
        { net + "--at enc --from missing.npy --to sample:voxels:cube", { "missing.npy" } },
        { net + "--at enc --steps 0" + ab, { "--steps must be at least 1" } },
        { net + "--at enc --backends cpu.direct+fused" + ab, { "unfused" } },
        { net + "--at enc --memory-budget 1KiB" + ab, { "memory budget" } },
        { autoencoder() + " --lecture --from sample:voxels:cube", { "drop --from" } },
    };
    for (const Case& c : cases) {
        const Output r = interpolateCli(c.args);
        INFO(c.args << "\n" << r.text);
        CHECK(r.status == 2);
        for (const std::string& m : c.mention)
            CHECK_THAT(r.text, Contains(m));
    }
}
