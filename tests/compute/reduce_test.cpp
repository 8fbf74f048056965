// softmax and log_softmax along any axis and the reduce kind on the CPU (issue 30): values against a plain double
// computation, the fast path against the direct one, the network file's fields and their errors (an axis out of
// range, an axis given twice, an unknown op), and a file without "dim" that still reads as softmax over dim 1.
#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/network_json.h"
#include "compute/reduce.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace convscope;
using namespace convscope::test;
using Catch::Matchers::Contains;

namespace {

Network oneLayer(const std::string& shape, const std::string& layer)
{
    return parseNetwork(R"({"format": "convscope-network", "version": 1, "input": {"shape": )" + shape
            + R"(, "source": "random"}, "layers": [)" + layer + "]}",
        "net", {});
}

double maxDiff(const Tensor& a, const Tensor& b)
{
    REQUIRE(a.numel() == b.numel());
    double d = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
        d = std::max(d, std::abs(double(a.data()[i]) - double(b.data()[i])));
    return d;
}

} // namespace

// PyTorch's formulas in double: m the largest along the axis, then e^(x − m) / Σ or (x − m) − log Σ. A NaN, or a
// maximum of +inf (e^(inf − inf)), makes the sum NaN and so every output of its position.
Tensor softmaxWant(const Tensor& x, const std::vector<int64_t>& dims, int64_t axis, bool log)
{
    Tensor want(x.shape());
    const AxisView v = axisView(dims, axis);
    for (int64_t o = 0; o < v.outer; ++o)
        for (int64_t p = 0; p < v.inner; ++p) {
            const auto at = [&](int64_t c) { return (o * v.size + c) * v.inner + p; };
            double m = -INFINITY, sum = 0;
            for (int64_t c = 0; c < v.size; ++c)
                m = std::max(m, double(x.data()[at(c)]));
            for (int64_t c = 0; c < v.size; ++c)
                sum += std::exp(double(x.data()[at(c)]) - m);
            for (int64_t c = 0; c < v.size; ++c) {
                const double d = double(x.data()[at(c)]) - m;
                want.data()[at(c)] = static_cast<float>(log ? d - std::log(sum) : std::exp(d) / sum);
            }
        }
    return want;
}

TEST_CASE("softmax and log_softmax along every axis of ranks 1 to 6 match a double computation", "[cpu][softmax]")
{
    const std::vector<std::vector<int64_t>> shapes
        = { { 7 }, { 3, 9 }, { 3, 4, 5 }, { 2, 3, 4, 5 }, { 2, 3, 2, 3, 4 }, { 2, 3, 2, 2, 3, 2 } };
    uint64_t seed = 70;
    for (const auto& dims : shapes)
        for (int64_t axis = 0; axis < int64_t(dims.size()); ++axis)
            for (bool log : { false, true }) {
                INFO("rank " << dims.size() << " axis " << axis << (log ? " log" : ""));
                const Shape shape = Shape::of(dims);
                Tensor x = randomTensor(shape, ++seed);
                for (int64_t i = 0; i < x.numel(); ++i)
                    x.data()[i] *= 30.0f; // logits far apart: the max subtraction matters
                Tensor direct(shape), fast(shape);
                cpu::direct::softmax(x, direct, axis, log);
                cpu::fast::softmax(x, fast, axis, log);
                const Tensor want = softmaxWant(x, dims, axis, log);
                CHECK(maxDiff(direct, want) == 0.0);
                CHECK(maxDiff(fast, want) < (log ? 2e-5 : 1e-6));
            }
}

TEST_CASE("softmax along a strided axis: positions in several blocks, long axes and PyTorch's special values",
    "[cpu][softmax]")
{
    // Wider than the fast path's block of positions and not a multiple of 16; an axis of 300 values (the running
    // maximum grows and the sum is rescaled many times).
    for (const std::vector<int64_t>& dims : { std::vector<int64_t> { 2, 37, 1100 }, { 3, 300, 2, 21 } })
        for (bool log : { false, true }) {
            INFO(Shape::of(dims).str() << (log ? " log" : ""));
            Tensor x = randomTensor(Shape::of(dims), 90);
            for (int64_t i = 0; i < x.numel(); ++i)
                x.data()[i] *= 30.0f;
            Tensor fast(x.shape());
            cpu::fast::softmax(x, fast, 1, log);
            CHECK(maxDiff(fast, softmaxWant(x, dims, 1, log)) < (log ? 2e-5 : 1e-6));
        }
    // Columns of [1, 5, 6] along dim 1: −inf before the finite values, +inf (every output NaN), a NaN, all −inf
    // (NaN), a maximum first and last, equal values.
    const float inf = INFINITY, nan = std::numeric_limits<float>::quiet_NaN();
    const float column[6][5] = { { -inf, -inf, 3, 1, -inf }, { 1, inf, 2, 3, 0 }, { 1, 2, nan, 3, 4 },
        { -inf, -inf, -inf, -inf, -inf }, { 50, -20, 3, 0, 49.5f }, { 7, 7, 7, 7, 7 } };
    const std::vector<int64_t> dims = { 1, 5, 6 };
    Tensor x(Shape::of(dims));
    for (int64_t c = 0; c < 5; ++c)
        for (int64_t p = 0; p < 6; ++p)
            x.data()[c * 6 + p] = column[p][c];
    for (bool log : { false, true }) {
        INFO((log ? "log_softmax" : "softmax"));
        Tensor direct(x.shape()), fast(x.shape());
        cpu::direct::softmax(x, direct, 1, log);
        cpu::fast::softmax(x, fast, 1, log);
        const Tensor want = softmaxWant(x, dims, 1, log);
        for (int64_t i = 0; i < x.numel(); ++i) {
            INFO("element " << i << ": want " << want.data()[i] << ", direct " << direct.data()[i] << ", fast "
                            << fast.data()[i]);
            if (std::isnan(want.data()[i])) {
                CHECK(std::isnan(direct.data()[i]));
                CHECK(std::isnan(fast.data()[i]));
            } else if (std::isinf(want.data()[i])) { // log_softmax of a term that vanishes
                CHECK(direct.data()[i] == want.data()[i]);
                CHECK(fast.data()[i] == want.data()[i]);
            } else {
                CHECK(direct.data()[i] == want.data()[i]);
                CHECK(std::abs(fast.data()[i] - want.data()[i]) <= 2e-6f * std::max(1.0f, std::abs(want.data()[i])));
            }
        }
    }
}

TEST_CASE("reduce computes torch's mean, sum, amax, amin and vector_norm over any axes", "[cpu][reduce]")
{
    const Shape shape = Shape::of({ 2, 3, 4 });
    Tensor x(shape);
    for (int64_t i = 0; i < x.numel(); ++i)
        x.data()[i] = float((i * 7) % 11) - 5.0f;
    const auto run = [&](Reduce r, bool fast) {
        Tensor out(Shape::of(reduceOutputDims(r, shape.dims())));
        fast ? cpu::fast::reduce(x, r, out) : cpu::direct::reduce(x, r, out);
        return out;
    };
    for (bool fast : { false, true }) {
        INFO((fast ? "fast" : "direct"));
        // Over dims 0 and 2 (keepdim): out[0, c, 0] over the 8 values of channel c.
        for (Reduce::Op op : { Reduce::Op::Mean, Reduce::Op::Sum, Reduce::Op::Max, Reduce::Op::Min, Reduce::Op::L2 }) {
            const Tensor out = run(Reduce { op, { 0, -1 }, true }, fast);
            REQUIRE(out.shape().dims() == std::vector<int64_t> { 1, 3, 1 });
            for (int64_t c = 0; c < 3; ++c) {
                double sum = 0, sq = 0, mx = -INFINITY, mn = INFINITY;
                for (int64_t n = 0; n < 2; ++n)
                    for (int64_t w = 0; w < 4; ++w) {
                        const double v = x.data()[(n * 3 + c) * 4 + w];
                        sum += v, sq += v * v, mx = std::max(mx, v), mn = std::min(mn, v);
                    }
                const double want = op == Reduce::Op::Mean ? sum / 8
                    : op == Reduce::Op::Sum                ? sum
                    : op == Reduce::Op::Max                ? mx
                    : op == Reduce::Op::Min                ? mn
                                                           : std::sqrt(sq);
                CHECK(std::abs(out.data()[c] - want) < 1e-6);
            }
        }
        const Tensor all = run(Reduce { Reduce::Op::Sum, {}, false }, fast); // torch.sum(x): 0-d, [1] here
        REQUIRE(all.shape().dims() == std::vector<int64_t> { 1 });
        double total = 0;
        for (int64_t i = 0; i < x.numel(); ++i)
            total += x.data()[i];
        CHECK(all.data()[0] == float(total));
        x.data()[5] = NAN; // amax propagates NaN
        CHECK(std::isnan(run(Reduce { Reduce::Op::Max, { 2 }, false }, fast).data()[1]));
        x.data()[5] = 1.0f;
    }
}

TEST_CASE("softmax, log_softmax and reduce read and write their fields; old files read as softmax over dim 1",
    "[network_json][reduce]")
{
    const Network old = oneLayer("[2, 5]", R"({"type": "softmax", "name": "sm"})");
    CHECK(std::get<Softmax>(old.layers[0].spec).dim == 1);
    const Network net = oneLayer("[2, 3, 4]", R"({"type": "log_softmax", "dim": -1},
        {"type": "reduce", "op": "l2", "dim": [0, -1], "keepdim": true},
        {"type": "reduce", "op": "max", "dim": 1},
        {"type": "softmax", "dim": 0})");
    CHECK(std::get<LogSoftmax>(net.layers[0].spec).dim == -1);
    CHECK(std::get<Reduce>(net.layers[1].spec) == Reduce { Reduce::Op::L2, { 0, -1 }, true });
    CHECK(std::get<Reduce>(net.layers[2].spec) == Reduce { Reduce::Op::Max, { 1 }, false });
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[1].out.dims() == std::vector<int64_t> { 1, 3, 1 });
    CHECK(shapes.layers[2].out.dims() == std::vector<int64_t> { 1, 1 });
    const Network back = parseNetwork(serializeNetwork(net), "back", {});
    for (size_t i = 0; i < net.layers.size(); ++i)
        CHECK(back.layers[i].spec == net.layers[i].spec);
    CHECK(layerKindOf<LogSoftmax>().label == std::string("LogSoftmax"));
    CHECK(findLayerKind("reduce") != nullptr);
}

TEST_CASE("bad softmax and reduce parameters are errors naming the axis", "[network_json][reduce]")
{
    // An axis out of range for the input's rank: a shape error naming the dim and the rank (exit 2).
    ShapeReport s = inferShapes(oneLayer("[2, 3, 4]", R"({"type": "softmax", "dim": 3})"));
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.firstError(), Contains("dim 3 is out of range for a tensor of rank 3"));
    s = inferShapes(oneLayer("[2, 3]", R"({"type": "reduce", "op": "sum", "dim": [-3]})"));
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.firstError(), Contains("dim -3 is out of range"));
    s = inferShapes(oneLayer("[2, 3, 4]", R"({"type": "reduce", "op": "sum", "dim": [2, -1]})"));
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.firstError(), Contains("dim 2 appears more than once"));
    CHECK_THROWS_AS(oneLayer("[2, 3]", R"({"type": "reduce", "op": "sum", "dim": [1, 1]})"), InputError);
    CHECK_THROWS_WITH(oneLayer("[2, 3]", R"({"type": "reduce", "op": "prod"})"),
        Contains("\"op\" must be one of mean, sum, max, min, l2"));
    CHECK_THROWS_WITH(oneLayer("[2, 3]", R"({"type": "reduce", "dim": [0]})"), Contains("op"));
    CHECK_THROWS_WITH(oneLayer("[2, 3]", R"({"type": "log_softmax", "dim": 9})"), Contains("dim"));
}
