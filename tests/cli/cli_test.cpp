// convscope-cli end to end: every example through shapes and run, reports and dumps that parse back,
// and the exit statuses and messages for bad input.
#include "tests/cli/cli_runner.h"
#include "tests/test_support.h"

#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/shape_inference.h"

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

using Result = test::CliResult;

Result cli(const std::string& args) { return test::runCli(args); }

std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }

void writeText(const fs::path& p, const std::string& text)
{
    std::ofstream out(p, std::ios::binary);
    out << text;
}

std::string slurp(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> examples()
{
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(test::examplesDir()))
        if (e.path().extension() == ".json")
            out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

const char* kTinyNet = R"({"format": "convscope-network", "version": 1, "name": "tiny",
  "input": {"batch": 2, "channels": 3, "height": 9, "width": 7, "source": "random:3"},
  "layers": [
    {"type": "conv2d", "name": "c", "out_channels": 4, "kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0, 1, 1]},
    {"type": "relu"},
    {"type": "flatten"},
    {"type": "linear", "name": "fc", "out_features": 5}
  ]})";

} // namespace

// The selections every example runs on. cpu.direct is the naive loop nest: under AddressSanitizer it took ~60 s on each
// of the two largest examples (ResNet-18 at 224², the U-Net encoder block), most of the sanitizer stage's test time.
// There the examples above 0.5 GFLOP (VGG block 15 s) run on the two fast CPU algorithms, one the reference of the
// other; the release build runs every example on all three, and the sanitizer build still runs cpu.direct on every
// smaller example.
std::string cpuSelections(const fs::path& net)
{
#if defined(__SANITIZE_ADDRESS__)
    if (inferShapes(loadNetwork(net)).total.flops > 5e8)
        return "cpu.im2col_gemm,cpu.tap_gemm+fused";
#else
    (void)net;
#endif
    return "cpu.direct,cpu.im2col_gemm,cpu.tap_gemm+fused";
}

TEST_CASE("every example passes shapes and runs on both CPU algorithms", "[cli]")
{
    const auto nets = examples();
    REQUIRE(nets.size() >= 9);
    for (const auto& net : nets) {
        INFO(net);
        const Result shapes = cli("shapes " + quote(net));
        CHECK(shapes.status == 0);
        CHECK(shapes.output.find("total") != std::string::npos);
        const Result run = cli("run " + quote(net) + " --backends " + cpuSelections(net) + " --warmup 0 --repeat 1");
        CHECK(run.status == 0);
        CHECK(run.output.find("cpu.im2col_gemm ms") != std::string::npos);
        CHECK(run.output.find("FAIL") == std::string::npos);
    }
}

TEST_CASE("a layer input that names nothing above it is exit 2 naming the layer and the name", "[cli]")
{
    test::TempDir dir;
    const auto bad = [&](const std::string& layers) {
        const fs::path p = dir.path / "skip.json";
        writeText(p,
            R"({"format": "convscope-network", "version": 1, "name": "skip",
            "input": {"batch": 1, "channels": 2, "height": 5, "width": 5, "source": "random"}, "layers": [)"
                + layers + "]}");
        return cli("shapes " + quote(p));
    };
    Result r = bad(R"({"type": "relu", "name": "r1"}, {"type": "add", "name": "sum", "inputs": ["r1", "r9"]})");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("layer 1 (sum)") && Catch::Contains("\"r9\" is not the name of any layer"));
    r = bad(R"({"type": "add", "name": "sum", "inputs": ["input", "r1"]}, {"type": "relu", "name": "r1"})");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("layer 0 (sum)") && Catch::Contains("\"r1\" is used before its layer"));
    r = bad(R"({"type": "relu", "name": "r1", "inputs": ["r1"]})");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::Contains("layer 0 (r1)") && Catch::Contains("is the layer itself"));
    // A valid skip: shapes shows what each layer reads and the memory a skip keeps alive.
    r = bad(R"({"type": "relu", "name": "r1"}, {"type": "add", "name": "sum", "inputs": ["input", "r1"]})");
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("← input, r1") && Catch::Contains("peak"));
}

TEST_CASE("shapes prints the formula with the numbers filled in", "[cli]")
{
    const Result r = cli("shapes " + quote(test::examplesDir() / "lenet5.json"));
    REQUIRE(r.status == 0);
    CHECK(r.output.find("H_out = ⌊(28 + 2·2 − 1·(5−1) − 1) / 1⌋ + 1 = 28") != std::string::npos);
    CHECK(r.output.find("[1, 400]") != std::string::npos);
    CHECK(r.output.find("[1, 10]") != std::string::npos);
}

TEST_CASE("run writes reports, a trace and every layer's output", "[cli]")
{
    test::TempDir dir;
    writeText(dir.path / "tiny.json", kTinyNet);
    const Result r = cli("run " + quote(dir.path / "tiny.json")
        + " --backends cpu.im2col_gemm,cpu.direct --warmup 1 --repeat 3" + " --report " + quote(dir.path / "r.csv")
        + " --trace " + quote(dir.path / "t.json") + " --dump-outputs " + quote(dir.path / "out"));
    REQUIRE(r.status == 0);

    const std::string csv = slurp(dir.path / "r.csv");
    CHECK(csv.rfind("selection,backend,algorithm,math_mode,layer_index,layer_name", 0) == 0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 2 * 4); // header + 2 selections × 4 layers
    CHECK(csv.find("median_ms") != std::string::npos);

    const auto trace = nlohmann::json::parse(slurp(dir.path / "t.json"));
    int layerEvents = 0;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X")
            ++layerEvents;
    CHECK(layerEvents == 2 * 3 * 4); // selections × repeats × layers

    // 00_c.npy: H = ⌊(9 + 1 + 0 − 3) / 2⌋ + 1 = 4, W = (7 + 1 + 1 − 2) / 1 + 1 = 8.
    const NpyArray conv = readNpy(dir.path / "out" / "00_c.npy");
    CHECK(conv.dims == std::vector<int64_t> { 2, 4, 4, 8 });
    const NpyArray flat = readNpy(dir.path / "out" / "02_flatten1.npy");
    CHECK(flat.dims == std::vector<int64_t> { 2, 128 });
    const NpyArray fc = readNpy(dir.path / "out" / "03_fc.npy");
    CHECK(fc.dims == std::vector<int64_t> { 2, 5 });

    for (const char* ext : { ".json", ".md" }) {
        const fs::path report = dir.path / (std::string("r") + ext);
        REQUIRE(cli("run " + quote(dir.path / "tiny.json") + " --repeat 2 --report " + quote(report)).status == 0);
        const std::string text = slurp(report);
        if (std::string(ext) == ".json") {
            const auto j = nlohmann::json::parse(text);
            CHECK(j["selections"][0]["layers"][0]["samples_ms"].size() == 2);
            CHECK(j["metadata"]["math_mode"] == "fp32");
        } else {
            CHECK(text.find("| 0 | c | conv2d | [2, 4, 4, 8]") != std::string::npos);
        }
    }
}

TEST_CASE("run with an .npy as --input overrides the network input", "[cli]")
{
    test::TempDir dir;
    writeText(dir.path / "tiny.json", kTinyNet);
    std::vector<float> data(1 * 3 * 11 * 6, 0.5f);
    writeNpy(dir.path / "in.npy", { 1, 3, 11, 6 }, data.data());
    const Result r = cli("run " + quote(dir.path / "tiny.json") + " --repeat 1 --input " + quote(dir.path / "in.npy")
        + " --dump-outputs " + quote(dir.path / "out"));
    REQUIRE(r.status == 0);
    CHECK(readNpy(dir.path / "out" / "00_c.npy").dims == std::vector<int64_t> { 1, 4, 5, 7 });
}

TEST_CASE("run: the files of --dump-outputs sort in layer order past 100 layers", "[cli]")
{
    test::TempDir dir;
    std::string layers;
    for (int k = 0; k < 101; ++k)
        layers += std::string(k ? ", " : "") + R"({"type": "relu"})";
    writeText(dir.path / "deep.json",
        R"({"format": "convscope-network", "version": 1, "name": "deep", "input": {"batch": 1, "channels": 1,
        "height": 2, "width": 2, "source": "random"}, "layers": [)"
            + layers + "]}");
    const Result r = cli("run " + quote(dir.path / "deep.json") + " --repeat 1 --warmup 0 --reference none"
        + " --dump-outputs " + quote(dir.path / "out"));
    REQUIRE(r.status == 0);
    CHECK(std::filesystem::exists(dir.path / "out" / "000_relu1.npy"));
    CHECK(std::filesystem::exists(dir.path / "out" / "099_relu100.npy"));
    CHECK(std::filesystem::exists(dir.path / "out" / "100_relu101.npy"));
}

TEST_CASE("bench runs the lenet5 suite with ratios", "[cli]")
{
    test::TempDir dir;
    const Result r = cli("bench --suite lenet5 --backends cpu.direct,cpu.im2col_gemm --warmup 1 --repeat 3 --json "
        + quote(dir.path / "b.json"));
    REQUIRE(r.status == 0);
    CHECK(r.output.find("t(cpu.direct) / t(cpu.im2col_gemm): median") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(dir.path / "b.json"));
    CHECK(j["cases"].size() == 1);
    CHECK(j["ratios"].contains("cpu.direct/cpu.im2col_gemm"));
}

TEST_CASE("bad input exits with status 2 and names the problem", "[cli][bad-input]")
{
    test::TempDir dir;
    auto net = [&](const std::string& layers,
                   const std::string& input
                   = R"({"batch": 1, "channels": 1, "height": 8, "width": 8, "source": "random"})") {
        return R"({"format": "convscope-network", "version": 1, "name": "bad", "input": )" + input + R"(, "layers": [)"
            + layers + "]}";
    };
    struct Case {
        const char* what;
        std::string json;
        std::vector<std::string> mustMention;
    };
    const std::vector<Case> cases = {
        { "malformed JSON", "{\"format\": \"convscope-network\", ", { "bad.json" } },
        { "unknown key", net(R"({"type": "conv2d", "name": "c1", "out_channels": 2, "kernel_size": 3, "strid": 2})"),
            { "c1", "strid" } },
        { "unknown layer type", net(R"({"type": "conv4d", "name": "x"})"), { "conv4d" } },
        { "wrong type", net(R"({"type": "conv2d", "name": "c1", "out_channels": "six", "kernel_size": 3})"),
            { "c1", "out_channels" } },
        { "negative size",
            net(R"({"type": "conv2d", "name": "c1", "out_channels": 2, "kernel_size": 3, "stride": -1})"),
            { "c1", "stride" } },
        { "kernel larger than the padded input",
            net(R"({"type": "conv2d", "name": "big", "out_channels": 2, "kernel_size": 11})"), { "big", "kernel 11" } },
        { "groups that do not divide",
            net(R"({"type": "conv2d", "name": "g", "out_channels": 4, "kernel_size": 3, "groups": 3})"),
            { "g", "groups 3" } },
        { "overflowing size",
            net(R"({"type": "relu"})",
                R"({"batch": 4294967296, "channels": 4294967296, "height": 4294967296, "width": 8, "source": "random"})"),
            { "overflow" } },
        { "tensor beyond the memory budget",
            net(R"({"type": "relu"})",
                R"({"batch": 100000, "channels": 64, "height": 1024, "width": 1024, "source": "random"})"),
            { "would need" } },
        { "weight file of the wrong shape",
            net(R"({"type": "conv2d", "name": "w", "out_channels": 2, "kernel_size": 3, "init": {"weight": "w.npy"}})"),
            { "w", "w.npy" } },
    };
    std::vector<float> wrong(5, 1.0f);
    writeNpy(dir.path / "w.npy", { 5 }, wrong.data());
    for (const auto& c : cases) {
        INFO(c.what);
        writeText(dir.path / "bad.json", c.json);
        const Result r = cli("run " + quote(dir.path / "bad.json") + " --repeat 1");
        INFO(r.output);
        CHECK(r.status == 2);
        for (const auto& word : c.mustMention)
            CHECK(r.output.find(word) != std::string::npos);
    }
    CHECK(cli("run " + quote(dir.path / "missing.json")).status == 2);
    CHECK(cli("run " + quote(test::examplesDir() / "lenet5.json") + " --backends cpu").status == 2);

    // No "layers" key: not an empty network but a mistake, for every command.
    writeText(dir.path / "nolayers.json",
        R"({"format": "convscope-network", "version": 1, "input": {"channels": 1, "height": 8, "width": 8}})");
    for (const char* command : { "run", "shapes" }) {
        const Result r = cli(std::string(command) + " " + quote(dir.path / "nolayers.json"));
        INFO(r.output);
        CHECK(r.status == 2);
        CHECK(r.output.find("nolayers.json: \"layers\" is missing") != std::string::npos);
    }
    // A picture given where a network belongs.
    const Result png = cli("shapes " + quote(test::dataDir() / "images" / "empty_first_idat.png"));
    INFO(png.output);
    CHECK(png.status == 2);
    CHECK(png.output.find("not a ConvScope network file: it looks like a PNG image") != std::string::npos);
}

TEST_CASE("an explicit empty layer list is a valid network with nothing to run", "[cli]")
{
    test::TempDir dir;
    writeText(dir.path / "empty.json", R"({"format": "convscope-network", "version": 1, "name": "empty",
      "input": {"channels": 1, "height": 8, "width": 8}, "layers": []})");
    const Result r = cli("run " + quote(dir.path / "empty.json"));
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("empty has no layers: nothing to run") != std::string::npos);
    CHECK(cli("shapes " + quote(dir.path / "empty.json")).status == 0);
}

TEST_CASE("an unavailable or unknown backend exits with status 3 and says why", "[cli][bad-input]")
{
    const Result unknown = cli("run " + quote(test::examplesDir() / "lenet5.json") + " --backends tpu.fast --repeat 1");
    CHECK(unknown.status == 3);
    CHECK(unknown.output.find("tpu") != std::string::npos);
    const Result noAlgorithm
        = cli("run " + quote(test::examplesDir() / "lenet5.json") + " --backends cpu.winograd --repeat 1");
    CHECK(noAlgorithm.status == 3);
    CHECK(noAlgorithm.output.find("winograd") != std::string::npos);
}

TEST_CASE("info lists every backend with its availability", "[cli]")
{
    const Result r = cli("info");
    REQUIRE(r.status == 0);
    CHECK(r.output.find("cpu.direct") != std::string::npos);
    CHECK(r.output.find("cpu.im2col_gemm") != std::string::npos);
    CHECK(r.output.find("cuda") != std::string::npos);
    CHECK(r.output.find("cudnn") != std::string::npos);
}

TEST_CASE("ONNX models go through every command, and export writes ONNX and JSON", "[cli][onnx]")
{
    const Result info = cli("info");
    if (info.output.find("ONNX import and export") == std::string::npos) {
        std::cout << "SKIPPED: this build has no ONNX support" << std::endl;
        return;
    }
    test::TempDir dir;
    const fs::path lenet = test::examplesDir() / "lenet5.json", model = dir.path / "lenet5.onnx";
    Result r = cli("export " + quote(lenet) + " " + quote(model));
    REQUIRE(r.status == 0);
    CHECK(r.output.find("as an ONNX model") != std::string::npos);

    r = cli("shapes " + quote(model) + " --batch 3");
    REQUIRE(r.status == 0);
    CHECK(r.output.find("[3, 10]") != std::string::npos); // the symbolic batch taken from --batch

    // The same input through the network file and through its ONNX export: the same output, layer by layer.
    const fs::path x = dir.path / "x.npy";
    const Tensor input = test::randomTensor(Shape::nchw(1, 1, 28, 28), 3);
    writeNpy(x, { 1, 1, 28, 28 }, input.data());
    REQUIRE(cli("run " + quote(lenet) + " --backends cpu.direct --input " + quote(x) + " --dump-outputs "
                + quote(dir.path / "a"))
                .status
        == 0);
    r = cli("run " + quote(model) + " --backends cpu.direct --input " + quote(x) + " --dump-outputs "
        + quote(dir.path / "b"));
    REQUIRE(r.status == 0);
    const NpyArray a = readNpy(dir.path / "a" / "12_probabilities.npy"),
                   b = readNpy(dir.path / "b" / "12_probabilities.npy");
    REQUIRE(a.dims == b.dims);
    for (size_t k = 0; k < a.data.size(); ++k)
        CHECK(a.data[k] == Approx(b.data[k]).margin(1e-6));

    // An imported model saved as JSON: weights as .npy in lenet5_again.weights/, and it runs.
    r = cli("export " + quote(model) + " " + quote(dir.path / "lenet5_again.json"));
    REQUIRE(r.status == 0);
    CHECK(fs::is_directory(dir.path / "lenet5_again.weights"));
    CHECK(cli("run " + quote(dir.path / "lenet5_again.json") + " --backends cpu.im2col_gemm --input " + quote(x)).status
        == 0);

    r = cli("export " + quote(lenet) + " " + quote(dir.path / "out.txt"));
    CHECK(r.status == 2);
    CHECK(r.output.find("writes .onnx") != std::string::npos);
    writeText(dir.path / "broken.onnx", slurp(model).substr(0, 1000));
    r = cli("run " + quote(dir.path / "broken.onnx"));
    CHECK(r.status == 2);
    CHECK(r.output.find("broken.onnx") != std::string::npos);
}
