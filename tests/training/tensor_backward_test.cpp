// The CPU backward of matmul, gather and linear on the last axis (issue 30) against finite differences of their
// forward: matmul with broadcast batch axes and 1-D operands, gather with negative and repeated indices, linear on a
// rank-3 input (the rows are every position of the leading axes).
#include "compute/cpu/cpu_ops.h"
#include "compute/gather.h"
#include "compute/shape_inference.h"
#include "compute/training/cpu_backward_ops.h"
#include "tests/training/gradcheck.h"

using namespace convscope;
using namespace convscope::test;

TEST_CASE("matmul backward matches finite differences, broadcast and 1-D operands", "[training][tensor]")
{
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs = { { { 2, 3, 4 }, { 2, 4, 5 } },
        { { 2, 1, 3, 4 }, { 3, 4, 2 } }, { { 2, 3, 4 }, { 4 } }, { { 3 }, { 2, 3, 5 } }, { { 4, 3 }, { 2, 3, 2 } } };
    uint64_t seed = 2000;
    for (const auto& [da, db] : pairs) {
        Tensor a = randomTensor(Shape::of(da), ++seed), b = randomTensor(Shape::of(db), ++seed);
        const LayerShape s = inferLayer(Matmul {}, std::vector<Shape> { a.shape(), b.shape() });
        REQUIRE(s.ok);
        const Tensor gy = randomTensor(s.out, ++seed);
        Tensor ga(a.shape()), gb(b.shape());
        cpu::grad::matmulInput(gy, a, b, 0, ga);
        cpu::grad::matmulInput(gy, a, b, 1, gb);
        const auto fwd = [&](Tensor& y) { cpu::runMatmul(Matmul {}, s, { &a, &b }, nullptr, y, false); };
        INFO(a.shape().str() << " · " << b.shape().str());
        CHECK(relL2(ga, numericalGradient(a, gy, s.out, fwd, 1e-2)) < 1e-4);
        CHECK(relL2(gb, numericalGradient(b, gy, s.out, fwd, 1e-2)) < 1e-4);
    }
}

TEST_CASE("gather backward sums a repeated index's outputs", "[training][tensor]")
{
    const Gather g { 1, { 2, -1, 0, 2 }, { 2, 2 } };
    Tensor x = randomTensor(Shape::nchw(2, 4, 3, 2), 2100);
    const LayerShape s = inferLayer(g, x.shape());
    REQUIRE(s.ok);
    const Tensor gy = randomTensor(s.out, 2101);
    Tensor gx(x.shape());
    cpu::grad::gatherInput(g, gy, gx);
    const auto fwd = [&](Tensor& y) { cpu::runGather(g, x, y); };
    CHECK(relL2(gx, numericalGradient(x, gy, s.out, fwd, 1e-2)) < 1e-5);
}

TEST_CASE("linear backward on the last axis of a rank-3 input", "[training][tensor]")
{
    Tensor x = randomTensor(Shape::of({ 2, 3, 5 }), 2200), w = randomTensor(Shape::nchw(4, 5, 1, 1), 2201),
           b = randomTensor(Shape::nchw(4, 1, 1, 1), 2202);
    const LayerShape s = inferLayer(Linear { 4, true }, x.shape());
    REQUIRE(s.ok);
    const Tensor gy = randomTensor(s.out, 2203);
    for (const bool fast : { false, true }) {
        Tensor gx(x.shape()), gw(w.shape()), gb(b.shape());
        fast ? cpu::grad::fast::linearData(gy, w, gx) : cpu::grad::direct::linearData(gy, w, gx);
        fast ? cpu::grad::fast::linearWeights(gy, x, gw, &gb) : cpu::grad::direct::linearWeights(gy, x, gw, &gb);
        const auto fwd = [&](Tensor& y) { cpu::direct::linear(x, w, &b, y); };
        INFO((fast ? "fast" : "direct"));
        CHECK(relL2(gx, numericalGradient(x, gy, s.out, fwd, 1e-2)) < 1e-4);
        CHECK(relL2(gw, numericalGradient(w, gy, s.out, fwd, 1e-2)) < 1e-4);
        CHECK(relL2(gb, numericalGradient(b, gy, s.out, fwd, 1e-2)) < 1e-4);
    }
}
