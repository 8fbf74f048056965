// The Tensor Core ceilings through a saved session's JSON, and the rounding bound in the CSV and Markdown reports:
// its own column, the error written as "3.1e-3 (bound 1.9e-2)", and a layer above its bound flagged.
#include "compute/report.h"
#include "compute/session.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace convscope;

namespace {

// One linear layer run by one selection in `math`, its error and bound set as the profiler sets them.
std::pair<Network, RunResult> oneLayerRun(const std::string& math, double relL2, double bound)
{
    Network net;
    net.name = "one";
    net.input = { 1, 4, 1, 1, false, "random:1" };
    net.layers.push_back({ "fc", Linear { 3, true }, {}, {}, {}, {}, {}, {}, {} });
    RunResult run;
    run.networkName = net.name;
    run.meta.mathMode = math;
    run.shapes = inferShapes(net);
    SelectionResult s;
    s.selection = { "cuda", "implicit_gemm" };
    s.ok = true;
    s.metadata["math"] = math;
    LayerResult l;
    l.computeMs.median = 0.5;
    l.error.valid = true;
    l.error.relL2 = relL2;
    l.error.maxAbs = 2 * relL2;
    l.error.bound = bound;
    s.layers.push_back(std::move(l));
    run.selections.push_back(std::move(s));
    return { std::move(net), std::move(run) };
}

std::vector<std::string> csvLines(const std::string& csv)
{
    std::vector<std::string> out;
    std::istringstream in(csv);
    for (std::string line; std::getline(in, line);)
        out.push_back(line.substr(0, line.find('\r')));
    return out;
}

// The field of `row` under the header's `column` (RFC 4180: quoted fields may hold commas, "" is a quote).
std::string field(const std::vector<std::string>& lines, size_t row, const std::string& column)
{
    auto split = [](const std::string& s) {
        std::vector<std::string> f(1);
        bool quoted = false;
        for (size_t i = 0; i < s.size(); ++i) {
            if (quoted && s[i] == '"' && i + 1 < s.size() && s[i + 1] == '"')
                f.back() += '"', ++i;
            else if (s[i] == '"')
                quoted = !quoted;
            else if (s[i] == ',' && !quoted)
                f.emplace_back();
            else
                f.back() += s[i];
        }
        return f;
    };
    const auto header = split(lines.at(0));
    const auto values = split(lines.at(row));
    for (size_t i = 0; i < header.size(); ++i)
        if (header[i] == column)
            return i < values.size() ? values[i] : "";
    FAIL("no column " << column);
    return {};
}

} // namespace

TEST_CASE("error figures are written short, with the rounding bound when one is stated", "[report][bound]")
{
    CHECK(shortScientific(3.14e-3) == "3.1e-3");
    CHECK(shortScientific(1.94e-2) == "1.9e-2");
    CHECK(shortScientific(2.5) == "2.5");
    CHECK(shortScientific(1.0e12) == "1.0e12");
    CHECK(shortScientific(0) == "0");
    ErrorMetrics e;
    CHECK(relL2Text(e).empty()); // no reference
    e.valid = true;
    e.relL2 = 3.14e-3;
    CHECK(relL2Text(e) == "3.1e-3"); // FP32: no bound stated
    CHECK_FALSE(exceedsBound(e));
    e.bound = 1.94e-2;
    CHECK(relL2Text(e) == "3.1e-3 (bound 1.9e-2)");
    CHECK_FALSE(exceedsBound(e));
    e.relL2 = 0.05;
    CHECK(exceedsBound(e));
    e.relL2 = NAN; // a NaN output is never within a bound
    CHECK(exceedsBound(e));
}

TEST_CASE("the CSV has a rounding_bound column and the Markdown states and flags the bound", "[report][bound]")
{
    {
        const auto [net, run] = oneLayerRun("fp16", 3.14e-3, 1.94e-2);
        const auto lines = csvLines(reportCsv(net, run));
        REQUIRE(lines.size() == 2);
        CHECK(field(lines, 1, "math_mode") == "fp16");
        CHECK(std::stod(field(lines, 1, "rel_l2_error")) == Approx(3.14e-3));
        CHECK(std::stod(field(lines, 1, "rounding_bound")) == Approx(1.94e-2));
        CHECK(field(lines, 1, "note").empty()); // the column after it is still the note
        const std::string md = reportMarkdown(net, run);
        CHECK(md.find("| 3.1e-3 (bound 1.9e-2) |") != std::string::npos);
        CHECK(md.find("above the bound") == std::string::npos);
        const auto j = nlohmann::json::parse(reportJson(net, run));
        CHECK(j["selections"][0]["layers"][0]["error"]["rounding_bound"].get<double>() == Approx(1.94e-2));
    }
    {
        const auto [net, run] = oneLayerRun("bf16", 0.2, 1.5e-2);
        CHECK(reportMarkdown(net, run).find("| 2.0e-1 (bound 1.5e-2) **⚠ above the bound** |") != std::string::npos);
    }
    {
        // FP32 states no bound: the column is empty, the error alone.
        const auto [net, run] = oneLayerRun("fp32", 2e-7, 0);
        const auto lines = csvLines(reportCsv(net, run));
        CHECK(field(lines, 1, "rounding_bound").empty());
        CHECK(reportMarkdown(net, run).find("| 2.0e-7 |") != std::string::npos);
    }
}

TEST_CASE("the Tensor Core ceilings survive a saved session's JSON", "[session][ceilings]")
{
    CeilingsEntry e;
    e.backend = "cudnn";
    e.ceilings.device = "NVIDIA H100 80GB HBM3";
    e.ceilings.peakGflops = 51000;
    e.ceilings.bandwidthGBs = 3000;
    e.ceilings.computeMethod = "cuBLAS SGEMM";
    e.ceilings.bandwidthMethod = "copy";
    e.ceilings.mathGflops = { { "tf32", 380000 }, { "fp16", 690000 }, { "bf16", 700000 } };
    e.ceilings.mathMethods = { { "tf32", "cuBLAS TF32 GEMM 8192³, …" }, { "fp16", "cuBLAS FP16 GEMM 8192³, …" },
        { "bf16", "cuBLAS BF16 GEMM 8192³, …" } };
    const auto back = ceilingsFromJson(ceilingsToJson({ e }));
    REQUIRE(back.size() == 1);
    CHECK(back[0].ceilings.mathGflops == e.ceilings.mathGflops);
    CHECK(back[0].ceilings.mathMethods == e.ceilings.mathMethods);
    CHECK(back[0].ceilings.peakFor(MathMode::BF16) == 700000);
    CHECK(back[0].ceilings.peakFor(MathMode::FP32) == 51000);

    // A session saved before the Tensor Core ceilings, and a malformed entry: the FP32 ceiling for every mode.
    const auto old = ceilingsFromJson(R"([{"backend":"cuda","device":"d","peak_gflop_per_s":100,
        "bandwidth_gb_per_s":10},{"backend":"cudnn","peak_gflop_per_s":5,"math_gflop_per_s":{"fp16":"fast","bf16":-1},
        "math_methods":[1]}])");
    REQUIRE(old.size() == 2);
    CHECK(old[0].ceilings.mathGflops.empty());
    CHECK(old[0].ceilings.peakFor(MathMode::FP16) == 100);
    CHECK(old[1].ceilings.mathGflops.empty());
    CHECK(old[1].ceilings.mathMethods.empty());
}
