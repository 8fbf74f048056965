// `convscope-cli train --distributed` and `--nproc-per-node` without a GPU: the torchrun environment's errors, a rank
// that cannot reach rank 0 (a timeout naming the address, never a hang), and the launcher starting two ranks that
// meet at the rendezvous and then refuse a backend without data parallel (cpu.direct), with the ranks' exit status;
// the same for `gan` (the DCGAN loop under data parallel).
// Built without NCCL, --distributed says why it is unavailable.
#include "tests/cli/cli_runner.h"
#include "tests/test_support.h"

#include "compute/npy.h"

#include "convscope_config.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// LeNet-5 with a batch of 4 and its class targets, in a fresh folder.
struct DdpFolder {
    test::TempDir tmp;
    DdpFolder()
    {
        const Tensor x = test::randomTensor(Shape::nchw(4, 1, 28, 28), 5);
        writeNpy(tmp.path / "x.npy", { 4, 1, 28, 28 }, x.data());
        const float y[] = { 3, 1, 4, 1 };
        writeNpy(tmp.path / "y.npy", { 4 }, y);
        writeNpy(tmp.path / "y3.npy", { 3 }, y);
    }
    std::string train(const std::string& rest) const
    {
        return "train " + quoted(test::examplesDir() / "lenet5.json") + " --input " + quoted(tmp.path / "x.npy")
            + " --target " + quoted(tmp.path / "y.npy") + " --steps 1 --warmup 0 " + rest;
    }
};

const char* const kUnset = "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT ";

} // namespace

TEST_CASE("train --distributed: the torchrun environment and the rendezvous's timeout", "[cli][distributed]")
{
    const DdpFolder f;
    // The test's own environment may hold torchrun's variables: every run below unsets them and sets its own.
    const std::string cli = "'" + test::cliPath().string() + "' ";
    const auto run = [&](const std::string& env, const std::string& args) {
        test::CliResult r;
        const std::string cmd = std::string(kUnset) + env + " " + cli + args + " 2>&1";
        FILE* p = popen(cmd.c_str(), "r");
        REQUIRE(p);
        char buf[4096];
        size_t n = 0;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0)
            r.output.append(buf, n);
        const int raw = pclose(p);
        r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
        return r;
    };
    if (!CONVSCOPE_WITH_NCCL) {
        const test::CliResult r = run("", f.train("--backends cudnn.auto --distributed"));
        CHECK(r.status == 3);
        CHECK_THAT(r.output, Catch::Matchers::Contains("--distributed is unavailable"));
        return;
    }
    const test::CliResult noEnv = run("", f.train("--backends cudnn.auto --distributed"));
    CHECK(noEnv.status == 2);
    CHECK_THAT(noEnv.output, Catch::Matchers::Contains("the environment variable WORLD_SIZE is not set"));

    const test::CliResult badRank = run("RANK=2 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500",
        f.train("--backends cudnn.auto --distributed"));
    CHECK(badRank.status == 2);
    CHECK_THAT(badRank.output, Catch::Matchers::Contains("RANK=2 but WORLD_SIZE=2"));

    // Rank 1 alone: nobody listens at the port; it gives up after the timeout and names the address.
    const int port = test::freeLoopbackPort();
    const auto t0 = std::chrono::steady_clock::now();
    const test::CliResult alone
        = run("RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port),
            f.train("--backends cudnn.auto --distributed --rendezvous-timeout 1"));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(alone.status == 2);
    CHECK_THAT(alone.output,
        Catch::Matchers::Contains("could not reach rank 0 at 127.0.0.1:" + std::to_string(port) + " within 1.0 s"));
    CHECK(waited < 30);
}

TEST_CASE("train --nproc-per-node starts the ranks, which meet and refuse a backend without data parallel",
    "[cli][distributed]")
{
    if (!CONVSCOPE_WITH_NCCL)
        return; // the environment test above checks the message
    const DdpFolder f;
    const test::CliResult r = test::runCli(f.train("--backends cpu.direct --nproc-per-node 2 --rendezvous-timeout 20"));
    CHECK(r.status == 3);
    CHECK_THAT(r.output, Catch::Matchers::Contains("starting 2 ranks"));
    CHECK_THAT(
        r.output, Catch::Matchers::Contains("cpu.direct: data-parallel training (--distributed) is unsupported"));
    // A batch that does not divide among the ranks: each rank says so before training.
    const test::CliResult odd = test::runCli("train " + quoted(test::examplesDir() / "lenet5.json")
        + " --batch 3 --target " + quoted(f.tmp.path / "y3.npy")
        + " --steps 1 --backends cpu.direct --nproc-per-node 2 --rendezvous-timeout 20");
    CHECK(odd.status == 2);
    CHECK_THAT(odd.output, Catch::Matchers::Contains("does not divide among 2 ranks"));
}

TEST_CASE("gan --nproc-per-node starts the ranks, which meet and refuse a backend without data parallel",
    "[cli][distributed]")
{
    if (!CONVSCOPE_WITH_NCCL)
        return; // the environment test above checks the message
    const fs::path data = test::dataDir() / "training" / "dcgan";
    const std::string gan = "gan " + quoted(data / "generator.json") + " " + quoted(data / "discriminator.json")
        + " --steps 1 --warmup 0 --rendezvous-timeout 20 --nproc-per-node 2 --backends cpu.im2col_gemm ";
    const test::CliResult r = test::runCli(gan + "--batch 4");
    CHECK(r.status == 3);
    CHECK_THAT(r.output, Catch::Matchers::Contains("starting 2 ranks"));
    CHECK_THAT(
        r.output, Catch::Matchers::Contains("cpu.im2col_gemm: data-parallel training (--distributed) is unsupported"));
    const test::CliResult odd = test::runCli(gan + "--batch 3");
    CHECK(odd.status == 2);
    CHECK_THAT(odd.output, Catch::Matchers::Contains("does not divide among 2 ranks"));
}
