// Issue 30's last torchvision operators, built here with the generated classes and run on the CPU: Einsum (MaxViT's
// attention) against a direct evaluation of numpy.einsum's definition on many equations, one or two operands, either
// one constant, with and without "->", with "..." (onnx_einsum_general_test.cpp: diagonals, three or more operands); a
// Slice with steps other than 1 (Swin's patch merging, reversals) as a gather, with ONNX's clamping; MatMul, Gemm,
// Relu, Sigmoid and Clip of constants folded (Swin V2's position bias MLP); and every malformed equation or empty
// stepped slice an InputError naming the node and the numbers.
#include "convscope_config.h"

#if CONVSCOPE_WITH_ONNX

#include "compute/error.h"
#include "compute/onnx_model.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/compute/einsum_reference.h"
#include "tests/compute/onnx_test_graph.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>
#include <map>

using namespace convscope;
using namespace convscope::test;
using Catch::Matchers::Contains;

namespace {

const std::vector<int64_t> kX = { 2, 3, 4, 5 }; // the input of every model here

::onnx::ModelProto model(int opset = 13) { return oneInputModel("einsum", opset, kX); }

float value(size_t k, int salt) { return float(std::sin(double(k) * 0.37 + salt)) + 0.1f * float(salt); }

void floats(::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims, int salt)
{
    floatInitializer(g, name, dims, [salt](int64_t k) { return value(size_t(k), salt); });
}

Tensor input()
{
    Tensor x(Shape::of(kX));
    for (int64_t k = 0; k < x.numel(); ++k)
        x.data()[k] = value(size_t(k), 0);
    return x;
}

Tensor run(const Network& net) { return onePassOutput(net, input()); }

std::vector<double> xValues(bool sigmoid)
{
    std::vector<double> v;
    for (size_t k = 0; k < 120; ++k) {
        const double x = value(k, 0);
        v.push_back(sigmoid ? double(1.0f / (1.0f + std::exp(-float(x)))) : x);
    }
    return v;
}

std::vector<double> constValues(const std::vector<int64_t>& dims, int salt)
{
    int64_t n = 1;
    for (int64_t d : dims)
        n *= d;
    std::vector<double> v;
    for (int64_t k = 0; k < n; ++k)
        v.push_back(value(size_t(k), salt));
    return v;
}

struct Case {
    std::string equation;
    std::string a, b; // the operands' labels for the reference; b empty: one operand
    char bKind; // 's': sigmoid(x); 'c': a constant of bDims; 'C': the constant first, x second
    std::vector<int64_t> bDims;
    std::string out; // the output's labels
    std::vector<int64_t> outDims;
};

} // namespace

TEST_CASE("ONNX Einsum of one or two operands imports as transpose, reduce sum, reshape and matmul and runs as "
          "numpy.einsum",
    "[onnx][einsum]")
{
    const std::vector<Case> cases = {
        { "B H I D, B H J D -> B H I J", "BHID", "BHJD", 's', {}, "BHIJ", { 2, 3, 4, 4 } }, // MaxViT's Q·Kᵀ
        { "bhij,bhjd->bhid", "bhij", "bhjd", 'c', { 2, 3, 5, 6 }, "bhid", { 2, 3, 4, 6 } }, // its softmax · V
        { "abcd->dcba", "abcd", "", 0, {}, "dcba", { 5, 4, 3, 2 } }, { "abcd->ac", "abcd", "", 0, {}, "ac", { 2, 4 } },
        { "abcd", "abcd", "", 0, {}, "abcd", { 2, 3, 4, 5 } }, { "abcd->", "abcd", "", 0, {}, "", { 1 } },
        { "abcd,dE", "abcd", "dE", 'c', { 5, 3 }, "Eabc", { 3, 2, 3, 4 } }, // implicit: ASCII order, 'E' first
        { "...d,de->...e", "abcd", "de", 'c', { 5, 2 }, "abce", { 2, 3, 4, 2 } },
        { "abcd,cx->xb", "abcd", "cx", 'c', { 4, 3 }, "xb", { 3, 3 } }, // a and d summed first
        { "ij,abjd->abid", "ij", "abjd", 'C', { 6, 4 }, "abid", { 2, 3, 6, 5 } }, // the constant first
        { "abcd,abcd->", "abcd", "abcd", 's', {}, "", { 1 } },
        { "b...,b...->...b", "abcd", "abcd", 's', {}, "bcda", { 3, 4, 5, 2 } },
        { "abcd,bd->ca", "abcd", "bd", 'c', { 3, 5 }, "ca", { 4, 2 } },
        { "abcd,e->abcde", "abcd", "e", 'c', { 2 }, "abcde", { 2, 3, 4, 5, 2 } }, // an outer product
        { "abcd,cb", "abcd", "cb", 'c', { 4, 3 }, "ad", { 2, 5 } },
        { "abcd,ad->abcd", "abcd", "ad", 'c', { 1, 5 }, "abcd", { 2, 3, 4, 5 } }, // a: 1 broadcast against 2
        { "abcd,dx->abcx", "abcd", "dx", 'c', { 1, 3 }, "abcx", { 2, 3, 4, 3 } }, // d: 1 against 5, summed
        { "ij,abjd->abid", "ij", "abjd", 'C', { 6, 1 }, "abid", { 2, 3, 6, 5 } }, // j: the constant's 1 against 4
    };
    for (const Case& c : cases) {
        INFO(c.equation);
        ::onnx::ModelProto m = model();
        auto* g = m.mutable_graph();
        std::vector<std::string> ins = { "x" };
        std::vector<EinsumOperand> ops = { { c.a, kX, xValues(false) } };
        if (c.bKind == 's') {
            node(g, "Sigmoid", "sig", { "x" }, "s");
            ins.push_back("s");
            ops.push_back({ c.b, kX, xValues(true) });
        } else if (c.bKind == 'c' || c.bKind == 'C') {
            floats(g, "k", c.bDims, 3);
            const EinsumOperand k { c.b, c.bDims, constValues(c.bDims, 3) };
            if (c.bKind == 'c') {
                ins.push_back("k");
                ops.push_back(k);
            } else {
                ins.insert(ins.begin(), "k");
                ops = { { c.a, c.bDims, constValues(c.bDims, 3) }, { c.b, kX, xValues(false) } };
            }
        }
        text(node(g, "Einsum", "e", ins, "y"), "equation", c.equation);
        const Network net = import(m);
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        CHECK(shapes.layers.back().out.dims() == c.outDims);
        const Tensor y = run(net);
        const std::vector<double> want = referenceEinsum(ops, c.out);
        REQUIRE(size_t(y.numel()) == want.size());
        double err = 0, norm = 0;
        for (size_t k = 0; k < want.size(); ++k) {
            err += (y.data()[k] - want[k]) * (y.data()[k] - want[k]);
            norm += want[k] * want[k];
        }
        CHECK(std::sqrt(err / norm) < 1e-6);
    }
}

TEST_CASE("a malformed or unsupported ONNX Einsum is an InputError naming the node and the equation", "[onnx][einsum]")
{
    const std::vector<std::pair<std::string, std::string>> bad = {
        { "abcd->abce", "the output's 'e' is in no input" },
        { "aacd->d", "label a is repeated in operand 0 with sizes 2 and 3 (a diagonal needs one size" },
        { "abc->a", "names 3 axes of an operand of 4" },
        { "ab-cd->a", "holds '-'" },
        { "a.bcd->a", "is not one \"...\"" },
        { "...a...->a", "is not one \"...\"" },
        { "...d->d", "does not name" },
        { "abcd->a->b", "more than one \"->\"" },
        { "abcd,ef->a", "2 input terms for 1 operands" },
        { "abcd->abcdd", "repeats 'd'" },
    };
    for (const auto& [eq, words] : bad) {
        INFO(eq);
        ::onnx::ModelProto m = model();
        text(node(m.mutable_graph(), "Einsum", "bad_einsum", { "x" }, "y"), "equation", eq);
        CHECK_THROWS_WITH(import(m), Contains(words) && Contains("bad_einsum") && Contains(eq));
    }
    // A label whose sizes differ between the operands.
    ::onnx::ModelProto m = model();
    floats(m.mutable_graph(), "k", { 4, 3 }, 1);
    text(node(m.mutable_graph(), "Einsum", "sizes", { "x", "k" }, "y"), "equation", "abcd,dx->abcx");
    CHECK_THROWS_WITH(import(m), Contains("label d is 5 in one operand and 4 in operand 1 (numpy broadcasts only"));
    ::onnx::ModelProto empty = model();
    floats(empty.mutable_graph(), "k", { 5, 0 }, 1);
    text(node(empty.mutable_graph(), "Einsum", "empty", { "x", "k" }, "y"), "equation", "abcd,dx->abcx");
    CHECK_THROWS_WITH(import(empty), Contains("of the empty constant [5, 0]"));
}

TEST_CASE(
    "an ONNX Slice with steps other than 1 is a gather with ONNX's clamping; an empty one is refused", "[onnx][slice]")
{
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
    struct Stepped {
        int64_t start, end, step;
        std::vector<int64_t> indices; // along axis 3 (size 5)
    };
    for (const Stepped& s : std::vector<Stepped> {
             { 0, 5, 2, { 0, 2, 4 } }, // Swin's x[..., 0::2]
             { 1, kMax, 2, { 1, 3 } }, // x[..., 1::2]
             { -1, kMin, -1, { 4, 3, 2, 1, 0 } }, // a reversal
             { 10, -10, -2, { 4, 2, 0 } }, // the start clamped to 4, the end to -1
             { -2, 0, -3, { 3 } }, { -100, 5, 4, { 0, 4 } }, { 3, 4, kMax, { 3 } }, { 4, 0, kMin, { 4 } },
             { -100, kMin, -1, { 0 } }, // backward, a start before the first is the first (ONNX, onnxruntime)
         }) {
        INFO(s.start << ":" << s.end << ":" << s.step);
        ::onnx::ModelProto m = model();
        auto* g = m.mutable_graph();
        int64s(g, "starts", { 1, s.start });
        int64s(g, "ends", { 3, s.end });
        int64s(g, "axes", { 2, -1 });
        int64s(g, "steps", { 1, s.step });
        node(g, "Slice", "stepped", { "x", "starts", "ends", "axes", "steps" }, "y");
        const Network net = import(m);
        REQUIRE(net.layers.size() == 2);
        CHECK(net.layers[0].spec == LayerSpec(Slice { 2, 1, 3 }));
        const auto* gather = std::get_if<Gather>(&net.layers[1].spec);
        REQUIRE(gather);
        CHECK(gather->axis == 3);
        CHECK(gather->indices == s.indices);
        const Tensor y = run(net);
        const std::vector<double> x = xValues(false);
        const int64_t k = int64_t(s.indices.size());
        REQUIRE(y.numel() == 2 * 3 * 2 * k);
        for (int64_t e = 0; e < y.numel(); ++e) {
            const int64_t w = e % k, h = e / k % 2, c = e / k / 2 % 3, n = e / k / 6;
            CHECK(y.data()[e] == float(x[size_t(((n * 3 + c) * 4 + h + 1) * 5 + s.indices[size_t(w)])]));
        }
    }
    for (const Stepped& s : std::vector<Stepped> { { 3, 1, 2, {} }, { 0, 0, -1, {} }, { 0, 4, 0, {} } }) {
        ::onnx::ModelProto m = model();
        auto* g = m.mutable_graph();
        int64s(g, "starts", { s.start });
        int64s(g, "ends", { s.end });
        int64s(g, "axes", { 3 });
        int64s(g, "steps", { s.step });
        node(g, "Slice", "bad_slice", { "x", "starts", "ends", "axes", "steps" }, "y");
        const std::string range = "[" + std::to_string(s.start) + ", " + std::to_string(s.end) + ") step "
            + std::to_string(s.step) + " of axis 3 (size 5)";
        CHECK_THROWS_WITH(
            import(m), Contains("bad_slice") && Contains(range) && Contains(s.step == 0 ? "a step of 0" : "is empty"));
    }
}

TEST_CASE(
    "MatMul, Gemm, Relu, Sigmoid and Clip of constants fold at import (Swin V2's position bias MLP)", "[onnx][fold]")
{
    // x + 16 · sigmoid(relu(T · W1 + b) · W2), the bias table [5] broadcast on x's last axis; and Gemm, Clip.
    ::onnx::ModelProto m = model();
    auto* g = m.mutable_graph();
    floats(g, "T", { 5, 2 }, 1);
    floats(g, "W1", { 2, 1, 3 }, 2); // Flatten (axis 1) of it: [2, 3]
    floats(g, "b", { 3 }, 4);
    floats(g, "W2", { 3 }, 5); // 1-D: numpy's matrix–vector product
    floats(g, "sixteen", {}, 0);
    g->mutable_initializer(4)->set_float_data(0, 16.0f);
    node(g, "Flatten", "flat", { "W1" }, "W1f");
    node(g, "MatMul", "mm1", { "T", "W1f" }, "h");
    node(g, "Add", "bias", { "h", "b" }, "hb");
    node(g, "Relu", "relu", { "hb" }, "r");
    node(g, "MatMul", "mm2", { "r", "W2" }, "t");
    node(g, "Sigmoid", "sig", { "t" }, "s");
    node(g, "Mul", "scale", { "s", "sixteen" }, "s16");
    // 0.5 · G [4, 3] · K [3, 5] + 2 · C [5] (C broadcast to [4, 5]), clipped to [-0.1, 0.2].
    floats(g, "G", { 4, 3 }, 6);
    floats(g, "K", { 3, 5 }, 7);
    floats(g, "C", { 5 }, 8);
    auto* gemm = node(g, "Gemm", "gemm", { "G", "K", "C" }, "gk");
    for (const auto& [attr, v] : { std::pair<const char*, float> { "alpha", 0.5f }, { "beta", 2.0f } }) {
        auto* at = gemm->add_attribute();
        at->set_name(attr);
        at->set_type(::onnx::AttributeProto::FLOAT);
        at->set_f(v);
    }
    floats(g, "lo", {}, 0);
    floats(g, "hi", {}, 0);
    g->mutable_initializer(8)->set_float_data(0, -0.1f);
    g->mutable_initializer(9)->set_float_data(0, 0.2f);
    node(g, "Clip", "clip", { "gk", "lo", "hi" }, "gc");
    node(g, "Add", "with_bias", { "x", "s16" }, "xb");
    node(g, "Add", "y", { "xb", "gc" }, "y");
    const Network net = import(m);
    CHECK(net.layers.size() == 2); // every node of constants folded: two adds of x
    const std::vector<double> T = constValues({ 5, 2 }, 1), W1 = constValues({ 2, 3 }, 2), b = constValues({ 3 }, 4),
                              W2 = constValues({ 3 }, 5), G = constValues({ 4, 3 }, 6);
    std::vector<double> bias(5);
    for (size_t i = 0; i < 5; ++i) {
        double t = 0;
        for (size_t j = 0; j < 3; ++j) {
            double h = b[j];
            for (size_t k = 0; k < 2; ++k)
                h += T[i * 2 + k] * W1[k * 3 + j];
            t += std::max(h, 0.0) * W2[j];
        }
        bias[i] = 16.0 / (1.0 + std::exp(-t));
    }
    const std::vector<double> K = constValues({ 3, 5 }, 7), C = constValues({ 5 }, 8);
    std::vector<double> gc(20);
    for (size_t i = 0; i < 4; ++i)
        for (size_t j = 0; j < 5; ++j) {
            double v = 0;
            for (size_t k = 0; k < 3; ++k)
                v += G[i * 3 + k] * K[k * 5 + j];
            gc[i * 5 + j] = std::min(std::max(0.5 * v + 2 * C[j], -0.1), 0.2);
        }
    const Tensor y = run(net);
    const std::vector<double> x = xValues(false);
    for (int64_t e = 0; e < y.numel(); ++e)
        CHECK(y.data()[e] == Approx(x[size_t(e)] + bias[size_t(e % 5)] + gc[size_t(e % 20)]).epsilon(1e-5));
}

TEST_CASE("an ONNX Reshape over 6 dims, then Transpose, then Reshape (Swin3D's windows) imports as at most 6-D "
          "layers; an empty Slice is left out of a Concat",
    "[onnx][slice]")
{
    const std::vector<int64_t> wide = { 2, 1, 3, 2, 2, 1, 5, 1 };
    for (const std::vector<int64_t>& perm : std::vector<std::vector<int64_t>> {
             { 0, 3, 1, 6, 2, 4, 7, 5 }, { 0, 1, 3, 5, 2, 4, 6, 7 }, { 7, 6, 5, 4, 3, 2, 1, 0 } }) {
        ::onnx::ModelProto m = model();
        auto* g = m.mutable_graph();
        int64s(g, "wide", wide);
        int64s(g, "flat", { 0, -1 }); // 0: the wide transpose's first dim
        node(g, "Reshape", "partition", { "x", "wide" }, "w");
        auto* t = node(g, "Transpose", "windows", { "w" }, "t");
        auto* at = t->add_attribute();
        at->set_name("perm");
        at->set_type(::onnx::AttributeProto::INTS);
        for (int64_t p : perm)
            at->add_ints(p);
        node(g, "Reshape", "merge", { "t", "flat" }, "y");
        const Network net = import(m);
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        for (const auto& l : shapes.layers)
            CHECK(l.out.dims().size() <= 6);
        const int64_t first = wide[size_t(perm[0])];
        CHECK(shapes.layers.back().out.dims() == std::vector<int64_t> { first, 120 / first });
        const Tensor y = run(net);
        const std::vector<double> x = xValues(false);
        std::vector<int64_t> at8(8, 0); // the output's index over the transposed dims
        for (int64_t e = 0; e < 120; ++e) {
            int64_t src = 0;
            std::vector<int64_t> in8(8);
            for (size_t i = 0; i < 8; ++i)
                in8[size_t(perm[i])] = at8[i];
            for (size_t k = 0; k < 8; ++k)
                src = src * wide[k] + in8[k];
            CHECK(y.data()[e] == float(x[size_t(src)]));
            for (size_t i = 8; i-- > 0;) {
                if (++at8[i] < wide[size_t(perm[i])])
                    break;
                at8[i] = 0;
            }
        }
    }
    // A wide view read by anything else fails naming it.
    ::onnx::ModelProto bad = model();
    int64s(bad.mutable_graph(), "wide", wide);
    node(bad.mutable_graph(), "Reshape", "partition", { "x", "wide" }, "w");
    node(bad.mutable_graph(), "Relu", "relu", { "w" }, "y");
    CHECK_THROWS_WITH(import(bad), Contains("partition") && Contains("8-D result [2, 1, 3, 2, 2, 1, 5, 1]"));

    // torch.roll by 0 along axis 1: Concat(x[:, 3:3], x[:, 0:3]) is x.
    ::onnx::ModelProto roll = model();
    auto* g = roll.mutable_graph();
    int64s(g, "three", { 3 });
    int64s(g, "zero", { 0 });
    int64s(g, "one", { 1 });
    node(g, "Slice", "tail", { "x", "three", "three", "one" }, "a");
    node(g, "Slice", "head", { "x", "zero", "three", "one" }, "b");
    auto* cat = node(g, "Concat", "roll", { "a", "b" }, "c");
    auto* axis = cat->add_attribute();
    axis->set_name("axis");
    axis->set_type(::onnx::AttributeProto::INT);
    axis->set_i(1);
    node(g, "Relu", "y", { "c" }, "y");
    const Tensor y = run(import(roll));
    const std::vector<double> x = xValues(false);
    REQUIRE(y.numel() == 120);
    for (int64_t e = 0; e < 120; ++e)
        CHECK(y.data()[e] == float(std::max(x[size_t(e)], 0.0)));
    // An empty Slice read by anything but a Concat fails naming it.
    ::onnx::ModelProto read = model();
    int64s(read.mutable_graph(), "three", { 3 });
    int64s(read.mutable_graph(), "one", { 1 });
    node(read.mutable_graph(), "Slice", "nothing", { "x", "three", "three", "one" }, "a");
    node(read.mutable_graph(), "Relu", "y", { "a" }, "y");
    CHECK_THROWS_WITH(import(read), Contains("nothing") && Contains("[3, 3) step 1 of axis 1 (size 3) is empty"));
}

TEST_CASE("an ONNX Split of a volume with every output read is the operator table's (MViT's 5-D attention input)",
    "[onnx][slice]")
{
    ::onnx::ModelProto m = model();
    auto* g = m.mutable_graph();
    int64s(g, "five", { 2, 3, 2, 2, 5 });
    node(g, "Reshape", "volume", { "x", "five" }, "v");
    auto* split = g->add_node();
    split->set_op_type("Split");
    split->set_name("qk");
    split->add_input("v");
    split->add_output("q");
    split->add_output("k");
    auto* axis = split->add_attribute();
    axis->set_name("axis");
    axis->set_type(::onnx::AttributeProto::INT);
    axis->set_i(2);
    node(g, "Sub", "y", { "q", "k" }, "y");
    const Tensor y = run(import(m));
    const std::vector<double> x = xValues(false);
    REQUIRE(y.numel() == 60);
    for (int64_t e = 0; e < 60; ++e) { // [2, 3, 1, 2, 5]: q is rows 0–1 of each 4, k rows 2–3
        const int64_t nc = e / 10, rest = e % 10;
        CHECK(y.data()[e] == float(x[size_t(nc * 20 + rest)]) - float(x[size_t(nc * 20 + 10 + rest)]));
    }
}

#endif
