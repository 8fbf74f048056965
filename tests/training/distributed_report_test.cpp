// Data parallel's gather and reports without a GPU: two ranks (threads) send rank 0 their steps and parameters over
// the TCP group (gatherRanks), and rank 0's reports show a track per rank, each bucket's all-reduce and the part
// hidden behind the backward, and each rank's parameter distance to rank 0's. The step timings here are made up by
// the test (the GPU test measures real ones); what is checked is that every number reaches every report. The same for
// the DCGAN loop's ranks (gatherGanRanks): the whole batch's losses on rank 0 and every GAN report.
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/training/distributed.h"
#include "compute/training/gan_run.h"
#include "compute/training/train_run.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace convscope;

namespace {

// Rank 1's trained parameters a little off rank 0's (its first weight's first element), for the drift the gathers
// must report.
void offsetFirstWeight(Network& net)
{
    auto w = std::make_shared<Tensor>(net.layers[0].weight->clone());
    w->data()[0] += 0.5f;
    net.layers[0].weight = w;
}

// Rank 1's part on a thread and rank 0's here, over a TCP group on a free loopback port; rank 1's exception, if any,
// as text (empty: none).
std::string withTwoRanks(
    const std::function<void(ProcessGroup&)>& rank1, const std::function<void(ProcessGroup&)>& rank0)
{
    const int port = test::freeLoopbackPort();
    const DistributedEnv e0 { 0, 2, 0, 2, "127.0.0.1", port }, e1 { 1, 2, 1, 2, "127.0.0.1", port };
    std::string error;
    std::thread other([&] {
        try {
            rank1(*ProcessGroup::rendezvous(e1, 10));
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    try {
        rank0(*ProcessGroup::rendezvous(e0, 10));
    } catch (...) {
        other.join(); // never leave the thread joinable: rank 0's failure is the test's
        throw;
    }
    other.join();
    return error;
}

// LeNet-5's result on one rank: two steps whose timings depend on the rank, two buckets.
TrainResult rankResult(int rank)
{
    TrainResult r;
    r.network = loadNetwork(test::examplesDir() / "lenet5.json");
    r.shapes = inferShapes(r.network);
    materializeParameters(r.network, r.shapes);
    r.worldSize = 2;
    r.globalBatch = 2;
    SelectionTraining sel;
    sel.selection = Selection { "cudnn", "auto" };
    sel.rank = rank;
    sel.worldSize = 2;
    sel.trained = r.network;
    if (rank == 1)
        offsetFirstWeight(sel.trained);
    for (int s = 0; s < 2; ++s) {
        StepResult st;
        st.loss = 2.0 - s;
        st.lossMs = 0.1;
        st.wallMs = 3.0 + rank;
        st.backwardMs = 1.0;
        st.layers.assign(r.network.layers.size(), LayerPhaseMs { 0.01, 0.02, 0.03, 0.04 });
        st.buckets = { { 11, 7, 4096, 0.1, 0.4 + rank, 0.4 }, { 3, 0, 8192, 0.9, 0.5, 0.1 } };
        sel.steps.push_back(st);
    }
    r.selections.push_back(sel);
    return r;
}
} // namespace

TEST_CASE(
    "distributed: rank 0 gathers every rank's steps and its reports show a track per rank", "[training][distributed]")
{
    TrainResult r;
    const std::string error = withTwoRanks(
        [](ProcessGroup& g) {
            TrainResult mine = rankResult(1);
            gatherRanks(mine, g);
            CHECK(mine.selections.size() == 1); // a non-zero rank keeps its own only
        },
        [&](ProcessGroup& g) {
            r = rankResult(0);
            gatherRanks(r, g);
        });
    REQUIRE(error.empty());
    REQUIRE(r.selections.size() == 2);
    const SelectionTraining& one = r.selections[1];
    CHECK(one.rank == 1);
    CHECK(one.label() == "cudnn.auto · rank 1");
    CHECK(one.steps.size() == 2);
    CHECK(one.steps[1].wallMs == 4.0);
    CHECK(one.steps[0].buckets[0].allReduceMs == Approx(1.4));
    CHECK(one.steps[0].buckets[1].firstLayer == 3);
    CHECK(one.maxParamRelL2 > 0);

    const std::string csv = trainingReportCsv(r);
    CHECK_THAT(csv,
        Catch::Matchers::Contains("cudnn.auto · rank 1,0,\"bucket 0 (L11–L7, 0.004096 MB)\",bucket,all-reduce,1.4,"));
    CHECK_THAT(csv, Catch::Matchers::Contains("all-reduce-hidden,0.4,"));
    const nlohmann::json j = nlohmann::json::parse(trainingReportJson(r));
    CHECK(j["world_size"] == 2);
    CHECK(j["selections"][1]["rank"] == 1);
    CHECK(j["selections"][0]["buckets"][1]["hidden_median_ms"].get<double>() == Approx(0.1));
    CHECK(j["selections"][1]["step_wall_ms"][0].get<double>() == 4.0);
    const std::string md = trainingReportMarkdown(r);
    CHECK_THAT(md, Catch::Matchers::Contains("Data parallel over 2 ranks"));
    CHECK_THAT(md, Catch::Matchers::Contains("## cudnn.auto · rank 1"));
    CHECK_THAT(md, Catch::Matchers::Contains("| bucket 1 (L3–L0, 0.008192 MB) |"));
    const nlohmann::json trace = nlohmann::json::parse(trainingChromeTrace(r));
    int rankTracks = 0, commTracks = 0, allReduces = 0;
    for (const auto& ev : trace["traceEvents"]) {
        if (ev["name"] == "thread_name") {
            const std::string name = ev["args"]["name"];
            rankTracks += name.find("rank") != std::string::npos && name.find("all-reduce") == std::string::npos;
            commTracks += name.find("all-reduce") != std::string::npos;
        }
        allReduces += ev.value("cat", "") == "all-reduce";
    }
    CHECK(rankTracks == 2);
    CHECK(commTracks == 2);
    CHECK(allReduces == 8); // 2 ranks × 2 steps × 2 buckets
}

namespace {

// The toy DCGAN pair's result on one rank: two steps whose losses and times depend on the rank.
GanResult ganRankResult(int rank)
{
    GanResult r;
    for (auto [net, file] :
        { std::pair { &r.generator, "generator.json" }, { &r.discriminator, "discriminator.json" } }) {
        *net = loadNetwork(test::dataDir() / "training" / "dcgan" / file);
        materializeParameters(*net, inferShapes(*net));
    }
    r.options.selection = Selection { "cudnn", "auto" };
    r.options.batch = 8;
    r.options.steps = 2;
    r.rank = rank;
    r.worldSize = 2;
    if (rank == 1)
        offsetFirstWeight(r.generator);
    for (int s = 0; s < 2; ++s) {
        GanStep st;
        st.lossD = 1.0 + rank;
        st.lossG = 2.0 + 2 * rank;
        st.dReal = 0.5 + 0.1 * rank;
        st.dFake = 0.25;
        st.phases.dRealForward = 0.1;
        st.phases.gBackward = 0.2;
        st.phases.allReduce = 0.3 + rank;
        st.phases.allReduceHidden = 0.2;
        st.wallMs = 5.0 + rank;
        st.dataMs = 0.5;
        r.steps.push_back(st);
    }
    return r;
}

} // namespace

TEST_CASE("distributed: rank 0 gathers the DCGAN loop's ranks, the whole batch's losses, and its reports show them",
    "[training][distributed][gan]")
{
    GanResult r;
    const std::string error = withTwoRanks(
        [](ProcessGroup& g) {
            GanResult mine = ganRankResult(1);
            gatherGanRanks(mine, g);
            CHECK(mine.rankSteps.empty()); // a non-zero rank keeps its own only
            CHECK(mine.steps[0].lossD == 2.0);
        },
        [&](ProcessGroup& g) {
            r = ganRankResult(0);
            gatherGanRanks(r, g);
        });
    REQUIRE(error.empty());
    REQUIRE(r.rankSteps.size() == 2);
    CHECK(r.rankSteps[1][1].wallMs == 6.0);
    CHECK(r.rankSteps[1][0].phases.allReduce == Approx(1.3));
    CHECK(r.steps[0].lossD == Approx(1.5)); // the ranks' mean: the whole batch's loss
    CHECK(r.steps[1].lossG == Approx(3.0));
    CHECK(r.steps[0].dReal == Approx(0.55));
    CHECK(r.maxParamRelL2 > 0);

    CHECK_THAT(
        ganDataParallelLine(r), Catch::Matchers::Contains("data parallel: 2 ranks, a batch of 8 split 4 per rank"));
    CHECK_THAT(ganDataParallelLine(r), Catch::Matchers::Contains("step median by rank:"));
    const nlohmann::json j = nlohmann::json::parse(ganReportJson(r));
    CHECK(j["data_parallel"]["world_size"] == 2);
    CHECK(j["data_parallel"]["batch_per_rank"] == 4);
    CHECK(j["data_parallel"]["ranks"][1]["wall_median_ms"].get<double>() == 6.0);
    CHECK(j["data_parallel"]["max_param_rel_l2"].get<double>() > 0);
    CHECK(j["step_results"][0]["ms"]["all-reduce"].get<double>() == Approx(0.3));
    CHECK(j["step_results"][0]["ms"]["step (wall clock)"].get<double>() == 5.0);
    const std::string csv = ganReportCsv(r);
    CHECK_THAT(csv, Catch::Matchers::Contains("cudnn.auto,,,,,rank 1 step,"));
    CHECK_THAT(csv, Catch::Matchers::Contains("cudnn.auto,,,,,all-reduce hidden,0.2,"));
    const std::string md = ganReportMarkdown(r);
    CHECK_THAT(md, Catch::Matchers::Contains("Data parallel: 2 ranks, a batch of 8 split 4 per rank"));
    CHECK_THAT(md, Catch::Matchers::Contains("| rank | step median ms |"));
}
