// Tensors of rank 1 to 6 (compute/shape.h) and the layout kinds: flatten with start_dim / end_dim, reshape,
// transpose and concat on any axis — their shapes and readable errors, the network file, .npy of every rank, and the
// CPU's results against index arithmetic written out here.
#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/npy.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace convscope;
using Catch::Contains;

namespace {

std::string errorOf(const LayerSpec& spec, const std::vector<Shape>& ins)
{
    const LayerShape s = inferLayer(spec, ins, { "a", "b", "c" });
    return s.ok ? std::string() : s.error;
}

Tensor iota(const Shape& s)
{
    Tensor t(s);
    for (int64_t i = 0; i < t.numel(); ++i)
        t.data()[i] = float(i);
    return t;
}

} // namespace

TEST_CASE("a Shape of any rank from 1 to 6 keeps its dims, its count and its text", "[rank]")
{
    const std::vector<std::vector<int64_t>> all
        = { { 7 }, { 2, 9 }, { 2, 197, 768 }, { 1, 3, 4, 5 }, { 2, 3, 4, 5, 6 }, { 2, 3, 4, 5, 6, 7 } };
    for (const auto& dims : all) {
        const Shape s = Shape::of(dims);
        CHECK(s.dims() == dims);
        CHECK(s.ndim() == int(dims.size()));
        int64_t count = 1;
        for (int64_t d : dims)
            count *= d;
        CHECK(s.numel() == count);
        CHECK(s.str() == npyDimsText(dims));
        // The NCHW(D) view addresses the same elements: n and c are dims 0 and 1 where they exist.
        CHECK(s.n == dims[0]);
        CHECK(s.n * s.c * s.d * s.h * s.w == count);
    }
    CHECK(Shape::of({ 2, 9 }) == Shape::features(2, 9));
    CHECK(Shape::of({ 1, 3, 4, 5 }) == Shape::nchw(1, 3, 4, 5));
    CHECK(Shape::of({ 2, 3, 4, 5, 6 }) == Shape::ncdhw(2, 3, 4, 5, 6));
    CHECK(Shape::of({ 2, 197, 768 }).rankText() == "3-D tensor");
    CHECK_FALSE(Shape::of({ 2, 197, 768 }).isImage());
    CHECK_THROWS_WITH(Shape::of({ 1, 2, 3, 4, 5, 6, 7 }), Contains("1 to 6 dims, not 7"));
    CHECK_THROWS_WITH(Shape::of({}), Contains("1 to 6 dims, not 0"));
    CHECK_THROWS_WITH(Shape::of({ 2, -1 }), Contains("negative"));
}

TEST_CASE(".npy files of every rank from 1 to 6 round-trip through a tensor", "[rank][npy]")
{
    test::TempDir dir;
    for (size_t rank = 1; rank <= 6; ++rank) {
        std::vector<int64_t> dims;
        for (size_t k = 0; k < rank; ++k)
            dims.push_back(int64_t(k % 3) + 2);
        const Tensor t = iota(Shape::of(dims));
        const auto path = dir.path / ("r" + std::to_string(rank) + ".npy");
        writeNpy(path, t.shape().dims(), t.data());
        const NpyArray a = readNpy(path);
        CHECK(a.dims == dims);
        REQUIRE(int64_t(a.data.size()) == t.numel());
        CHECK(std::equal(a.data.begin(), a.data.end(), t.data()));
    }
}

TEST_CASE("the layout kinds' shapes follow PyTorch at every rank", "[rank][shape]")
{
    const Shape img = Shape::nchw(2, 3, 4, 5);
    CHECK(inferLayer(Flatten {}, { img }).out == Shape::features(2, 60));
    CHECK(inferLayer(Flatten { 2, -1 }, { img }).out.dims() == std::vector<int64_t> { 2, 3, 20 });
    CHECK(inferLayer(Flatten { 0, 1 }, { img }).out.dims() == std::vector<int64_t> { 6, 4, 5 });
    CHECK(inferLayer(Flatten { 0, -1 }, { img }).out.dims() == std::vector<int64_t> { 120 });
    CHECK(inferLayer(Reshape { { 2, -1, 5 } }, { img }).out.dims() == std::vector<int64_t> { 2, 12, 5 });
    CHECK(
        inferLayer(Reshape { { 1, 2, 3, 2, 2, 5 } }, { img }).out.dims() == std::vector<int64_t> { 1, 2, 3, 2, 2, 5 });
    CHECK(inferLayer(Transpose { { 0, 2, 3, 1 } }, { img }).out.dims() == std::vector<int64_t> { 2, 4, 5, 3 });
    CHECK(inferLayer(Transpose { { -1, 0, 1, 2 } }, { img }).out.dims() == std::vector<int64_t> { 5, 2, 3, 4 });
    const Shape seq = Shape::of({ 2, 7, 5 });
    CHECK(inferLayer(Concat { -1 }, { seq, seq }).out.dims() == std::vector<int64_t> { 2, 7, 10 });
    CHECK(inferLayer(Concat { 0 }, { img, img }).out == Shape::nchw(4, 3, 4, 5));
    CHECK(inferLayer(Concat { 1 }, { img }).out == img); // one input: a copy
    // A 2-D layer refuses a rank-3 tensor, naming it.
    CHECK_THAT(errorOf(MaxPool2d {}, { seq }), Contains("needs a 4-D [N, C, H, W] input") && Contains("[2, 7, 5]"));
    CHECK_THAT(errorOf(Conv3d {}, { seq }), Contains("5-D [N, C, D, H, W]") && Contains("3-D tensor [2, 7, 5]"));
    // linear reads the last axis of any rank (issue 30): [2, 7, 5] → [2, 7, out_features].
    CHECK(inferLayer(Linear { 3, true }, { seq }).out.dims() == std::vector<int64_t> { 2, 7, 3 });
}

TEST_CASE("the layout kinds' bad input names the numbers", "[rank][shape]")
{
    const Shape img = Shape::nchw(2, 3, 4, 5);
    CHECK_THAT(errorOf(Reshape { { 7, -1 } }, { img }),
        Contains("reshape cannot make [2, 3, 4, 5] (120 elements) into [7, -1]") && Contains("not a multiple of 7"));
    CHECK_THAT(errorOf(Reshape { { 2, 3, 4 } }, { img }),
        Contains("(120 elements) into [2, 3, 4] (24 elements): the element counts differ"));
    CHECK_THAT(errorOf(Reshape { { -1, 2, -1 } }, { img }), Contains("has two -1s (dims 0 and 2)"));
    CHECK_THAT(errorOf(Reshape { { 2, 0, 60 } }, { img }), Contains("has 0 at dim 1"));
    CHECK_THAT(errorOf(Transpose { { 0, 1, 1, 2 } }, { img }), Contains("name axis 1 twice"));
    CHECK_THAT(errorOf(Transpose { { 0, 1, 2 } }, { img }), Contains("name 3 axes, but its input [2, 3, 4, 5] has 4"));
    CHECK_THAT(errorOf(Transpose { { 0, 1, 2, 4 } }, { img }), Contains("axis 4 is out of range for a 4-D input"));
    CHECK_THAT(errorOf(Flatten { 3, 1 }, { img }), Contains("start_dim 3 (dim 3) comes after its end_dim 1"));
    CHECK_THAT(errorOf(Flatten { 4, -1 }, { img }), Contains("start_dim 4 is out of range for a 4-D input (-4 to 3)"));
    CHECK_THAT(errorOf(Concat { 2 }, { img, Shape::nchw(2, 4, 4, 5) }),
        Contains("concat joins dim 2, so every other dim must agree")
            && Contains("\"b\" gives [2, 4, 4, 5] (dim 1 differs)"));
    CHECK_THAT(errorOf(Concat { 4 }, { img, img }), Contains("concat's dim 4 is out of range"));
}

TEST_CASE("the CPU's transpose and concat on any axis match index arithmetic, and flatten and reshape are copies",
    "[rank][cpu]")
{
    const Shape s = Shape::of({ 2, 3, 2, 4, 5 });
    const Tensor x = iota(s);
    const std::vector<int64_t> perm = { 4, 0, 3, 1, 2 };
    Tensor y(inferLayer(Transpose { perm }, { s }).out);
    cpu::direct::transpose(x, perm, y);
    Tensor yf(y.shape());
    cpu::fast::transpose(x, perm, yf);
    const std::vector<int64_t> d = s.dims();
    int64_t i = 0;
    for (int64_t a = 0; a < d[4]; ++a)
        for (int64_t b = 0; b < d[0]; ++b)
            for (int64_t c = 0; c < d[3]; ++c)
                for (int64_t e = 0; e < d[1]; ++e)
                    for (int64_t f = 0; f < d[2]; ++f, ++i) {
                        const float want = float((((b * d[1] + e) * d[2] + f) * d[3] + c) * d[4] + a);
                        CHECK(y.data()[i] == want);
                        CHECK(yf.data()[i] == want);
                    }
    // Concat along dim 2 of [2, 3, 2, 4, 5] and [2, 3, 1, 4, 5].
    const Shape t = Shape::of({ 2, 3, 1, 4, 5 });
    const Tensor z = iota(t);
    Tensor cat(inferLayer(Concat { 2 }, { s, t }).out);
    cpu::direct::concat({ &x, &z }, 2, cat);
    for (int64_t o = 0; o < 6; ++o)
        for (int64_t k = 0; k < 3; ++k)
            for (int64_t j = 0; j < 20; ++j) {
                const float want = k < 2 ? x.data()[(o * 2 + k) * 20 + j] : z.data()[o * 20 + j];
                CHECK(cat.data()[(o * 3 + k) * 20 + j] == want);
            }
}

TEST_CASE("the CPU's transpose matches index arithmetic for every permutation of 4 axes, across tile edges and "
          "with axes of size 1",
    "[rank][cpu]")
{
    // 37 and 45 cross the 32 × 32 tiles of the fast path; the axis of size 1 is dropped and its neighbours merge.
    for (const Shape s : { Shape::of({ 3, 37, 1, 45 }), Shape::of({ 2, 33, 40, 3 }) }) {
        const Tensor x = iota(s);
        const std::vector<int64_t> d = s.dims();
        std::vector<int64_t> perm = { 0, 1, 2, 3 };
        do {
            Tensor y(inferLayer(Transpose { perm }, { s }).out);
            cpu::fast::transpose(x, perm, y);
            const std::vector<int64_t> o = y.shape().dims();
            int64_t mismatches = 0;
            for (int64_t i = 0; i < y.numel(); ++i) {
                int64_t rest = i, index[4] = {};
                for (int a = 3; a >= 0; --a) {
                    index[perm[size_t(a)]] = rest % o[size_t(a)];
                    rest /= o[size_t(a)];
                }
                const float want = float(((index[0] * d[1] + index[1]) * d[2] + index[2]) * d[3] + index[3]);
                mismatches += y.data()[i] != want;
            }
            INFO(s.str() << " permuted by " << perm[0] << perm[1] << perm[2] << perm[3]);
            CHECK(mismatches == 0);
        } while (std::next_permutation(perm.begin(), perm.end()));
    }
}

TEST_CASE("a network of rank-3 tensors reads, writes and runs: an input \"shape\", reshape, transpose, flatten and "
          "concat keys",
    "[rank][json]")
{
    const std::string text = R"({ "format": "convscope-network", "version": 1, "name": "tokens",
      "input": { "shape": [2, 6, 5] },
      "layers": [
        { "type": "transpose", "name": "t", "dims": [0, 2, 1] },
        { "type": "reshape", "name": "r", "shape": [2, -1, 3] },
        { "type": "concat", "name": "cat", "inputs": ["r", "r"], "dim": -1 },
        { "type": "flatten", "name": "f", "start_dim": 0, "end_dim": 1 },
        { "type": "relu", "name": "relu" } ] })";
    const Network net = parseNetwork(text, "tokens.json", "/base");
    CHECK(net.input.shape().dims() == std::vector<int64_t> { 2, 6, 5 });
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[2].out.dims() == std::vector<int64_t> { 2, 10, 6 });
    CHECK(shapes.layers[3].out.dims() == std::vector<int64_t> { 20, 6 });
    const std::string written = serializeNetwork(net);
    CHECK_THAT(written, Contains(R"("input": { "shape": [2, 6, 5], "source": "random" })"));
    CHECK_THAT(written, Contains(R"("dims": [0, 2, 1])"));
    CHECK_THAT(written, Contains(R"("start_dim": 0, "end_dim": 1)"));
    CHECK(parseNetwork(written, "again", "/base").sameDescription(net));
    ProfileOptions options;
    options.warmup = 0;
    options.repeat = 1;
    options.selections = { { "cpu", "direct" }, { "cpu", "im2col_gemm" } };
    const RunResult run = profile(net, options);
    REQUIRE(run.selections.size() == 2);
    for (const auto& sel : run.selections) {
        INFO(sel.failure);
        REQUIRE(sel.ok);
        CHECK(sel.layers.back().error.valid);
        CHECK(sel.layers.back().error.maxAbs == 0);
    }
    // A file's mistakes name the key.
    const auto fails = [](const std::string& layer) {
        return parseNetwork(R"({ "format": "convscope-network", "version": 1, "name": "x",
          "input": { "shape": [2, 6, 5] }, "layers": [ )"
                + layer + " ] }",
            "bad.json", "/base");
    };
    CHECK_THROWS_WITH(fails(R"({ "type": "reshape", "shape": [-1, -1] })"), Contains("may have one -1"));
    CHECK_THROWS_WITH(fails(R"({ "type": "transpose", "dims": [0, 9, 1] })"), Contains("axes from -6 to 5"));
    CHECK_THROWS_WITH(fails(R"({ "type": "transpose", "perm": [0, 2, 1] })"), Contains("perm"));
    CHECK_THROWS_WITH(fails(R"({ "type": "concat", "dim": "1" })"), Contains("\"dim\" must be an axis"));
    CHECK_THROWS_WITH(parseNetwork(R"({ "format": "convscope-network", "version": 1, "name": "x",
          "input": { "shape": [2, 6, 5], "batch": 2 }, "layers": [] })",
                          "bad.json", "/base"),
        Contains("batch"));
}
