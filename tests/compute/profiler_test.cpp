// The profiler: statistics, interleaved passes, errors against the reference, failures recorded per
// selection, progress and cancellation, the memory budget; and the reports built from its result.
#include "compute/profiler.h"
#include "compute/report.h"
#include "compute/stats.h"

#include "tests/test_support.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace convscope;

namespace {

Network smallNet()
{
    Network net;
    net.name = "small, \"quoted\"";
    net.input = { 2, 3, 12, 10, false, "random:5" };
    Conv2d c;
    c.out_channels = 4;
    c.kernel_size = { 3, 3 };
    c.padding = { Padding2d::Mode::Explicit, 1, 0, 2, 1 };
    net.layers.push_back({ "conv, first", c, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "relu", ReLU {}, {}, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "pool", MaxPool2d {}, {}, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "flat", Flatten {}, {}, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "fc", Linear { 7, true }, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "sm", Softmax {}, {}, {}, {}, {}, {}, {}, {}, {} });
    return net;
}

} // namespace

TEST_CASE("Stats of samples", "[profiler]")
{
    const Stats s = Stats::of({ 4, 1, 3, 2 });
    CHECK(s.median == 2.5);
    CHECK(s.min == 1);
    CHECK(s.max == 4);
    CHECK(s.mean == 2.5);
    CHECK(s.stddev == Approx(1.2909944));
    CHECK(s.count == 4);
    CHECK(Stats::of({ 5 }).stddev == 0);
    CHECK(Stats::of({}).count == 0);
}

TEST_CASE("profile runs every selection, keeps every sample and checks against cpu.direct", "[profiler]")
{
    Network net = smallNet();
    const Tensor input = test::randomTensor(net.input.shape(), 11);
    ProfileOptions opt;
    opt.selections = { { "cpu", "im2col_gemm" }, { "cpu", "direct" } };
    opt.warmup = 1;
    opt.repeat = 4;
    opt.keepOutputs = true;
    std::vector<double> fractions;
    opt.progress = [&](double f, const std::string&) { fractions.push_back(f); };
    const RunResult r = profile(net, input, opt);

    REQUIRE(r.selections.size() == 2);
    for (const auto& s : r.selections) {
        INFO(s.selection.str() << ": " << s.failure);
        REQUIRE(s.ok);
        REQUIRE(s.layers.size() == net.layers.size());
        for (const auto& l : s.layers) {
            CHECK(l.samplesMs.size() == 4);
            CHECK(l.computeMs.count == 4);
            CHECK(l.computeMs.min <= l.computeMs.median);
            CHECK(l.error.valid);
            CHECK(l.error.relL2 <= 1e-5);
            REQUIRE(l.output);
            CHECK(l.output->shape() == r.shapes.layers[l.index].out);
        }
        CHECK(s.totalMs.count == 4);
    }
    CHECK(r.find({ "cpu", "direct" })->layers[0].error.relL2 == 0); // the reference against itself
    CHECK(r.meta.reference == "cpu.direct");
    CHECK(r.meta.repeat == 4);
    CHECK(r.meta.mathMode == "fp32");
    CHECK_FALSE(r.meta.cpuModel.empty());
    REQUIRE_FALSE(fractions.empty());
    CHECK(fractions.back() == 1.0);
    CHECK(std::is_sorted(fractions.begin(), fractions.end()));

    SECTION("reports")
    {
        const std::string csv = reportCsv(net, r);
        CHECK(csv.find("\"conv, first\"") != std::string::npos); // RFC 4180 quoting
        CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 2 * int(net.layers.size()));
        const auto j = nlohmann::json::parse(reportJson(net, r));
        CHECK(j["network"] == net.name);
        CHECK(j["selections"][0]["layers"][0]["samples_ms"].size() == 4);
        CHECK(j["layers"][4]["output_shape"] == "[2, 7]");
        const std::string md = reportMarkdown(net, r);
        CHECK(md.find("| 4 | fc | linear | [2, 7] |") != std::string::npos);
        const auto trace = nlohmann::json::parse(reportChromeTrace(net, r));
        int complete = 0;
        for (const auto& e : trace["traceEvents"])
            complete += e["ph"] == "X";
        CHECK(complete == 2 * 4 * int(net.layers.size()));
    }
}

TEST_CASE("a selection that cannot run is recorded with its reason and the others still run", "[profiler]")
{
    Network net = smallNet();
    const Tensor input = test::randomTensor(net.input.shape(), 3);
    ProfileOptions opt;
    opt.selections = { { "nosuch", "fast" }, { "cpu", "warp" }, { "cpu", "direct" } };
    opt.repeat = 1;
    opt.warmup = 0;
    const RunResult r = profile(net, input, opt);
    CHECK_FALSE(r.selections[0].ok);
    CHECK(r.selections[0].unsupported);
    CHECK_THAT(r.selections[0].failure, Catch::Contains("unknown backend"));
    CHECK_FALSE(r.selections[1].ok);
    CHECK_THAT(r.selections[1].failure, Catch::Contains("no algorithm \"warp\""));
    CHECK(r.selections[2].ok);
}

TEST_CASE("profile refuses an invalid network, a wrong input and a run over the memory budget", "[profiler]")
{
    Network net = smallNet();
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct" } };
    CHECK_THROWS_AS(profile(net, test::randomTensor(Shape::nchw(1, 3, 12, 10), 1), opt), InputError);

    opt.hostMemoryBudgetBytes = 1024;
    CHECK_THROWS_WITH(profile(net, test::randomTensor(net.input.shape(), 1), opt), Catch::Contains("would need"));

    Network bad = smallNet();
    std::get<Conv2d>(bad.layers[0].spec).kernel_size = { 30, 3 };
    opt.hostMemoryBudgetBytes = 0;
    CHECK_THROWS_WITH(profile(bad, test::randomTensor(bad.input.shape(), 1), opt),
        Catch::Contains("layer 0 (conv, first)") && Catch::Contains("kernel 30"));
}

TEST_CASE("cancelling stops the run", "[profiler]")
{
    Network net = smallNet();
    std::atomic<bool> cancel { false };
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct" } };
    opt.repeat = 100;
    opt.cancel = &cancel;
    int calls = 0;
    opt.progress = [&](double, const std::string&) {
        if (++calls == 3)
            cancel = true;
    };
    CHECK_THROWS_AS(profile(net, test::randomTensor(net.input.shape(), 1), opt), Cancelled);
    CHECK(calls < 10);
}

TEST_CASE("interleaved passes rotate the selections' order by one each pass", "[profiler]")
{
    Network net = smallNet();
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct" }, { "cpu", "im2col_gemm" }, { "cpu", "tap_gemm" } };
    opt.warmup = 1;
    opt.repeat = 3;
    opt.interleave = true;
    std::vector<std::string> order;
    opt.progress = [&](double, const std::string& what) {
        if (const auto pos = what.find(" pass "); pos != std::string::npos)
            order.push_back(what.substr(0, pos) + "@" + what.substr(pos + 6, what.find('/') - pos - 6));
    };
    const RunResult run = profile(net, test::randomTensor(net.input.shape(), 1), opt);
    REQUIRE(run.selections.size() == 3);
    for (const auto& s : run.selections)
        CHECK(s.layers.at(0).samplesMs.size() == 3);
    const std::vector<std::string> expected = { "cpu.direct@1", "cpu.im2col_gemm@1", "cpu.tap_gemm@1", //
        "cpu.im2col_gemm@2", "cpu.tap_gemm@2", "cpu.direct@2", //
        "cpu.tap_gemm@3", "cpu.direct@3", "cpu.im2col_gemm@3", //
        "cpu.direct@4", "cpu.im2col_gemm@4", "cpu.tap_gemm@4" };
    CHECK(order == expected);
}
