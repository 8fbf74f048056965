// The fusion pass's residual add (compute/fusion.h): a conv (after batch-norm folding) whose output only a two-input
// add reads takes the add's skip as a second input, and the activation after the add when the backend fuses it; the
// cases it must not fuse; and "+fused" CPU selections that agree with the unfused reference, layer by layer.
#include "compute/error.h"
#include "compute/fusion.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/profiler.h"

#include "tests/test_support.h"

#include <catch2/catch.hpp>

using namespace convscope;

namespace {

Conv2d conv3x3(int64_t k)
{
    Conv2d c;
    c.out_channels = k;
    c.padding = Padding2d::symmetric(1, 1);
    c.bias = false;
    return c;
}

// Two ResNet basic blocks on 4 channels with identity skips: the first adds the network's input, the second the first
// block's output.
//   0 c1, 1 bn1, 2 r1, 3 c2, 4 bn2, 5 sum (bn2 + input), 6 out, 7 c3, 8 bn3, 9 sum2 (bn3 + out), 10 r3
Network residualNetwork(int64_t batch = 2, int64_t size = 9)
{
    test::NetworkBuilder b("residual", batch, 4, size, size, false, 5, 300);
    return b.add("c1", conv3x3(4))
        .add("bn1", BatchNorm2d {})
        .add("r1", ReLU {})
        .add("c2", conv3x3(4))
        .add("bn2", BatchNorm2d {})
        .add("sum", Add {}, { "bn2", "input" })
        .add("out", ReLU {})
        .add("c3", conv3x3(4))
        .add("bn3", BatchNorm2d {})
        .add("sum2", Add {}, { "out", "bn3" })
        .add("r3", ReLU {})
        .net;
}

FusedNetwork fuse(Network& net, bool activations, bool residual)
{
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    materializeParameters(net, shapes);
    return fuseNetwork(
        net, shapes, [&](FusedActivation::Kind) { return activations; }, residual);
}

const Conv2d& convOf(const FusedNetwork& f, size_t i) { return std::get<Conv2d>(f.net.layers.at(i).spec); }

bool anyResidual(const FusedNetwork& f)
{
    for (const Layer& l : f.net.layers)
        if (const auto* c = std::get_if<Conv2d>(&l.spec); c && c->fused_residual)
            return true;
    return false;
}

} // namespace

TEST_CASE("fuseNetwork folds a residual add and the activation after it into the conv", "[fusion]")
{
    Network net = residualNetwork();
    const FusedNetwork f = fuse(net, true, true);
    REQUIRE(f.net.layers.size() == 3); // c1(+bn1+r1), c2(+bn2+sum+out), c3(+bn3+sum2+r3)
    CHECK(f.shapes.ok());
    CHECK_FALSE(convOf(f, 0).fused_residual);
    CHECK(convOf(f, 1).fused_residual);
    CHECK(convOf(f, 1).fused_activation.kind == FusedActivation::Kind::ReLU);
    CHECK(f.net.layers[1].inputs == std::vector<std::string> { "c1", "input" });
    CHECK(f.shapes.layers[1].sources == std::vector<int> { 0, -1 });
    CHECK(f.net.layers[2].inputs == std::vector<std::string> { "c2", "c2" }); // x and the skip: both the block's out
    CHECK(f.shapes.layers[2].out == f.shapes.layers[1].out);

    const std::vector<size_t> fusedIndex { 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2 };
    const std::vector<bool> head { true, false, false, true, false, false, false, true, false, false, false };
    const std::vector<bool> hasOutput { false, false, true, false, false, false, true, false, false, false, true };
    for (size_t i = 0; i < net.layers.size(); ++i) {
        INFO("layer " << i << ": " << f.map[i].note);
        CHECK(f.map[i].fusedIndex == fusedIndex[i]);
        CHECK(f.map[i].head == head[i]);
        CHECK(f.map[i].hasOutput == hasOutput[i]);
    }
    CHECK(f.map[5].note == "fused: add (skip from the network's input) folded into layer 3 (c2)");
    CHECK(f.map[9].note == "fused: add (skip from layer 6 (out)) folded into layer 7 (c3)");
    CHECK(f.map[3].note.find("add layer 5 (sum) (skip from the network's input) folded into the epilogue")
        != std::string::npos);
    CHECK(f.map[10].note == "fused: applied in the epilogue of layer 7 (c3)");

    // The fused network is internal: no network file holds a conv of two inputs.
    CHECK_THROWS_WITH(serializeNetwork(f.net), Catch::Contains("fused residual add"));
}

TEST_CASE("the activation after a folded add is fused only when the backend fuses it", "[fusion]")
{
    Network net = residualNetwork();
    const FusedNetwork f = fuse(net, false, true);
    // c1(+bn1), r1, c2(+bn2+sum), out, c3(+bn3+sum2), r3
    REQUIRE(f.net.layers.size() == 6);
    CHECK(convOf(f, 2).fused_residual);
    CHECK_FALSE(convOf(f, 2).fused_activation);
    CHECK(std::holds_alternative<ReLU>(f.net.layers[3].spec));
    CHECK(f.shapes.layers[3].sources == std::vector<int> { 2 });
    CHECK(f.net.layers[4].inputs == std::vector<std::string> { "out", "out" });
    CHECK(f.map[5].hasOutput); // the add's output is the fused conv's
    CHECK(f.map[6].fusedIndex == 3);

    // A backend without residual fusion keeps every add (the batch norm and activations still fold).
    const FusedNetwork g = fuse(net, true, false);
    CHECK_FALSE(anyResidual(g));
    CHECK(g.net.layers.size() == 7); // c1(+bn1+r1), c2(+bn2), sum, out, c3(+bn3), sum2, r3
}

TEST_CASE("residual fusion refuses what it cannot fold", "[fusion]")
{
    SECTION("a conv whose output another layer reads too")
    {
        test::NetworkBuilder b("tap", 1, 4, 6, 6, false, 5, 310);
        Network net = b.add("c1", conv3x3(4))
                          .add("bn1", BatchNorm2d {})
                          .add("sum", Add {}, { "bn1", "input" })
                          .add("tap", Sigmoid {}, { "bn1" })
                          .net;
        const FusedNetwork f = fuse(net, true, true);
        CHECK_FALSE(anyResidual(f));
        CHECK(f.net.layers.size() == 3);
        CHECK(f.map[1].hasOutput);
    }
    SECTION("an add of three inputs")
    {
        test::NetworkBuilder b("three", 1, 4, 6, 6, false, 5, 320);
        Network net = b.add("c0", conv3x3(4)).add("c1", conv3x3(4)).add("sum", Add {}, { "c1", "input", "c0" }).net;
        CHECK_FALSE(anyResidual(fuse(net, true, true)));
    }
    SECTION("an add of the conv's output to itself")
    {
        test::NetworkBuilder b("twice", 1, 4, 6, 6, false, 5, 330);
        Network net = b.add("c1", conv3x3(4)).add("sum", Add {}, { "c1", "c1" }).net;
        CHECK_FALSE(anyResidual(fuse(net, true, true)));
    }
    SECTION("a skip produced after the conv")
    {
        test::NetworkBuilder b("late", 1, 4, 6, 6, false, 5, 340);
        Network net = b.add("c1", conv3x3(4))
                          .add("bn1", BatchNorm2d {})
                          .add("late", Tanh {}, { "input" })
                          .add("sum", Add {}, { "bn1", "late" })
                          .add("r", ReLU {})
                          .net;
        const FusedNetwork f = fuse(net, true, true);
        CHECK_FALSE(anyResidual(f));
        CHECK(f.net.layers.size() == 4); // c1(+bn1), late, sum, r
    }
    SECTION("a conv whose activation was fused keeps its add")
    {
        test::NetworkBuilder b("act", 1, 4, 6, 6, false, 5, 350);
        Network net = b.add("c1", conv3x3(4)).add("r1", ReLU {}).add("sum", Add {}, { "r1", "input" }).net;
        const FusedNetwork f = fuse(net, true, true);
        CHECK_FALSE(anyResidual(f));
        CHECK(convOf(f, 0).fused_activation);
        CHECK(f.net.layers.size() == 2);
    }
}

TEST_CASE("a projection shortcut listed after the main branch folds the add into the projection", "[fusion]")
{
    // The main branch's bn2 comes before the projection: c2 cannot read pbn (not yet computed), so the add folds into
    // proj, whose skip is bn2 (the cross-backend test's "basic block with a projection").
    test::NetworkBuilder b("projection", 2, 3, 9, 9, false, 5, 360);
    Conv2d c1 = conv3x3(6);
    c1.stride = { 2, 2 };
    Conv2d proj;
    proj.out_channels = 6;
    proj.kernel_size = { 1, 1 };
    proj.stride = { 2, 2 };
    Network net = b.add("c1", c1)
                      .add("bn1", BatchNorm2d {})
                      .add("r1", ReLU {})
                      .add("c2", conv3x3(6))
                      .add("bn2", BatchNorm2d {})
                      .add("proj", proj, { "input" })
                      .add("pbn", BatchNorm2d {})
                      .add("sum", Add {}, { "bn2", "pbn" })
                      .add("out", ReLU {})
                      .add("after", Sigmoid {})
                      .net;
    const FusedNetwork f = fuse(net, true, true);
    REQUIRE(f.net.layers.size() == 4); // c1(+bn1+r1), c2(+bn2), proj(+pbn+sum+out), after
    CHECK_FALSE(convOf(f, 1).fused_residual);
    CHECK(convOf(f, 2).fused_residual);
    CHECK(f.net.layers[2].inputs == std::vector<std::string> { "input", "c2" });
    CHECK(f.map[7].note == "fused: add (skip from layer 4 (bn2)) folded into layer 5 (proj)");
    CHECK(f.shapes.layers[3].sources == std::vector<int> { 2 }); // "after" reads the fused add's output
}

TEST_CASE("an add folded out of order keeps the network's last layer last", "[fusion]")
{
    // c2's add comes after an unrelated layer: folded (c2 moves the add up) while the add is not the network's end.
    test::NetworkBuilder b("between", 1, 4, 6, 6, false, 5, 370);
    b.add("c1", conv3x3(4)).add("c2", conv3x3(4)).add("side", Sigmoid {}, { "c1" }).add("sum", Add {}, { "c2", "c1" });
    Network ends = b.net;
    CHECK_FALSE(anyResidual(fuse(ends, true, true))); // sum is the last layer: kept
    Network more = b.add("r", ReLU {}).add("tail", Tanh {}, { "side" }).add("out", Add {}, { "r", "tail" }).net;
    const FusedNetwork f = fuse(more, true, true);
    REQUIRE(f.net.layers.size() == 5); // c1, c2(+sum+r), side, tail, out
    CHECK(convOf(f, 1).fused_residual);
    CHECK(convOf(f, 1).fused_activation.kind == FusedActivation::Kind::ReLU);
    CHECK(f.net.layers[2].inputs == std::vector<std::string> { "c1" });
    CHECK(f.shapes.layers[3].sources == std::vector<int> { 2 }); // tail reads side, by name
    CHECK(f.shapes.layers[4].sources == std::vector<int> { 1, 3 });
    CHECK(f.map[3].fusedIndex == 1); // sum
    CHECK(f.map[4].fusedIndex == 1); // r
    CHECK(f.map[5].fusedIndex == 3); // tail
}

TEST_CASE("residual-fused CPU selections agree with the unfused reference, layer by layer", "[fusion]")
{
    Network net = residualNetwork(2, 11);
    const Tensor input = test::randomTensor(net.input.shape(), 17);
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct" }, { "cpu", "direct", true }, { "cpu", "im2col_gemm", true },
        { "cpu", "tap_gemm", true }, { "cpu", "fft", true } };
    opt.warmup = 0;
    opt.repeat = 2;
    opt.keepOutputs = true;
    const RunResult r = profile(net, input, opt);
    const std::vector<bool> hasOutput { false, false, true, false, false, false, true, false, false, false, true };
    for (size_t k = 0; k < r.selections.size(); ++k) {
        const auto& sel = r.selections[k];
        INFO(sel.selection.str() << ": " << sel.failure);
        REQUIRE(sel.ok);
        REQUIRE(sel.layers.size() == net.layers.size());
        if (k == 0)
            continue;
        for (size_t i = 0; i < net.layers.size(); ++i) {
            INFO("layer " << i << ": " << sel.layers[i].note);
            CHECK(bool(sel.layers[i].output) == hasOutput[i]);
            CHECK(sel.layers[i].error.valid == hasOutput[i]);
            if (hasOutput[i])
                CHECK(sel.layers[i].error.relL2 < (sel.selection.algorithm == "fft" ? 1e-4 : 1e-5));
        }
        CHECK(sel.layers[5].note.find("folded into layer 3 (c2)") != std::string::npos);
        CHECK(sel.layers[5].computeMs.median == 0);
        CHECK(sel.layers[3].computeMs.median > 0);
    }

    // Option fuse_residual=0 keeps the adds (batch norm and activations still fold).
    opt.selections = { { "cpu", "direct", true } };
    opt.session.extra["fuse_residual"] = "0";
    const RunResult kept = profile(net, input, opt);
    REQUIRE(kept.selections[0].ok);
    CHECK(kept.selections[0].layers[5].output); // the add computes its own output again
    CHECK(kept.selections[0].layers[5].computeMs.median > 0);
    CHECK(kept.selections[0].layers[5].error.relL2 < 1e-5);
}
