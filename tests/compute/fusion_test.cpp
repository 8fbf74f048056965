// The fusion pass: batch norm folded into the convolution before it and the activation after it moved into the
// epilogue; "+fused" selections run the fused network and report against the original layers, with outputs
// that agree with the unfused reference.
#include "compute/fusion.h"
#include "compute/materialize.h"
#include "compute/profiler.h"
#include "compute/session.h"

#include "tests/test_support.h"

#include <catch2/catch.hpp>

using namespace convscope;

using test::fusableNetwork;

TEST_CASE("selections parse and print +fused", "[fusion]")
{
    const Selection s = Selection::parse("cuda.implicit_gemm+fused");
    CHECK(s.backend == "cuda");
    CHECK(s.algorithm == "implicit_gemm");
    CHECK(s.fused);
    CHECK(s.str() == "cuda.implicit_gemm+fused");
    CHECK(s.unfused() == Selection { "cuda", "implicit_gemm" });
    CHECK_FALSE(Selection::parse("cpu.direct").fused);
    CHECK_THROWS_AS(Selection::parse("cpu+fused.direct"), InputError);
    CHECK_THROWS_AS(Selection::parse("+fused"), InputError);
}

TEST_CASE("fuseNetwork folds batch norm and moves activations into the epilogue", "[fusion]")
{
    Network net = fusableNetwork(ReLU {});
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    materializeParameters(net, shapes);
    const auto originalWeight = net.layers[0].weight;
    const std::vector<float> before(originalWeight->data(), originalWeight->data() + originalWeight->numel());

    const FusedNetwork f = fuseNetwork(net, shapes, [](FusedActivation::Kind) { return true; });
    REQUIRE(f.net.layers.size() == 4); // c1(+bn1+act1), pool, c2(+bn2), c3(+act3)
    CHECK(f.shapes.ok());
    const auto& fc1 = std::get<Conv2d>(f.net.layers[0].spec);
    CHECK(fc1.fused_activation.kind == FusedActivation::Kind::ReLU);
    const auto& fc2 = std::get<Conv2d>(f.net.layers[2].spec);
    CHECK(fc2.bias); // a conv without bias gains one from the folded batch norm
    CHECK_FALSE(fc2.fused_activation);
    CHECK(f.net.layers[2].bias);
    CHECK(std::get<Conv2d>(f.net.layers[3].spec).fused_activation.kind == FusedActivation::Kind::ReLU);

    // Where every original layer went.
    const std::vector<size_t> fusedIndex { 0, 0, 0, 1, 2, 2, 3, 3 };
    const std::vector<bool> head { true, false, false, true, true, false, true, false };
    const std::vector<bool> hasOutput { false, false, true, true, false, true, false, true };
    for (size_t i = 0; i < net.layers.size(); ++i) {
        INFO("layer " << i);
        CHECK(f.map[i].fusedIndex == fusedIndex[i]);
        CHECK(f.map[i].head == head[i]);
        CHECK(f.map[i].hasOutput == hasOutput[i]);
    }
    CHECK(f.map[1].note.find("folded into layer 0 (c1)") != std::string::npos);

    // The original network's tensors are untouched (they are shared with the GUI's undo stack).
    CHECK(net.layers[0].weight == originalWeight);
    CHECK(std::equal(before.begin(), before.end(), originalWeight->data()));
    CHECK(f.net.layers[0].weight != originalWeight);

    // A backend that cannot apply an activation keeps it as a layer of its own.
    const FusedNetwork g = fuseNetwork(net, shapes, [](FusedActivation::Kind) { return false; });
    CHECK(g.net.layers.size() == 6);
    CHECK_FALSE(std::get<Conv2d>(g.net.layers[0].spec).fused_activation);
    CHECK(g.map[1].hasOutput); // bn1's output is the folded conv's
}

TEST_CASE("fused selections agree with the unfused reference, layer by layer", "[fusion]")
{
    const std::vector<std::pair<std::string, LayerSpec>> activations { { "relu", ReLU {} },
        { "leaky_relu", LeakyReLU { 0.2 } }, { "sigmoid", Sigmoid {} }, { "tanh", Tanh {} }, { "elu", ELU { 0.7 } } };
    for (const auto& [name, act] : activations) {
        DYNAMIC_SECTION(name)
        {
            Network net = fusableNetwork(act);
            const Tensor input = test::randomTensor(net.input.shape(), 7);
            ProfileOptions opt;
            opt.selections = { { "cpu", "direct" }, { "cpu", "direct", true }, { "cpu", "im2col_gemm", true } };
            opt.warmup = 0;
            opt.repeat = 2;
            opt.keepOutputs = true;
            const RunResult r = profile(net, input, opt);
            for (const auto& sel : r.selections) {
                INFO(sel.selection.str() << ": " << sel.failure);
                REQUIRE(sel.ok);
                REQUIRE(sel.layers.size() == net.layers.size());
            }
            for (size_t k = 1; k < r.selections.size(); ++k) {
                const auto& sel = r.selections[k];
                const std::vector<bool> hasOutput { false, false, true, true, false, true, false, true };
                for (size_t i = 0; i < net.layers.size(); ++i) {
                    INFO(sel.selection.str() << " layer " << i);
                    CHECK(bool(sel.layers[i].output) == hasOutput[i]);
                    CHECK(sel.layers[i].error.valid == hasOutput[i]);
                    if (sel.layers[i].error.valid)
                        CHECK(sel.layers[i].error.relL2 < 1e-5);
                    CHECK((hasOutput[i] || !sel.layers[i].note.empty()));
                }
                // Folded layers take no time of their own.
                CHECK(sel.layers[1].computeMs.median == 0);
                CHECK(sel.layers[2].computeMs.median == 0);
                CHECK(sel.layers[0].computeMs.median > 0);
            }
        }
    }
}

TEST_CASE("a fused selection cannot be the reference", "[fusion]")
{
    Network net = fusableNetwork(ReLU {});
    const Tensor input = test::randomTensor(net.input.shape(), 7);
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct", true } };
    opt.reference = Selection { "cpu", "direct", true };
    CHECK_THROWS_AS(profile(net, input, opt), InputError);
}

TEST_CASE("a session with a fused selection reopens with its outputs at the right layers", "[fusion][session]")
{
    Network net = fusableNetwork(Tanh {});
    const ShapeReport shapes = inferShapes(net);
    materializeParameters(net, shapes);
    const Tensor input = test::randomTensor(net.input.shape(), 3);
    ProfileOptions opt;
    opt.selections = { { "cpu", "im2col_gemm" }, { "cpu", "im2col_gemm", true } };
    opt.warmup = 0;
    opt.repeat = 1;
    opt.keepOutputs = true;
    const RunResult r = profile(net, input, opt);
    test::TempDir dir;
    writeSession(dir.path / "s", net, input, r, {});
    const SavedSession s = readSession(dir.path / "s");
    REQUIRE(s.result.selections.size() == 2);
    const auto& fused = s.result.selections[1];
    CHECK(fused.selection.str() == "cpu.im2col_gemm+fused");
    const std::vector<bool> hasOutput { false, false, true, true, false, true, false, true };
    for (size_t i = 0; i < net.layers.size(); ++i) {
        INFO("layer " << i);
        REQUIRE(bool(fused.layers[i].output) == hasOutput[i]);
        if (hasOutput[i])
            CHECK(compare(*fused.layers[i].output, *r.selections[1].layers[i].output).maxAbs == 0);
    }
}
