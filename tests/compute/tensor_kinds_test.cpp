// matmul, gather and linear on the last axis of any rank (issue 30): their shapes and readable errors, the network
// file, and the CPU's results against index arithmetic written out here (torch.matmul's and index_select's).
#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/gather.h"
#include "compute/matmul.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace convscope;
using Catch::Contains;

namespace {

LayerShape infer(const LayerSpec& spec, const std::vector<Shape>& ins) { return inferLayer(spec, ins, { "a", "b" }); }

Tensor filled(const Shape& s, float scale)
{
    Tensor t(s);
    for (int64_t i = 0; i < t.numel(); ++i)
        t.data()[i] = std::sin(float(i) * scale + 0.3f);
    return t;
}

// torch.matmul written out: broadcast batch, 1-D operands.
std::vector<double> reference(const std::vector<int64_t>& ad, const Tensor& a, const std::vector<int64_t>& bd,
    const Tensor& b, std::vector<int64_t>& outDims)
{
    outDims = matmulOutputDims(ad, bd, "a", "b");
    const bool av = ad.size() == 1, bv = bd.size() == 1;
    std::vector<int64_t> A = av ? std::vector<int64_t> { 1, ad[0] } : ad,
                         B = bv ? std::vector<int64_t> { bd[0], 1 } : bd;
    const int64_t M = A[A.size() - 2], K = A.back(), N = B.back();
    const size_t rank = std::max(A.size(), B.size());
    std::vector<int64_t> batch(rank - 2, 1);
    for (size_t k = 0; k + 2 < rank; ++k) {
        const int64_t x = k + A.size() >= rank ? A[k + A.size() - rank] : 1;
        const int64_t y = k + B.size() >= rank ? B[k + B.size() - rank] : 1;
        batch[k] = std::max(x, y);
    }
    int64_t count = 1;
    for (int64_t d : batch)
        count *= d;
    std::vector<double> out(size_t(count * M * N));
    for (int64_t bi = 0; bi < count; ++bi) {
        std::vector<int64_t> c(batch.size());
        int64_t r = bi;
        for (size_t k = batch.size(); k-- > 0;) {
            c[k] = r % batch[k];
            r /= batch[k];
        }
        const auto base = [&](const std::vector<int64_t>& d) {
            int64_t off = 0, stride = d[d.size() - 2] * d.back();
            for (size_t k = d.size() - 2; k-- > 0;) {
                const size_t ck = k + rank - d.size();
                off += (d[k] == 1 ? 0 : c[ck]) * stride;
                stride *= d[k];
            }
            return off;
        };
        const int64_t ab = base(A), bb = base(B);
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k)
                    s += double(a.data()[ab + i * K + k]) * double(b.data()[bb + k * N + j]);
                out[size_t((bi * M + i) * N + j)] = s;
            }
    }
    return out;
}

} // namespace

TEST_CASE("matmul's shapes follow torch.matmul: 1-D operands, broadcast batch axes, readable errors", "[tensor]")
{
    CHECK(infer(Matmul {}, { Shape::of({ 2, 3, 5, 4 }), Shape::of({ 2, 3, 4, 6 }) }).out.dims()
        == std::vector<int64_t> { 2, 3, 5, 6 });
    CHECK(infer(Matmul {}, { Shape::of({ 2, 1, 5, 4 }), Shape::of({ 3, 4, 6 }) }).out.dims()
        == std::vector<int64_t> { 2, 3, 5, 6 });
    CHECK(infer(Matmul {}, { Shape::of({ 2, 3, 5 }), Shape::of({ 5 }) }).out.dims() == std::vector<int64_t> { 2, 3 });
    CHECK(infer(Matmul {}, { Shape::of({ 3 }), Shape::of({ 2, 3, 5 }) }).out.dims() == std::vector<int64_t> { 2, 5 });
    CHECK(infer(Matmul {}, { Shape::of({ 4 }), Shape::of({ 4, 7 }) }).out.dims() == std::vector<int64_t> { 7 });
    const LayerShape bad = infer(Matmul {}, { Shape::of({ 2, 5, 4 }), Shape::of({ 2, 3, 6 }) });
    REQUIRE_FALSE(bad.ok);
    CHECK_THAT(bad.error, Contains("\"a\" [2, 5, 4]") && Contains("(its last axis, 4)") && Contains("3)"));
    const LayerShape batch = infer(Matmul {}, { Shape::of({ 2, 5, 4 }), Shape::of({ 3, 4, 6 }) });
    REQUIRE_FALSE(batch.ok);
    CHECK_THAT(batch.error, Contains("do not broadcast"));
    CHECK_THAT(infer(Matmul {}, { Shape::of({ 4 }), Shape::of({ 4 }) }).error, Contains("0-D scalar"));
    CHECK_THAT(infer(Matmul {}, { Shape::of({ 4 }) }).error, Contains("without a \"constant\" reads two inputs"));
    CHECK(infer(Matmul {}, { Shape::of({ 2, 3, 5, 4 }), Shape::of({ 2, 3, 4, 6 }) }).cost.flops == 2.0 * 6 * 5 * 6 * 4);
}

TEST_CASE("matmul on the CPU matches torch.matmul written out, both paths, every broadcast", "[tensor]")
{
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs
        = { { { 37, 33 }, { 33, 35 } }, { { 2, 3, 5, 4 }, { 2, 3, 4, 6 } }, { { 2, 1, 3, 4, 5 }, { 1, 2, 3, 5, 4 } },
              { { 2, 4, 4 }, { 4, 4 } }, { { 4, 4 }, { 2, 4, 4 } }, { { 2, 3, 5 }, { 5 } }, { { 3 }, { 2, 3, 5 } },
              { { 1, 2, 1, 2, 3, 4 }, { 4, 2 } }, { { 40, 3, 2 }, { 40, 2, 5 } } };
    for (const auto& [ad, bd] : pairs) {
        const Tensor a = filled(Shape::of(ad), 0.37f), b = filled(Shape::of(bd), 0.11f);
        std::vector<int64_t> outDims;
        const std::vector<double> want = reference(ad, a, bd, b, outDims);
        const LayerShape s = infer(Matmul {}, { a.shape(), b.shape() });
        REQUIRE(s.ok);
        REQUIRE(s.out.dims() == outDims);
        for (const bool fast : { false, true }) {
            Tensor out(s.out);
            cpu::runMatmul(Matmul {}, s, { &a, &b }, nullptr, out, fast);
            double worst = 0;
            for (size_t i = 0; i < want.size(); ++i)
                worst = std::max(worst, std::fabs(double(out.data()[i]) - want[i]));
            INFO(npyDimsText(ad) << " · " << npyDimsText(bd) << (fast ? " fast" : " direct"));
            CHECK(worst < (fast ? 1e-5 : 1e-6));
        }
    }
}

TEST_CASE("gather's shapes: ONNX's rule, scalar and 2-D indices, negative and repeated, the index out of range named",
    "[tensor]")
{
    CHECK(infer(Gather { 1, { 2, 0, -1, 2 }, { 4 } }, { Shape::nchw(2, 3, 4, 5) }).out.dims()
        == std::vector<int64_t> { 2, 4, 4, 5 });
    CHECK(infer(Gather { -1, { 1 }, {} }, { Shape::nchw(2, 3, 4, 5) }).out.dims() == std::vector<int64_t> { 2, 3, 4 });
    CHECK(infer(Gather { 0, { 0, 1, 1, 2, -5, 4 }, { 2, 3 } }, { Shape::of({ 5, 4, 3 }) }).out.dims()
        == std::vector<int64_t> { 2, 3, 4, 3 });
    const LayerShape range = infer(Gather { 1, { 0, 3 }, { 2 } }, { Shape::nchw(2, 3, 4, 5) });
    REQUIRE_FALSE(range.ok);
    CHECK_THAT(range.error,
        Contains("index 3 (position 1 of the indices) is out of range for axis 1 of size 3") && Contains("-3 to 2"));
    CHECK_THAT(infer(Gather { 1, { -4 }, {} }, { Shape::nchw(2, 3, 4, 5) }).error, Contains("index -4"));
    CHECK_THAT(infer(Gather { 4, { 0 }, {} }, { Shape::nchw(2, 3, 4, 5) }).error, Contains("axis 4 is out of range"));
    CHECK_THAT(infer(Gather { 0, { 0, 1 }, { 3 } }, { Shape::nchw(2, 3, 4, 5) }).error, Contains("holds 3"));
    CHECK_THAT(infer(Gather { 0, { 1 }, {} }, { Shape::of({ 4 }) }).error, Contains("0-D scalar"));
}

TEST_CASE("gather on the CPU is index_select written out", "[tensor]")
{
    const Tensor x = filled(Shape::of({ 5, 4, 3 }), 0.7f);
    const Gather g { 1, { 3, -4, 3 }, { 3 } };
    const LayerShape s = infer(g, { x.shape() });
    REQUIRE(s.ok);
    Tensor out(s.out);
    cpu::runGather(g, x, out);
    const int64_t idx[] = { 3, 0, 3 };
    for (int64_t a = 0; a < 5; ++a)
        for (int64_t j = 0; j < 3; ++j)
            for (int64_t c = 0; c < 3; ++c)
                CHECK(out.data()[(a * 3 + j) * 3 + c] == x.data()[(a * 4 + idx[j]) * 3 + c]);
}

TEST_CASE("linear reads the last axis of any rank, and [N, C, 1, 1] as [N, C]", "[tensor]")
{
    CHECK(infer(Linear { 4, true }, { Shape::of({ 2, 5, 7 }) }).out.dims() == std::vector<int64_t> { 2, 5, 4 });
    CHECK(infer(Linear { 4, true }, { Shape::of({ 9 }) }).out.dims() == std::vector<int64_t> { 4 });
    CHECK(infer(Linear { 6, true }, { Shape::nchw(2, 3, 4, 5) }).out.dims() == std::vector<int64_t> { 2, 3, 4, 6 });
    const LayerShape pooled = infer(Linear { 10, true }, { Shape::nchw(2, 64, 1, 1) });
    CHECK(pooled.out == Shape::features(2, 10));
    CHECK(pooled.cost.params == 64 * 10 + 10);
    CHECK(infer(Linear { 3, true }, { Shape::ncdhw(2, 8, 1, 1, 1) }).out == Shape::features(2, 3));
    CHECK(infer(Linear { 3, true }, { Shape::features(4, 11) }).out == Shape::features(4, 3));
    // The CPU on rank 3: each row of the last axis times Wᵀ, plus the bias.
    const Tensor x = filled(Shape::of({ 2, 3, 5 }), 0.3f), w = filled(Shape::nchw(4, 5, 1, 1), 0.9f),
                 b = filled(Shape::nchw(4, 1, 1, 1), 1.3f);
    const LayerShape s = infer(Linear { 4, true }, { x.shape() });
    for (const bool fast : { false, true }) {
        Tensor out(s.out);
        fast ? cpu::fast::linear(x, w, &b, out) : cpu::direct::linear(x, w, &b, out);
        for (int64_t r = 0; r < 6; ++r)
            for (int64_t o = 0; o < 4; ++o) {
                double want = b.data()[o];
                for (int64_t i = 0; i < 5; ++i)
                    want += double(x.data()[r * 5 + i]) * double(w.data()[o * 5 + i]);
                CHECK(out.data()[r * 4 + o] == Approx(want).margin(1e-5));
            }
    }
}

TEST_CASE("matmul and gather in the network file: read, written back the same, bad fields named", "[tensor]")
{
    const std::string text = R"({"format": "convscope-network", "version": 1, "name": "attn",
        "input": {"shape": [2, 3, 5, 4], "source": "random"}, "layers": [
        {"type": "transpose", "name": "kt", "dims": [0, 1, 3, 2]},
        {"type": "matmul", "name": "qk", "inputs": ["input", "kt"]},
        {"type": "gather", "name": "g", "axis": -1, "indices": [4, -1, 0], "indices_shape": [3]},
        {"type": "gather", "name": "one", "axis": 1, "indices": 2},
        {"type": "linear", "name": "fc", "out_features": 3},
        {"type": "matmul", "name": "byc", "constant": [1, 2, 3, 4, 5, 6], "constant_shape": [3, 2]},
        {"type": "matmul", "name": "cby", "constant": [0.5, -1, 2, 0, 1], "constant_first": true}]})";
    const Network net = parseNetwork(text, "attn.json", ".");
    REQUIRE(net.layers.size() == 7);
    CHECK(std::get<Matmul>(net.layers[5].spec).constant_shape == std::vector<int64_t> { 3, 2 });
    CHECK(std::get<Gather>(net.layers[2].spec) == Gather { -1, { 4, -1, 0 }, { 3 } });
    CHECK(std::get<Gather>(net.layers[3].spec) == Gather { 1, { 2 }, {} });
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[4].out.dims() == std::vector<int64_t> { 2, 5, 3 });
    CHECK(shapes.layers[5].out.dims() == std::vector<int64_t> { 2, 5, 2 }); // · the constant [3, 2]
    CHECK(shapes.layers[6].out.dims() == std::vector<int64_t> { 2, 2 }); // [2] · [2, 5, 2]: 1-D a
    const Network back = parseNetwork(serializeNetwork(net), "back.json", ".");
    for (size_t i = 0; i < net.layers.size(); ++i)
        CHECK(back.layers[i].spec == net.layers[i].spec);
    const auto fails = [](const std::string& layer) {
        return parseNetwork(R"({"format": "convscope-network", "version": 1, "name": "x",
            "input": {"shape": [2, 3], "source": "random"}, "layers": [)"
                + layer + "]}",
            "x.json", ".");
    };
    CHECK_THROWS_WITH(fails(R"({"type": "gather", "axis": 1})"), Contains("needs \"indices\""));
    CHECK_THROWS_WITH(fails(R"({"type": "gather", "indices": [0, 1], "indices_shape": [3]})"), Contains("holds 3"));
    CHECK_THROWS_WITH(fails(R"({"type": "gather", "indices": [0], "axis": 9})"), Contains("-6 to 5"));
    CHECK_THROWS_WITH(fails(R"({"type": "matmul", "dim": 1})"), Contains("dim"));
    CHECK_THROWS_WITH(
        fails(R"({"type": "matmul", "constant": [1, 2, 3], "constant_shape": [2, 2]})"), Contains("holds 4"));
    CHECK_THROWS_WITH(fails(R"({"type": "matmul", "constant_first": true})"), Contains("which is missing"));
}

TEST_CASE("a gather index out of range in a network is exit 2's InputError naming the layer", "[tensor]")
{
    const Network net = parseNetwork(R"({"format": "convscope-network", "version": 1, "name": "x",
        "input": {"shape": [2, 3], "source": "random"}, "layers": [
        {"type": "gather", "name": "pick", "axis": 1, "indices": [1, 7]}]})",
        "x.json", ".");
    const ShapeReport shapes = inferShapes(net);
    REQUIRE_FALSE(shapes.ok());
    CHECK_THAT(shapes.firstError(), Contains("pick") && Contains("index 7") && Contains("size 3"));
    ProfileOptions o;
    o.selections = { Selection::parse("cpu.direct") };
    CHECK_THROWS_AS(profile(net, o), InputError);
}
