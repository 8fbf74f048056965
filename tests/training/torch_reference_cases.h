// One training step of each case in tests/data/training (written by tools/make_training_references.py with PyTorch's
// autograd and torch.optim in float64) on a training selection: the input gradient, every parameter's gradient, and
// the parameters and batch-norm running statistics after the optimizer's step, within 1e-5 relative L2. Shared by the
// CPU's test (torch_reference_test.cpp), the onednn module's (tests/onednn/onednn_training_test.cpp) and, for the
// loading, the GPU tests'.
#pragma once

#include "compute/backend_registry.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/training/training.h"
#include "tests/training/reference_files.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace convscope::test {

// One case of tests/data/training/cases.json, loaded: its network with parameters, the shapes, the loss and
// optimizer of the reference step, the input and the target. The CPU's and onednn's runner below and the GPU tests'
// (tests/kernels/gpu_training_support.cpp) read the cases through it.
struct TorchReferenceCase {
    std::string name;
    std::filesystem::path dir;
    nlohmann::json entry; // loss_value, the optimizer's settings
    Network net;
    ShapeReport shapes;
    TrainingOptions options;
    Tensor input, target;
};

inline std::vector<TorchReferenceCase> loadTorchReferenceCases()
{
    namespace fs = std::filesystem;
    const fs::path root = dataDir() / "training";
    std::ifstream in(root / "cases.json");
    REQUIRE(in);
    const nlohmann::json index = nlohmann::json::parse(in);
    REQUIRE(index["cases"].size() >= 8);
    std::vector<TorchReferenceCase> cases;
    for (const auto& entry : index["cases"]) {
        TorchReferenceCase c;
        c.name = entry["name"];
        c.dir = root / c.name;
        c.entry = entry;
        c.net = loadNetwork(c.dir / "network.json");
        c.shapes = inferShapes(c.net);
        REQUIRE(c.shapes.ok());
        materializeParameters(c.net, c.shapes);
        c.input = fromNpy(c.dir / "input.npy", c.shapes.input);
        const Shape& out = c.shapes.layers.back().out;
        TrainingOptions& to = c.options;
        to.loss = parseLossKind(entry["loss"]);
        checkLossTarget(to.loss, out, readNpy(c.dir / "target.npy").dims);
        c.target = fromNpy(c.dir / "target.npy", to.loss == LossKind::CrossEntropy ? Shape::features(out.n, 1) : out);
        to.optimizer.kind = parseOptimizerKind(entry["optimizer"]);
        to.optimizer.lr = entry["lr"];
        to.optimizer.momentum = entry["momentum"];
        to.optimizer.weightDecay = entry["weight_decay"];
        to.inputGradient = true;
        cases.push_back(std::move(c));
    }
    return cases;
}

// Every case on `backend`.`algorithm`; returns how many cases ran.
inline int checkTorchReferenceCases(Backend& backend, const std::string& algorithm)
{
    namespace fs = std::filesystem;
    int ran = 0;
    for (const TorchReferenceCase& c : loadTorchReferenceCases()) {
        const std::string& name = c.name;
        const fs::path& dir = c.dir;
        const Network& net = c.net;
        const ShapeReport& shapes = c.shapes;
        {
            INFO(name << " on " << backend.name() << "." << algorithm);
            auto session = backend.createTrainingSession(algorithm, {});
            REQUIRE(session);
            session->prepare(net, shapes, c.options);
            const StepResult step = session->step(c.input, c.target, 1);
            CHECK(step.loss == Approx(c.entry["loss_value"].get<double>()).epsilon(1e-5));
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
