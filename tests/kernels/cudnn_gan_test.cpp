// The DCGAN loop (compute/training/gan_run.h) on cudnn.auto through the session's phased step (training_phased.cpp):
// two steps of the toy pair of tests/data/training/dcgan (tools/make_gan_reference.py, PyTorch in float64) give
// PyTorch's losses and both networks' parameters and batch-norm statistics, within 1e-4 relative L2; and the phased
// step on the GPU equals its step(). Without a usable cuDNN every case prints "SKIPPED: <reason>".
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/training/gan_run.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/kernels/gpu_training_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace convscope;
namespace fs = std::filesystem;

namespace {

Tensor npyTensor(const fs::path& path)
{
    const NpyArray a = readNpy(path);
    Tensor t(a.dims.size() == 4 ? Shape::nchw(a.dims[0], a.dims[1], a.dims[2], a.dims[3])
                                : Shape::features(1, int64_t(a.data.size())));
    std::copy(a.data.begin(), a.data.end(), t.data());
    return t;
}

} // namespace

TEST_CASE("cudnn training: two DCGAN steps match PyTorch's losses and parameters", "[gpu][cudnn][train][gan]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    const fs::path dir = test::dataDir() / "training" / "dcgan";
    std::ifstream in(dir / "reference.json");
    REQUIRE(in);
    const nlohmann::json ref = nlohmann::json::parse(in);
    const Tensor real = npyTensor(dir / "real.npy"), noise = npyTensor(dir / "noise.npy");
    GanRunOptions o;
    o.selection = Selection { "cudnn", "auto", false };
    o.generatorOptimizer.kind = OptimizerSpec::Kind::Adam;
    o.generatorOptimizer.lr = ref["lr"];
    o.generatorOptimizer.beta1 = ref["betas"][0];
    o.generatorOptimizer.beta2 = ref["betas"][1];
    o.discriminatorOptimizer = o.generatorOptimizer;
    o.batch = real.shape().n;
    o.warmup = 1; // and a reset: the timed steps start again from the file's weights
    o.steps = ref["steps"];
    o.realImages = &real;
    o.noise = &noise;
    const GanResult r = trainGan(loadNetwork(dir / "generator.json"), loadNetwork(dir / "discriminator.json"), o);
    REQUIRE(r.steps.size() == ref["losses"].size());
    for (size_t s = 0; s < r.steps.size(); ++s) {
        INFO("step " << s + 1);
        CHECK(r.steps[s].lossD == Approx(ref["losses"][s]["loss_d"].get<double>()).epsilon(1e-4));
        CHECK(r.steps[s].lossG == Approx(ref["losses"][s]["loss_g"].get<double>()).epsilon(1e-4));
        CHECK(r.steps[s].phases.gBackward > 0);
        CHECK(r.steps[s].phases.dUpdate > 0);
    }
    int compared = 0;
    for (const auto& [prefix, net] : { std::pair { "generator", &r.generator }, { "discriminator", &r.discriminator } })
        for (const Layer& layer : net->layers)
            for (const auto& [what, tensor] : { std::pair { "weight", layer.weight }, { "bias", layer.bias },
                     { "running_mean", layer.runningMean }, { "running_var", layer.runningVar } }) {
                const fs::path expected
                    = dir / ("after." + std::string(prefix) + "." + layer.name + "." + what + ".npy");
                if (!fs::exists(expected))
                    continue;
                INFO(prefix << " " << layer.name << "." << what);
                REQUIRE(tensor);
                const Tensor want = npyTensor(expected);
                Tensor got(want.shape());
                REQUIRE(tensor->numel() == want.numel());
                std::copy(tensor->data(), tensor->data() + tensor->numel(), got.data());
                CHECK(test::trainRelDiff(got, want) < 1e-4);
                ++compared;
            }
    CHECK(compared == 13);
}
