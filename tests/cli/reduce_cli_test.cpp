// softmax, log_softmax and reduce through the CLI (issue 30): bad parameters are exit status 2 with the layer and the
// numbers, and a good network runs on the CPU paths and onednn (skipped where it is not built).
#include "tests/cli/cli_runner.h"

#include <filesystem>
#include <fstream>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

test::CliResult shapesOf(const fs::path& dir, const std::string& layers, const std::string& command = "shapes")
{
    const fs::path p = dir / "net.json";
    std::ofstream(p, std::ios::binary) << R"({"format": "convscope-network", "version": 1, "name": "axes",
        "input": {"shape": [2, 3, 4], "source": "random:5"}, "layers": [)"
            + layers + "]}";
    return test::runCli(command + " '" + p.string() + "'");
}

} // namespace

TEST_CASE("bad softmax and reduce parameters exit 2 naming the layer and the numbers", "[cli][reduce]")
{
    test::TempDir dir;
    test::CliResult r = shapesOf(dir.path, R"({"type": "softmax", "name": "sm", "dim": 3})");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("sm") && Catch::Contains("dim 3 is out of range for a tensor of rank 3"));
    r = shapesOf(dir.path, R"({"type": "log_softmax", "name": "ls", "dim": -4})");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("ls") && Catch::Contains("dim -4 is out of range"));
    r = shapesOf(dir.path, R"({"type": "reduce", "name": "rd", "op": "mean", "dim": [0, -3]})");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("rd") && Catch::Contains("dim 0 appears more than once"));
    r = shapesOf(dir.path, R"({"type": "reduce", "name": "rd", "op": "mean", "dim": [1, 1]})");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("names axis 1 twice"));
    r = shapesOf(dir.path, R"({"type": "reduce", "name": "rd", "op": "median"})");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("\"op\" must be one of mean, sum, max, min, l2"));
}

TEST_CASE("softmax, log_softmax and reduce run on the CPU paths", "[cli][reduce]")
{
    test::TempDir dir;
    const test::CliResult r = shapesOf(dir.path,
        R"({"type": "softmax", "dim": 0}, {"type": "log_softmax", "dim": -1},
           {"type": "reduce", "op": "l2", "dim": [1], "keepdim": true}, {"type": "reduce", "op": "sum"})",
        "run --backends cpu.direct,cpu.im2col_gemm --warmup 0 --repeat 1");
    INFO(r.output);
    CHECK(r.status == 0);
}
