// Latent interpolation (compute/network_split.h, compute/interpolation.h): the cut at the latent, the blends, that
// decoding an input's own latent gives the whole network's output, batched and one by one alike, and the memory
// budget checked before a volume is allocated.
#include "compute/error.h"
#include "compute/interpolation.h"
#include "compute/load_input.h"
#include "compute/memory_budget.h"
#include "compute/network_json.h"
#include "compute/profiler.h"
#include "compute/voxel_samples.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {
Network autoencoder() { return loadNetwork(test::examplesDir() / "autoencoder3d.json"); }
} // namespace

TEST_CASE("interpolation: the autoencoder is cut at its latent into an encoder and a decoder", "[volume]")
{
    const SplitNetwork s = splitNetworkAt(autoencoder(), "latent");
    CHECK(s.cut == 5);
    CHECK(s.latent == Shape::ncdhw(1, 8, 2, 2, 2));
    CHECK(s.encoder.layers.size() == 6);
    CHECK(s.encoder.layers.back().name == "latent");
    REQUIRE(s.decoder.layers.size() == 6);
    CHECK(s.decoder.layers.front().name == "dec1");
    CHECK(s.decoder.input.shape() == Shape::ncdhw(1, 8, 2, 2, 2));
    CHECK(inferShapes(s.decoder).layers.back().out == Shape::ncdhw(1, 1, 32, 32, 32));
    CHECK_THROWS_WITH(splitNetworkAt(autoencoder(), "output"), Contains("last layer"));
    CHECK_THROWS_WITH(splitNetworkAt(autoencoder(), "z"), Contains("no layer named \"z\"") && Contains("enc1_relu"));
}

TEST_CASE("interpolation: new_z = (1 − t)·z1 + t·z2 at t = 0, 0.1, …, 1", "[volume]")
{
    const std::vector<double> ts = interpolationTimes(11);
    REQUIRE(ts.size() == 11);
    CHECK(ts[1] == Approx(0.1));
    CHECK(ts.back() == 1.0);
    CHECK(interpolationTimes(1) == std::vector<double> { 0.0 });
    CHECK_THROWS_AS(interpolationTimes(0), InputError);
    const Tensor z1 = test::randomTensor(Shape::ncdhw(1, 8, 2, 2, 2), 1), z2 = test::randomTensor(z1.shape(), 2);
    const Tensor z = interpolateLatents(z1, z2, ts);
    REQUIRE(z.shape() == Shape::ncdhw(11, 8, 2, 2, 2));
    for (int64_t i = 0; i < 64; ++i) {
        CHECK(z.data()[i] == z1.data()[i]);
        CHECK(z.data()[10 * 64 + i] == Approx(z2.data()[i]).margin(1e-7));
        CHECK(z.data()[3 * 64 + i] == Approx(0.7 * z1.data()[i] + 0.3 * z2.data()[i]).margin(1e-6));
    }
    CHECK_THROWS_AS(interpolateLatents(z1, test::randomTensor(Shape::ncdhw(1, 8, 2, 2, 1), 3), ts), InputError);
}

TEST_CASE(
    "interpolation: decoding an input's own latent gives the whole network's output, batched or one by one", "[volume]")
{
    Network net = autoencoder();
    const Tensor chair = makeVoxelSample("voxels:chair", 1, 1, 32, 32, 32);
    const Tensor cube = makeVoxelSample("voxels:cube", 1, 1, 32, 32, 32);
    InterpolationOptions o;
    o.steps = 3;
    o.modes = { DecodeMode::Batched, DecodeMode::OneByOne };
    o.selections = { { "cpu", "im2col_gemm" } };
    o.warmup = 0;
    o.repeat = 1;
    const InterpolationResult r = interpolate(net, chair, cube, o);
    REQUIRE(r.runs.size() == 1);
    const InterpolationRun& run = r.runs[0];
    INFO(run.failure);
    REQUIRE(run.ok);
    CHECK(run.encoderMs.count == 1);
    REQUIRE(run.decodes.size() == 2);
    const Tensor& batched = run.decodes[0].decoded;
    REQUIRE(batched.shape() == Shape::ncdhw(3, 1, 32, 32, 32));
    CHECK(compare(run.decodes[1].decoded, batched).relL2 < 1e-6);

    // The whole network on each input: t = 0 is the chair's own reconstruction, t = 1 the cube's.
    ProfileOptions whole;
    whole.selections = { { "cpu", "im2col_gemm" } };
    whole.warmup = 0;
    whole.repeat = 1;
    whole.keepOutputs = true;
    whole.reference = std::nullopt;
    for (int k : { 0, 2 }) {
        const RunResult full = profile(net, k == 0 ? chair : cube, whole);
        REQUIRE(full.selections[0].ok);
        const Tensor step = batchItem(batched, k);
        CHECK(compare(step, *full.selections[0].layers.back().output).relL2 < 1e-6);
    }
}

TEST_CASE("interpolation: volumes over the memory budget are refused before anything is allocated", "[volume]")
{
    const Tensor chair = makeVoxelSample("voxels:chair", 1, 1, 32, 32, 32);
    InterpolationOptions o;
    o.steps = 4096; // the batched decoder: 4096 × (32 + 1) × 32³ floats and more
    o.selections = { { "cpu", "im2col_gemm" } };
    o.hostMemoryBudgetBytes = int64_t(64) << 20;
    CHECK_THROWS_WITH(interpolate(autoencoder(), chair, chair, o), Contains("memory budget") && Contains("decoder"));

    // A 2048³ volume (32 GiB) under a 256 MiB budget: refused by shape, before the input is made.
    Network big = parseNetwork(R"({"format": "convscope-network", "version": 1, "name": "big",
        "input": {"batch": 1, "channels": 1, "depth": 2048, "height": 2048, "width": 2048, "source": "sample:voxels:sphere"},
        "layers": [{"type": "maxpool3d", "kernel_size": 2}]})",
        "big.json", {});
    ProfileOptions p;
    p.selections = { { "cpu", "im2col_gemm" } };
    p.hostMemoryBudgetBytes = int64_t(256) << 20;
    CHECK_THROWS_WITH(profile(big, p), Contains("memory budget") && Contains("big"));
    setHostMemoryBudget(int64_t(256) << 20);
    CHECK_THROWS_WITH(loadInput(big.input, {}), Contains("memory budget"));
    CHECK_THROWS_WITH(makeVoxelSample("voxels:cube", 1, 1, 2048, 2048, 2048), Contains("memory budget"));
    setHostMemoryBudget(0);
}
