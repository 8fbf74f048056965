// The backward of layer_norm, group_norm and instance_norm (norm_backward.cpp) against finite differences of their
// forward (cpu.direct's, in double inside), input, weight and bias gradients, at several ranks; the fast path's
// threads give the same bits as one; and a network with the three kinds trains on both cpu selections alike.
#include "compute/cpu/cpu_ops.h"
#include "compute/layer_kinds.h"
#include "compute/network_json.h"
#include "compute/normalization.h"
#include "compute/shape_inference.h"
#include "compute/training/cpu_backward_ops.h"
#include "compute/training/train_run.h"
#include "tests/training/gradcheck.h"

#include <cmath>

using namespace convscope;
using namespace convscope::test;

TEST_CASE("normalization backward matches finite differences", "[training][norm]")
{
    struct Case {
        LayerSpec spec;
        std::vector<int64_t> dims;
    };
    const std::vector<Case> cases = {
        { LayerNorm { { 6 } }, { 3, 4, 6 } },
        { LayerNorm { { 3, 4 }, 1e-3 }, { 2, 2, 3, 4 } },
        { GroupNorm { 2 }, { 2, 4, 3, 3 } },
        { GroupNorm { 3, 1e-3 }, { 2, 6 } },
        { InstanceNorm { 1e-5, true }, { 2, 3, 7 } },
        { InstanceNorm { 1e-5, true }, { 1, 2, 2, 3, 2 } },
    };
    uint64_t seed = 1700;
    for (const Case& c : cases) {
        INFO(layerSummary(c.spec) << " on " << Shape::of(c.dims).str());
        const Shape shape = Shape::of(c.dims);
        const NormPlan p = normPlan(c.spec, shape);
        const int64_t params = p.groups * (p.rowLength / p.inner);
        Tensor x = randomTensor(shape, ++seed);
        for (int64_t i = 0; i < x.numel(); ++i)
            x.data()[i] *= 3.0f;
        Tensor w = randomTensor(Shape::nchw(params, 1, 1, 1), ++seed), b = randomTensor(w.shape(), ++seed);
        const Tensor gy = randomTensor(shape, ++seed);
        Tensor gx(shape), gw(w.shape()), gb(b.shape());
        cpu::grad::normalizationData(gy, x, w, p, gx);
        cpu::grad::normalizationWeights(gy, x, p, &gw, &gb);
        const auto fwd = [&](Tensor& y) { cpu::direct::normalization(x, w, b, p, y); };
        CHECK(relL2(gx, numericalGradient(x, gy, shape, fwd, 1e-2)) < 2e-3);
        CHECK(relL2(gw, numericalGradient(w, gy, shape, fwd, 1e-2)) < 2e-3);
        CHECK(relL2(gb, numericalGradient(b, gy, shape, fwd, 1e-2)) < 2e-3);
        // The OpenMP split gives the same bits as one thread.
        Tensor gx2(shape), gw2(w.shape()), gb2(b.shape());
        cpu::grad::normalizationData(gy, x, w, p, gx2, true);
        cpu::grad::normalizationWeights(gy, x, p, &gw2, &gb2, true);
        CHECK(relL2(gx2, gx) == 0);
        CHECK(relL2(gw2, gw) == 0);
        CHECK(relL2(gb2, gb) == 0);
    }
}

TEST_CASE("a network of the three norms trains on cpu.direct and cpu.im2col_gemm alike", "[training][norm]")
{
    const Network net = parseNetwork(
        R"({"format": "convscope-network", "version": 1, "input": {"batch": 2, "channels": 4, "height": 3, "width": 5, "source": "random"}, "layers": [
        {"type": "conv2d", "name": "c", "out_channels": 4, "kernel_size": 1},
        {"type": "layer_norm", "name": "ln", "normalized_shape": [3, 5], "init": {"kind": "uniform", "seed": 2}},
        {"type": "group_norm", "name": "gn", "num_groups": 2, "init": {"kind": "uniform", "seed": 3}},
        {"type": "instance_norm", "name": "in"},
        {"type": "layer_norm", "name": "ln2", "normalized_shape": [5], "bias": false}]})",
        "net", ".");
    const Tensor input = randomTensor(net.input.shape(), 77);
    Tensor target(Shape::nchw(2, 4, 3, 5));
    for (int64_t k = 0; k < target.numel(); ++k)
        target.data()[k] = float(k % 7) / 7.0f;
    TrainRunOptions o;
    o.selections = { Selection::parse("cpu.direct"), Selection::parse("cpu.im2col_gemm") };
    o.training.loss = LossKind::MSE;
    o.training.optimizer.lr = 0.1;
    o.steps = 3;
    o.warmup = 0;
    const TrainResult r = trainNetwork(net, input, target, o);
    REQUIRE(r.selections.size() == 2);
    CHECK(r.selections[0].steps.back().loss < r.selections[0].steps.front().loss);
    CHECK(r.selections[1].maxParamRelL2 < 1e-5);
    // instance_norm without affine has no parameter; layer_norm without bias keeps its bias at 0.
    const Network& trained = r.selections[0].trained;
    for (int64_t k = 0; k < trained.layers[4].bias->numel(); ++k)
        CHECK(trained.layers[4].bias->data()[k] == 0.0f);
    for (int64_t k = 0; k < trained.layers[3].weight->numel(); ++k)
        CHECK(trained.layers[3].weight->data()[k] == 1.0f);
}
