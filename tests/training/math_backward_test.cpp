// The backward of gelu, softplus, mish and unary (issue 30) against finite differences of their forward, and
// PyTorch's values where autograd has a choice (abs at 0, softplus past its threshold).
#include "compute/cpu/cpu_ops.h"
#include "compute/layer_kinds.h"
#include "compute/training/cpu_backward_ops.h"
#include "tests/training/gradcheck.h"

#include <cmath>

using namespace convscope;
using namespace convscope::test;

TEST_CASE("tensor-maths backward matches finite differences", "[training][math]")
{
    const std::vector<LayerSpec> kinds = { GELU {}, GELU { true }, Softplus {}, Softplus { 2.0, 3.0 }, Mish {},
        Unary { Unary::Op::Exp }, Unary { Unary::Op::Log }, Unary { Unary::Op::Sqrt }, Unary { Unary::Op::Reciprocal },
        Unary { Unary::Op::Neg }, Unary { Unary::Op::Abs }, Unary { Unary::Op::Erf } };
    const Shape shape = Shape::nchw(2, 3, 4, 5);
    uint64_t seed = 900;
    for (const LayerSpec& spec : kinds) {
        INFO(layerSummary(spec));
        const auto* u = std::get_if<Unary>(&spec);
        const bool positive
            = u && (u->op == Unary::Op::Log || u->op == Unary::Op::Sqrt || u->op == Unary::Op::Reciprocal);
        Tensor x = randomTensor(shape, ++seed);
        for (int64_t i = 0; i < x.numel(); ++i) {
            float& v = x.data()[i];
            v *= 3.0f;
            if (positive)
                v = std::abs(v) + 0.5f;
            else if (std::abs(v) < 0.05f) // abs's kink
                v = v < 0 ? -0.05f : 0.05f;
            if (std::holds_alternative<Softplus>(spec) && std::abs(v - 1.5f) < 0.05f) // β 2, threshold 3
                v = 1.6f;
        }
        const Tensor gy = randomTensor(shape, ++seed);
        Tensor gx(shape);
        cpu::grad::activation(gy, x, spec, gx);
        const auto fwd = [&](Tensor& y) { cpu::direct::activation(x, spec, y); };
        CHECK(relL2(gx, numericalGradient(x, gy, shape, fwd, 1e-3)) < 2e-3);
    }
}

TEST_CASE(
    "tensor-maths backward takes PyTorch's values at abs's kink and past softplus's threshold", "[training][math]")
{
    const Shape shape = Shape::features(1, 2);
    Tensor x(shape), gy = Tensor::filled(shape, 1.0f), gx(shape);
    x.data()[0] = 0.0f;
    x.data()[1] = 2.0f;
    cpu::grad::activation(gy, x, Unary { Unary::Op::Abs }, gx);
    CHECK(gx.data()[0] == 0.0f); // sign(0)
    cpu::grad::activation(gy, x, Softplus { 2.0, 3.0 }, gx);
    CHECK(gx.data()[1] == 1.0f); // β·x = 4 > 3: the gradient of x
    CHECK(gx.data()[0] == Approx(0.5));
}

TEST_CASE("binary backward matches finite differences, both operands broadcast", "[training][math]")
{
    // a [2, 3, 4, 5] against b [3, 1, 5]: b is broadcast over N and H, a over nothing.
    const Shape sa = Shape::nchw(2, 3, 4, 5), sb = Shape::features(1, 15), so = sa;
    const std::vector<int64_t> da = sa.dims(), db = { 3, 1, 5 };
    for (Binary::Op op : { Binary::Op::Add, Binary::Op::Sub, Binary::Op::Mul, Binary::Op::Div, Binary::Op::Pow,
             Binary::Op::Min, Binary::Op::Max }) {
        INFO(binaryOpName(op));
        const BinaryPlan plan = makeBinaryPlan(binaryFnOf(op), so.dims(), false, { da, false }, { db, false });
        Tensor a = randomTensor(sa, 1200 + uint64_t(op)), b = randomTensor(sb, 1300 + uint64_t(op));
        for (int64_t k = 0; k < b.numel(); ++k) // b away from 0 (div) and a positive (pow's base)
            b.data()[k] = (b.data()[k] < 0 ? -0.5f : 0.5f) + b.data()[k];
        if (op == Binary::Op::Pow)
            for (int64_t k = 0; k < a.numel(); ++k)
                a.data()[k] = std::abs(a.data()[k]) + 0.5f;
        if (op == Binary::Op::Min || op == Binary::Op::Max) // no ties within the step
            for (int64_t k = 0; k < a.numel(); ++k)
                a.data()[k] += 0.01f;
        const Tensor gy = randomTensor(so, 1400 + uint64_t(op));
        Tensor ga(sa), gb(sb);
        cpu::grad::binaryInput(gy, a.data(), b.data(), plan, 0, ga);
        cpu::grad::binaryInput(gy, a.data(), b.data(), plan, 1, gb);
        const auto fwd = [&](Tensor& y) { cpu::direct::binary(a.data(), b.data(), plan, y); };
        CHECK(relL2(ga, numericalGradient(a, gy, so, fwd, 1e-3)) < 2e-3);
        CHECK(relL2(gb, numericalGradient(b, gy, so, fwd, 1e-3)) < 2e-3);
    }
}

TEST_CASE("binary backward splits a tie of min and max in half, as PyTorch", "[training][math]")
{
    const Shape s = Shape::features(1, 1);
    const BinaryPlan plan = makeBinaryPlan(BinaryFn::Max, s.dims(), false, { s.dims(), false }, { s.dims(), false });
    const float a = 2.0f, b = 2.0f;
    Tensor gy = Tensor::filled(s, 1.0f), g(s);
    cpu::grad::binaryInput(gy, &a, &b, plan, 0, g);
    CHECK(g.data()[0] == 0.5f);
}
