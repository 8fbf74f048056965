// One training step of each case in tests/data/training (written by tools/make_training_references.py with PyTorch's
// autograd and torch.optim in float64) on cpu.direct and cpu.im2col_gemm: the input gradient, every parameter's
// gradient, and the parameters and batch-norm running statistics after the optimizer's step, within 1e-5 relative L2.
// The cases cover conv2d (groups, dilation, stride, no bias), conv_transpose2d, batch norm (affine and not), every
// activation, prelu, the pools (ceil_mode, count_include_pad, divisor_override, dilation), global pooling, add, mul,
// concat, the three pad modes, softmax, linear, the three losses, SGD with momentum and weight decay, Adam, and
// a ResNet basic block with its downsampling shortcut, the 3-D kinds, layer_norm, group_norm and instance_norm (affine
// and not, layer_norm without bias), and LeNet-5 (trained) on its ten test digits.
#include "compute/backend_registry.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/training/training.h"
#include "tests/training/reference_files.h"

#include <fstream>
#include <nlohmann/json.hpp>

using namespace convscope;
using namespace convscope::test;
namespace fs = std::filesystem;

TEST_CASE("one training step matches PyTorch's gradients and updated parameters", "[training][torch]")
{
    const fs::path root = dataDir() / "training";
    std::ifstream in(root / "cases.json");
    REQUIRE(in);
    const nlohmann::json index = nlohmann::json::parse(in);
    REQUIRE(index["cases"].size() >= 8);
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
        for (const char* algorithm : { "direct", "im2col_gemm" }) {
            INFO(name << " on cpu." << algorithm);
            auto session = BackendRegistry::instance().find("cpu")->createTrainingSession(algorithm, {});
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
        }
    }
}
