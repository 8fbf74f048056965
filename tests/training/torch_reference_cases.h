// One training step of each case in tests/data/training (written by tools/make_training_references.py with PyTorch's
// autograd and torch.optim in float64) on a training selection: the input gradient, every parameter's gradient, and
// the parameters and batch-norm running statistics after the optimizer's step, within 1e-5 relative L2. Shared by the
// CPU's test (torch_reference_test.cpp) and the onednn module's (tests/onednn/onednn_training_test.cpp).
#pragma once

#include "compute/backend_registry.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/training/training.h"
#include "tests/training/reference_files.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace convscope::test {

// Every case on `backend`.`algorithm`; returns how many cases ran.
inline int checkTorchReferenceCases(Backend& backend, const std::string& algorithm)
{
    namespace fs = std::filesystem;
    const fs::path root = dataDir() / "training";
    std::ifstream in(root / "cases.json");
    REQUIRE(in);
    const nlohmann::json index = nlohmann::json::parse(in);
    REQUIRE(index["cases"].size() >= 8);
    int ran = 0;
    for (const auto& c : index["cases"]) {
        const std::string name = c["name"];
        const fs::path dir = root / name;
        Network net = loadNetwork(dir / "network.json");
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        materializeParameters(net, shapes);
        const Tensor input = fromNpy(dir / "input.npy", shapes.input);
        const Shape& out = shapes.layers.back().out;
        const NpyArray targetArray = readNpy(dir / "target.npy");
        TrainingOptions to;
        to.loss = parseLossKind(c["loss"]);
        checkLossTarget(to.loss, out, targetArray.dims);
        const Tensor target
            = fromNpy(dir / "target.npy", to.loss == LossKind::CrossEntropy ? Shape::features(out.n, 1) : out);
        to.optimizer.kind = parseOptimizerKind(c["optimizer"]);
        to.optimizer.lr = c["lr"];
        to.optimizer.momentum = c["momentum"];
        to.optimizer.weightDecay = c["weight_decay"];
        to.inputGradient = true;
        {
            INFO(name << " on " << backend.name() << "." << algorithm);
            auto session = backend.createTrainingSession(algorithm, {});
            REQUIRE(session);
            session->prepare(net, shapes, to);
            const StepResult step = session->step(input, target, 1);
            CHECK(step.loss == Approx(c["loss_value"].get<double>()).epsilon(1e-5));
            CHECK(relL2(session->inputGradient(), fromNpy(dir / "grad.input.npy", shapes.input)) < 1e-5);
            int compared = 0;
            for (const ParameterRef& ref : session->parameters()) {
                const std::string layer = net.layers[ref.layer].name;
                const fs::path expected = dir / ("grad." + layer + "." + ref.name + ".npy");
                INFO("gradient of " << layer << "." << ref.name);
                REQUIRE(fs::exists(expected));
                CHECK(relL2Flat(session->parameterGradient(ref), flat(expected)) < 1e-5);
                ++compared;
            }
            CHECK(compared > 0);
            const Network trained = session->trainedNetwork();
            for (const Layer& layer : trained.layers)
                for (const auto& [what, tensor] : { std::pair { "weight", layer.weight }, { "bias", layer.bias },
                         { "running_mean", layer.runningMean }, { "running_var", layer.runningVar } }) {
                    const fs::path expected = dir / ("after." + layer.name + "." + what + ".npy");
                    if (!fs::exists(expected))
                        continue; // not a parameter there (batch norm without affine keeps weight 1, bias 0)
                    INFO("after the step: " << layer.name << "." << what);
                    REQUIRE(tensor);
                    CHECK(relL2Flat(*tensor, flat(expected)) < 1e-5);
                }
            ++ran;
        }
    }
    return ran;
}

} // namespace convscope::test
