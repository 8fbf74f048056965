// The layout kinds' backward on the CPU (issue 30): reshape and flatten pass the gradient through, transpose sends it
// back by the inverse permutation, a concat on any axis hands each input its window of the gradient — checked as one
// network's input gradient against finite differences of its loss, on both CPU algorithms.
#include "compute/backend_registry.h"
#include "compute/materialize.h"
#include "compute/training/train_run.h"
#include "tests/training/gradcheck.h"

using namespace convscope;
using namespace convscope::test;

TEST_CASE("reshape, transpose, flatten(start_dim, end_dim) and concat on any axis: gradients match finite differences",
    "[training][layout]")
{
    NetworkBuilder b("layout", 2, 2, 3, 4, false, 1, 1300);
    b.add("c1", conv2dSpec(3, { 3, 3 }, explicitPadding(1, 1, 1, 1)));
    b.add("t", Transpose { { 0, 2, 3, 1 } }); // [2, 3, 4, 3]: NHWC
    b.add("act", Tanh {});
    b.add("r", Reshape { { 2, 12, -1 } }); // [2, 12, 3]
    b.add("back", Transpose { { 0, -1, 1 } }, { "r" }); // [2, 3, 12]
    b.add("f", Flatten { 2, -1 }, { "c1" }); // [2, 3, 12]
    b.add("cat", Concat { -1 }, { "back", "f", "back" }); // [2, 3, 36]
    b.add("sig", Sigmoid {});
    b.add("flat", Flatten {});
    Linear fc;
    fc.out_features = 3;
    b.add("fc", fc);
    Network net = b.net;
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[6].out.dims() == std::vector<int64_t> { 2, 3, 36 });
    materializeParameters(net, shapes);
    Tensor input = randomTensor(shapes.input, 1400);
    const Tensor target = randomTensor(shapes.layers.back().out, 1401);

    TrainingOptions to;
    to.loss = LossKind::MSE;
    to.optimizer.lr = 0;
    to.inputGradient = true;
    for (const char* algorithm : { "direct", "im2col_gemm" }) {
        INFO(algorithm);
        auto session = BackendRegistry::instance().find("cpu")->createTrainingSession(algorithm, {});
        REQUIRE(session);
        session->prepare(net, shapes, to);
        session->step(input, target, 1);
        const Tensor gx = session->inputGradient();
        Tensor numeric(input.shape());
        for (int64_t i = 0; i < input.numel(); ++i) {
            const float keep = input.data()[i];
            input.data()[i] = keep + 1e-2f;
            const double up = session->step(input, target, 1).loss;
            input.data()[i] = keep - 1e-2f;
            const double down = session->step(input, target, 1).loss;
            input.data()[i] = keep;
            numeric.data()[i] = static_cast<float>((up - down) / 2e-2);
        }
        CHECK(relL2(gx, numeric) < 2e-3);
    }
}
