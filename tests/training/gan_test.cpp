// The DCGAN loop (compute/training/gan_run.h) against PyTorch: two steps of the tutorial's loop on a toy generator
// and discriminator (tests/data/training/dcgan, written by tools/make_gan_reference.py in float64) give the same
// losses and the same parameters and batch-norm statistics of both networks, within 1e-5 relative L2, on cpu.direct
// and cpu.im2col_gemm. Also: the phased step equals step(), the generated data, and the refusals.
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/training/gan_run.h"
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
