// The DCGAN loop (compute/training/gan_run.h) against PyTorch: two steps of the tutorial's loop on a toy generator
// and discriminator (tests/data/training/dcgan, written by tools/make_gan_reference.py in float64) give the same
// losses and the same parameters and batch-norm statistics of both networks, within 1e-5 relative L2, on cpu.direct
// and cpu.im2col_gemm. Also: the phased step equals step(), the generated data, the refusals, GradScaler's rule (which
// the GPU sessions and the loop's fp16 run share) and how the reports show an fp16 run's loss scale.
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/training/gan_run.h"
#include "compute/training/grad_scaler.h"
#include "tests/training/reference_files.h"
#include "tests/training/session_checks.h"

#include <fstream>
#include <nlohmann/json.hpp>

using namespace convscope;
using namespace convscope::test;
namespace fs = std::filesystem;

TEST_CASE("two DCGAN steps match PyTorch's losses and updated parameters", "[training][gan][torch]")
{
    for (const char* algorithm : { "direct", "im2col_gemm" })
        checkDcganReference(Selection { "cpu", algorithm, false });
}

TEST_CASE("the phased step (forward, backward, update apart) equals step()", "[training][gan]")
{
    checkPhasedEqualsStep(*BackendRegistry::instance().find("cpu"), "im2col_gemm");
}

TEST_CASE("the DCGAN loop refuses networks that do not fit together", "[training][gan]")
{
    const fs::path dir = dataDir() / "training" / "dcgan";
    const Network g = loadNetwork(dir / "generator.json");
    const Network d = loadNetwork(dir / "discriminator.json");
    GanRunOptions o;
    o.selection = Selection { "cpu", "direct", false };
    o.batch = 2;
    o.steps = 1;
    o.warmup = 0;
    SECTION("the generator's image is not the discriminator's input")
    {
        Network small = d;
        small.input.height = small.input.width = 16;
        CHECK_THROWS_WITH(trainGan(g, small, o),
            Catch::Contains("the generator makes [2, 3, 8, 8]")
                && Catch::Contains("the discriminator reads [2, 3, 16, 16]"));
    }
    SECTION("a discriminator that gives more than one score per image")
    {
        Network many = d;
        many.layers.pop_back(); // the sigmoid
        many.layers.pop_back(); // the last conv: [2, 16, 2, 2] out
        CHECK_THROWS_WITH(trainGan(g, many, o), Catch::Contains("one score per image"));
    }
    SECTION("a batch of zero")
    {
        o.batch = 0;
        CHECK_THROWS_AS(trainGan(g, d, o), InputError);
    }
    SECTION("a selection without training")
    {
        o.selection = Selection { "cpu", "fft", false };
        CHECK_THROWS_AS(trainGan(g, d, o), UnsupportedError);
    }
}

TEST_CASE("the DCGAN loop's generated images and codes", "[training][gan]")
{
    const Tensor a = ganRealImages(3, 3, 16, 16, 5), b = ganRealImages(3, 3, 16, 16, 5),
                 c = ganRealImages(3, 3, 16, 16, 6);
    CHECK(relL2(a, b) == 0);
    CHECK(relL2(a, c) > 0.01);
    float lo = 1, hi = -1;
    for (int64_t i = 0; i < a.numel(); ++i) {
        lo = std::min(lo, a.data()[i]);
        hi = std::max(hi, a.data()[i]);
    }
    CHECK(lo >= -1.0f);
    CHECK(hi <= 1.0f);
    CHECK(hi - lo > 0.5f); // shapes on a background, not a flat picture
    // A data-parallel rank makes its slice alone: rows 1 and 2 of the batch, the same as the whole batch's.
    const auto sameRows = [](const Tensor& whole, const Tensor& slice, int64_t first) {
        const int64_t row = whole.numel() / whole.shape().n;
        return std::equal(slice.data(), slice.data() + slice.numel(), whole.data() + first * row);
    };
    CHECK(sameRows(a, ganRealImages(2, 3, 16, 16, 5, 1), 1));
    CHECK(sameRows(ganNoise(Shape::nchw(4, 7, 1, 1), 9), ganNoise(Shape::nchw(2, 7, 1, 1), 9, 2), 2));
    const Tensor z = ganNoise(Shape::nchw(64, 100, 1, 1), 9);
    double mean = 0, square = 0;
    for (int64_t i = 0; i < z.numel(); ++i) {
        mean += z.data()[i];
        square += double(z.data()[i]) * z.data()[i];
    }
    mean /= double(z.numel());
    CHECK(std::abs(mean) < 0.05);
    CHECK(std::sqrt(square / double(z.numel()) - mean * mean) == Approx(1.0).epsilon(0.05));
}

TEST_CASE("GradScaler: halves at an overflow, doubles after 2000 clean steps", "[training][gan]")
{
    GradScaler scaler;
    CHECK(scaler.scale() == 65536.0); // torch.amp.GradScaler's init_scale
    for (int i = 1; i < GradScaler::kGrowthInterval; ++i)
        scaler.update(false);
    CHECK(scaler.scale() == 65536.0);
    scaler.update(false); // the 2000th clean step in a row
    CHECK(scaler.scale() == 131072.0);
    scaler.update(true);
    CHECK(scaler.scale() == 65536.0);
    for (int i = 1; i < GradScaler::kGrowthInterval; ++i)
        scaler.update(false);
    scaler.update(true); // an overflow restarts the count of clean steps
    CHECK(scaler.scale() == 32768.0);
    for (int i = 1; i < GradScaler::kGrowthInterval; ++i)
        scaler.update(false);
    CHECK(scaler.scale() == 32768.0);
    scaler.reset(256);
    CHECK(scaler.scale() == 256.0);
}

TEST_CASE("the DCGAN reports show an fp16 run's loss scale and skipped updates", "[training][gan]")
{
    GanResult r;
    r.options.selection = Selection { "cudnn", "auto", false };
    r.generator.name = "g";
    r.discriminator.name = "d";
    r.steps.resize(3);
    r.steps[0].lossScale = 65536;
    r.steps[0].dSkipped = true;
    r.steps[1].lossScale = 32768;
    r.steps[1].gSkipped = true;
    r.steps[2].lossScale = 16384;
    const std::string line = ganLossScaleLine(r);
    CHECK(line.find("loss scale 65536 (step 1) → 16384 (step 3)") != std::string::npos);
    CHECK(line.find("the discriminator's at 1 of 3 steps, the generator's at 1") != std::string::npos);
    CHECK(ganReportMarkdown(r).find(line) != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(ganReportJson(r));
    CHECK(j["step_results"][0]["loss_scale"] == 65536.0);
    CHECK(j["step_results"][0]["d_skipped"] == true);
    CHECK(j["step_results"][1]["g_skipped"] == true);
    CHECK(
        ganReportCsv(r).find("step,loss_d,loss_g,d_real,d_fake,loss_scale,d_skipped,g_skipped\n") != std::string::npos);
    CHECK(ganReportCsv(r).find("\n2,0,0,0,0,32768,0,1\n") != std::string::npos);
    // Without loss scaling none of it appears.
    for (GanStep& s : r.steps)
        s = GanStep {};
    CHECK(ganLossScaleLine(r).empty());
    CHECK(ganReportMarkdown(r).find("loss scale") == std::string::npos);
    CHECK(ganReportJson(r).find("loss_scale") == std::string::npos);
}
