// Data parallel's host side (compute/training/distributed.h), no GPU: the torchrun environment's errors, the batch
// split, the gradient buckets, and the TCP rendezvous between threads on localhost (an id broadcast from rank 0, a
// gather back to it, and the timeout message when nobody is listening or a rank never comes).
#include "compute/error.h"
#include "compute/training/distributed.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <map>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace convscope;

namespace {
std::function<const char*(const char*)> envOf(const std::map<std::string, std::string>& vars)
{
    return [vars](const char* name) -> const char* {
        const auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

std::map<std::string, std::string> goodEnv()
{
    return { { "RANK", "1" }, { "WORLD_SIZE", "2" }, { "LOCAL_RANK", "1" }, { "MASTER_ADDR", "127.0.0.1" },
        { "MASTER_PORT", "29500" } };
}

DistributedEnv localEnv(int rank, int world, int port)
{
    DistributedEnv e;
    e.rank = rank;
    e.worldSize = world;
    e.localRank = rank;
    e.localWorldSize = world;
    e.masterAddr = "127.0.0.1";
    e.masterPort = port;
    return e;
}
} // namespace

TEST_CASE("distributed: the torchrun environment", "[training][distributed]")
{
    const DistributedEnv e = parseDistributedEnv(envOf(goodEnv()));
    CHECK(e.rank == 1);
    CHECK(e.worldSize == 2);
    CHECK(e.localRank == 1);
    CHECK(e.localWorldSize == 2);
    CHECK(e.masterAddr == "127.0.0.1");
    CHECK(e.masterPort == 29500);
    CHECK(e.str() == "rank 1 of 2 (local rank 1) via 127.0.0.1:29500");

    const auto fails = [](std::map<std::string, std::string> vars, const std::string& message) {
        CHECK_THROWS_WITH(
            parseDistributedEnv(envOf(vars)), Catch::Matchers::Contains(message, Catch::CaseSensitive::Yes));
        CHECK_THROWS_AS(parseDistributedEnv(envOf(vars)), InputError);
    };
    for (const char* name : { "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT" }) {
        auto vars = goodEnv();
        vars.erase(name);
        fails(vars, std::string("the environment variable ") + name + " is not set");
    }
    auto vars = goodEnv();
    vars["RANK"] = "one";
    fails(vars, "RANK=one is not a non-negative integer");
    vars = goodEnv();
    vars["RANK"] = "2";
    fails(vars, "RANK=2 but WORLD_SIZE=2");
    vars = goodEnv();
    vars["WORLD_SIZE"] = "0";
    vars["RANK"] = "0";
    fails(vars, "WORLD_SIZE=0");
    vars = goodEnv();
    vars["MASTER_PORT"] = "70000";
    fails(vars, "MASTER_PORT=70000 is not a TCP port");
    vars = goodEnv();
    vars["LOCAL_WORLD_SIZE"] = "1";
    fails(vars, "LOCAL_RANK=1 but LOCAL_WORLD_SIZE=1");
}

TEST_CASE("distributed: the batch split across ranks", "[training][distributed]")
{
    CHECK(splitBatch(64, 0, 2).offset == 0);
    CHECK(splitBatch(64, 1, 2).offset == 32);
    CHECK(splitBatch(64, 1, 2).count == 32);
    CHECK(splitBatch(5, 0, 1).count == 5);
    CHECK_THROWS_WITH(splitBatch(10, 0, 4), Catch::Matchers::Contains("the batch of 10 does not divide among 4 ranks"));
    CHECK_THROWS_AS(splitBatch(1, 0, 2), InputError);

    Tensor images(Shape::nchw(4, 2, 1, 3));
    for (int64_t i = 0; i < images.numel(); ++i)
        images.data()[i] = float(i);
    const Tensor second = sliceBatch(images, 4, splitBatch(4, 1, 2));
    CHECK(second.shape() == Shape::nchw(2, 2, 1, 3));
    CHECK(second.data()[0] == 12);
    CHECK(second.data()[11] == 23);
    Tensor classes(Shape::features(4, 1));
    for (int i = 0; i < 4; ++i)
        classes.data()[i] = float(9 - i);
    const Tensor last = sliceBatch(classes, 4, splitBatch(4, 3, 4));
    CHECK(last.shape() == Shape::features(1, 1));
    CHECK(last.data()[0] == 6);
}

TEST_CASE("distributed: gradient buckets in reverse layer order", "[training][distributed]")
{
    const int64_t mib = int64_t(1) << 20;
    // Layers 0..5; layer 2 has no parameters. The first bucket closes past 1 MiB, the others past the cap.
    const std::vector<int64_t> bytes { 4 * mib, 3 * mib, 0, 2 * mib, mib / 2, mib / 4 };
    const std::vector<GradientBucket> b = assignBuckets(bytes, 6 * mib, mib);
    REQUIRE(b.size() == 3);
    CHECK(b[0].layers == std::vector<size_t> { 5, 4 });
    CHECK(b[0].bytes == mib * 3 / 4);
    CHECK(b[0].readyAfter() == 4);
    CHECK(b[1].layers == std::vector<size_t> { 3, 1 });
    CHECK(b[1].bytes == 5 * mib);
    CHECK(b[2].layers == std::vector<size_t> { 0 });
    CHECK(b[2].readyAfter() == 0);
    // A layer larger than the cap gets a bucket of its own; DDP's defaults put ResNet-18's 44.7 MB in a few buckets.
    const std::vector<GradientBucket> big = assignBuckets({ 30 * mib, 30 * mib });
    REQUIRE(big.size() == 2);
    CHECK(big[0].layers == std::vector<size_t> { 1 });
    CHECK(assignBuckets({ 0, 0 }).empty());
}

TEST_CASE("distributed: the TCP rendezvous on localhost", "[training][distributed]")
{
    const int port = test::freeLoopbackPort();
    std::string received;
    std::vector<std::string> gathered;
    std::string error;
    std::thread rank1([&] {
        try {
            auto g = ProcessGroup::rendezvous(localEnv(1, 3, port), 10);
            std::string id = "ignored";
            g->broadcast(id);
            received = id;
            CHECK(g->gather("from 1").empty());
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    std::thread rank2([&] {
        try {
            auto g = ProcessGroup::rendezvous(localEnv(2, 3, port), 10);
            std::string id;
            g->broadcast(id);
            CHECK(id.size() == 128);
            g->gather(std::string(100000, 'x')); // longer than one recv
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    auto g0 = ProcessGroup::rendezvous(localEnv(0, 3, port), 10);
    std::string id(128, '\0');
    for (size_t i = 0; i < id.size(); ++i)
        id[i] = char(i * 7);
    std::string copy = id;
    g0->broadcast(copy);
    gathered = g0->gather("from 0");
    rank1.join();
    rank2.join();
    CHECK(error.empty());
    CHECK(received == id);
    REQUIRE(gathered.size() == 3);
    CHECK(gathered[0] == "from 0");
    CHECK(gathered[1] == "from 1");
    CHECK(gathered[2] == std::string(100000, 'x'));
}

TEST_CASE("distributed: a rank that cannot reach the others times out with a message", "[training][distributed]")
{
    const int port = test::freeLoopbackPort();
    // Nobody listens: rank 1 names the address and the seconds it waited.
    CHECK_THROWS_WITH(ProcessGroup::rendezvous(localEnv(1, 2, port), 0.5),
        Catch::Matchers::Contains("could not reach rank 0 at 127.0.0.1:" + std::to_string(port) + " within 0.5 s"));
    // Rank 0 alone: names the ranks that never came.
    CHECK_THROWS_WITH(ProcessGroup::rendezvous(localEnv(0, 3, port), 0.5),
        Catch::Matchers::Contains("0 of the 2 other ranks connected (missing: rank 1, 2)"));
    // A peer that connects and then never answers: the receive times out too.
    std::thread quiet([&] {
        auto g = ProcessGroup::rendezvous(localEnv(1, 2, port), 10);
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    });
    auto g0 = ProcessGroup::rendezvous(localEnv(0, 2, port), 1);
    // The broadcast goes into the socket's buffer; the gather waits for rank 1's answer, which never comes.
    CHECK_THROWS_WITH(g0->gather("x"), Catch::Matchers::Contains("waited 1.0 s for rank 1 and nothing came"));
    quiet.join();
}

TEST_CASE("distributed: ranks started with different runs are told so, all of them", "[training][distributed]")
{
    const int port = test::freeLoopbackPort();
    std::string error1;
    std::thread rank1([&] {
        try {
            auto g = ProcessGroup::rendezvous(localEnv(1, 2, port), 10);
            g->requireSame("lenet5, 10 steps", "the training");
            g->requireSame("resnet18", "the training");
        } catch (const InputError& e) {
            error1 = e.what();
        }
    });
    auto g0 = ProcessGroup::rendezvous(localEnv(0, 2, port), 10);
    g0->requireSame("lenet5, 10 steps", "the training"); // the same: nothing thrown
    CHECK_THROWS_WITH(g0->requireSame("lenet5", "the training"),
        Catch::Matchers::Contains("rank 1 runs the training \"resnet18\" but rank 0 runs \"lenet5\""));
    rank1.join();
    CHECK_THAT(error1, Catch::Matchers::Contains("rank 1 runs the training \"resnet18\""));
}
