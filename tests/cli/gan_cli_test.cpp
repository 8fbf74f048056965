// `convscope-cli gan` end to end: the toy DCGAN pair of tests/data/training/dcgan trained a few steps on the CPU with
// every report, the saved networks (which load back and run) and the generated batch; and bad input as exit 2.
#include "tests/cli/cli_runner.h"
#include "tests/test_support.h"

#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/shape_inference.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

struct GanFolder {
    fs::path dir = fs::temp_directory_path() / ("convscope_gan_cli_" + std::to_string(getpid()));
    fs::path data = test::dataDir() / "training" / "dcgan";
    GanFolder()
    {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~GanFolder() { fs::remove_all(dir); }
    std::string gan(const std::string& rest) const
    {
        return "gan " + quoted(data / "generator.json") + " " + quoted(data / "discriminator.json") + " " + rest;
    }
};

} // namespace

TEST_CASE("gan trains the DCGAN pair, writes the reports, both networks and the generated batch", "[cli]")
{
    const GanFolder f;
    const test::CliResult r = test::runCli(
        f.gan("--batch 4 --steps 2 --backends cpu.direct,cpu.im2col_gemm --report " + quoted(f.dir / "gan.json")
            + " --save-weights " + quoted(f.dir / "w") + " --save-samples " + quoted(f.dir / "fake.npy")));
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.output.find("cpu.direct — batch 4, 2 timed steps") != std::string::npos);
    CHECK(r.output.find("cpu.im2col_gemm — batch 4") != std::string::npos);
    CHECK(r.output.find("G step, D: backward") != std::string::npos);
    std::ifstream in(f.dir / "gan.json");
    const nlohmann::json j = nlohmann::json::parse(in);
    CHECK(j["format"] == "convscope-gan-training");
    REQUIRE(j["step_results"].size() == 2);
    CHECK(j["step_results"][0]["ms"]["step"].get<double>() > 0);
    CHECK(std::isfinite(j["step_results"][1]["loss_g"].get<double>()));
    CHECK(j["generator_layers"].size() == 5);
    CHECK(j["discriminator_layers"].size() == 6); // the sigmoid went into the loss
    for (const char* ext : { ".md", ".csv" }) {
        const std::string report = quoted(f.dir / (std::string("gan") + ext));
        CHECK(test::runCli(f.gan("--batch 4 --steps 1 --warmup 0 --report " + report)).status == 0);
        CHECK(fs::file_size(f.dir / (std::string("gan") + ext)) > 200);
    }
    const NpyArray fake = readNpy(f.dir / "fake.npy");
    CHECK(fake.dims == std::vector<int64_t> { 4, 3, 8, 8 });
    for (const char* which : { "generator", "discriminator" }) {
        const Network net = loadNetwork(f.dir / "w" / which / "network.json");
        CHECK(inferShapes(net).ok());
    }
    CHECK(std::holds_alternative<Sigmoid>(
        loadNetwork(f.dir / "w" / "discriminator" / "network.json").layers.back().spec));
}

TEST_CASE("gan's bad input is exit 2 or 3 with a message that names what is wrong", "[cli]")
{
    const GanFolder f;
    const auto expect = [&](const std::string& args, int status, const std::string& words) {
        const test::CliResult r = test::runCli(f.gan(args));
        INFO(args << "\n" << r.output);
        CHECK(r.status == status);
        CHECK(r.output.find(words) != std::string::npos);
    };
    expect("--lr abc", 2, "--lr abc: not a number");
    expect("--betas 0.5", 2, "expected two numbers");
    expect("--batch 4 --report x.txt", 2, "gan writes .csv, .json or .md");
    expect("--batch 4 --backends cpu.fft", 3, "cpu.fft has no training path");
    const std::vector<float> wrong(4 * 3 * 4 * 4, 0.5f);
    writeNpy(f.dir / "small.npy", { 4, 3, 4, 4 }, wrong.data());
    expect("--batch 4 --real " + quoted(f.dir / "small.npy"), 2, "the real images are [4, 3, 4, 4]");
    const test::CliResult swapped = test::runCli(
        "gan " + quoted(f.data / "discriminator.json") + " " + quoted(f.data / "generator.json") + " --batch 4");
    CHECK(swapped.status == 2);
}
