// ONNX Einsum beyond one or two operands that each name a label once (issue 30): a label repeated inside one term (the
// diagonal "ii->i", the trace "ii->", "bii->bi", three times "iii->i", apart "ijji->ij"), three and four operands
// contracted left to right ("ij,jk,kl->il", "bij,bjk,bkl->bil", "i,i,i->", with "..."), constants anywhere among them
// (two constants first: contracted at import), each imported and run on cpu.direct against numpy.einsum's definition
// (tests/compute/einsum_reference.h); and what is still refused, named.
#include "convscope_config.h"

#if CONVSCOPE_WITH_ONNX

#include "compute/error.h"
#include "compute/onnx_model.h"
#include "compute/shape_inference.h"
#include "tests/compute/einsum_reference.h"
#include "tests/compute/onnx_test_graph.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <vector>

using namespace convscope;
using namespace convscope::test;
using Catch::Matchers::Contains;

namespace {

double value(size_t k, int salt) { return double(float(std::sin(double(k) * 0.37 + salt) + 0.1 * salt)); }

std::vector<double> values(const std::vector<int64_t>& dims, int salt, bool sigmoid = false)
{
    int64_t n = 1;
    for (int64_t d : dims)
        n *= d;
    std::vector<double> v;
    for (int64_t k = 0; k < n; ++k)
        v.push_back(
            sigmoid ? double(1.0f / (1.0f + std::exp(-float(value(size_t(k), salt))))) : value(size_t(k), salt));
    return v;
}

struct Case {
    std::string equation;
    std::vector<int64_t> x; // the model's input
    std::string kinds; // per operand: 'x' the input, 's' sigmoid(x), 'c' a constant (its dims in constDims, in turn)
    std::vector<std::vector<int64_t>> constDims;
    std::vector<std::string> labels; // per operand, for the reference ("..." written out as letters)
    std::string out; // the output's labels
    std::vector<int64_t> outDims;
};

// The case's model (constant k of operand k: values(dims, 3 + k)), imported; ops: the reference's operands.
Network build(const Case& c, std::vector<EinsumOperand>& ops)
{
    ::onnx::ModelProto m = oneInputModel("einsum", 12, c.x);
    auto* g = m.mutable_graph();
    std::vector<std::string> ins;
    size_t nextConst = 0;
    bool sigmoid = false;
    for (size_t k = 0; k < c.kinds.size(); ++k) {
        if (c.kinds[k] == 'x') {
            ins.push_back("x");
            ops.push_back({ c.labels[k], c.x, values(c.x, 0) });
        } else if (c.kinds[k] == 's') {
            if (!sigmoid)
                node(g, "Sigmoid", "sig", { "x" }, "s");
            sigmoid = true;
            ins.push_back("s");
            ops.push_back({ c.labels[k], c.x, values(c.x, 0, true) });
        } else {
            const std::vector<int64_t>& dims = c.constDims.at(nextConst++);
            const std::string name = "k" + std::to_string(k);
            auto* t = g->add_initializer();
            t->set_name(name);
            t->set_data_type(::onnx::TensorProto::FLOAT);
            for (int64_t d : dims)
                t->add_dims(d);
            const std::vector<double> v = values(dims, 3 + int(k));
            for (double e : v)
                t->add_float_data(float(e));
            ins.push_back(name);
            ops.push_back({ c.labels[k], dims, v });
        }
    }
    text(node(g, "Einsum", "e", ins, "y"), "equation", c.equation);
    return import(m);
}

} // namespace

TEST_CASE("ONNX Einsum with a label repeated in one term (a diagonal) or three and more operands runs as "
          "numpy.einsum",
    "[onnx][einsum]")
{
    const std::vector<Case> cases = {
        // Diagonals.
        { "ii->i", { 4, 4 }, "x", {}, { "ii" }, "i", { 4 } },
        { "ii->", { 4, 4 }, "x", {}, { "ii" }, "", { 1 } }, // the trace
        { "ii", { 4, 4 }, "x", {}, { "ii" }, "", { 1 } }, // implicit: a label seen twice is summed
        { "bii->bi", { 2, 3, 3 }, "x", {}, { "bii" }, "bi", { 2, 3 } },
        { "iij->ji", { 3, 3, 5 }, "x", {}, { "iij" }, "ji", { 5, 3 } },
        { "iii->i", { 3, 3, 3 }, "x", {}, { "iii" }, "i", { 3 } },
        { "ijji->ij", { 3, 4, 4, 3 }, "x", {}, { "ijji" }, "ij", { 3, 4 } }, // apart: a transpose first
        { "iji->j", { 3, 2, 3 }, "x", {}, { "iji" }, "j", { 2 } },
        { "...ii->...i", { 2, 3, 4, 4 }, "x", {}, { "abii" }, "abi", { 2, 3, 4 } }, // ONNX's batch_diagonal
        { "iij,jk->ik", { 3, 3, 4 }, "xc", { { 4, 2 } }, { "iij", "jk" }, "ik", { 3, 2 } },
        { "ii,ij->j", { 3, 4 }, "cx", { { 3, 3 } }, { "ii", "ij" }, "j", { 4 } }, // a constant's diagonal
        { "bii,bij->bj", { 2, 3, 3 }, "xs", {}, { "bii", "bij" }, "bj", { 2, 3 } },
        // Three and more operands, left to right.
        { "ij,jk,kl->il", { 3, 4 }, "xcc", { { 4, 5 }, { 5, 2 } }, { "ij", "jk", "kl" }, "il", { 3, 2 } },
        { "ij,jk,kl->il", { 3, 4 }, "cxc", { { 2, 3 }, { 4, 2 } }, { "ij", "jk", "kl" }, "il", { 2, 2 } },
        { "ij,jk,kl->li", { 4, 5 }, "ccx", { { 2, 3 }, { 3, 4 } }, { "ij", "jk", "kl" }, "li", { 5, 2 } }, // folded
        { "bij,bjk,bkl->bil", { 2, 3, 4 }, "xcc", { { 2, 4, 5 }, { 2, 5, 3 } }, { "bij", "bjk", "bkl" }, "bil",
            { 2, 3, 3 } },
        { "i,i,i->", { 5 }, "xsc", { { 5 } }, { "i", "i", "i" }, "", { 1 } },
        { "i,i,j->j", { 5 }, "xsc", { { 3 } }, { "i", "i", "j" }, "j", { 3 } }, // a scalar in between
        { "ij,ik,jk->i", { 3, 4 }, "xcc", { { 3, 5 }, { 4, 5 } }, { "ij", "ik", "jk" }, "i", { 3 } },
        { "...ij,jk,...k->...i", { 2, 3, 4 }, "xcc", { { 4, 5 }, { 1, 5 } }, { "aij", "jk", "ak" }, "ai", { 2, 3 } },
        { "b...,b...,b...", { 2, 3 }, "xsx", {}, { "ba", "ba", "ba" }, "a", { 3 } }, // implicit, "..." first
        { "ab,bc,cd,da->", { 3, 3 }, "xccc", { { 3, 4 }, { 4, 2 }, { 2, 3 } }, { "ab", "bc", "cd", "da" }, "", { 1 } },
        { "iij,jk,kk->ik", { 3, 3, 4 }, "xcc", { { 4, 2 }, { 2, 2 } }, { "iij", "jk", "kk" }, "ik", { 3, 2 } },
    };
    for (const Case& c : cases) {
        INFO(c.equation << " " << c.kinds);
        std::vector<EinsumOperand> ops;
        const Network net = build(c, ops);
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        CHECK(shapes.layers.back().out.dims() == c.outDims);
        std::vector<double> x = values(c.x, 0);
        Tensor in(Shape::of(c.x));
        for (size_t k = 0; k < x.size(); ++k)
            in.data()[k] = float(x[k]);
        const Tensor y = cpuDirectOutput(net, in);
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

TEST_CASE("an ONNX diagonal is a reshape and a gather of 0, n + 1, 2(n + 1), …", "[onnx][einsum]")
{
    ::onnx::ModelProto m = oneInputModel("einsum", 12, { 4, 4 });
    text(node(m.mutable_graph(), "Einsum", "diag", { "x" }, "y"), "equation", "ii->i");
    const Network net = import(m);
    REQUIRE(net.layers.size() == 2);
    CHECK(net.layers[0].spec == LayerSpec(Reshape { { 16 } }));
    CHECK(net.layers[1].spec == LayerSpec(Gather { 0, { 0, 5, 10, 15 }, { 4 } }));
    // "iii": 1 + n + n² apart in the merged axis of n³.
    ::onnx::ModelProto three = oneInputModel("einsum", 12, { 3, 3, 3 });
    text(node(three.mutable_graph(), "Einsum", "diag", { "x" }, "y"), "equation", "iii->i");
    const Network net3 = import(three);
    REQUIRE(net3.layers.size() == 2);
    CHECK(net3.layers[1].spec == LayerSpec(Gather { 0, { 0, 13, 26 }, { 3 } }));
}

TEST_CASE("an ONNX Einsum still refused names the equation and why", "[onnx][einsum]")
{
    struct Bad {
        std::string equation;
        std::vector<int64_t> x, k; // the input; a constant second operand when k is not empty
        std::string words;
    };
    for (const Bad& b : std::vector<Bad> {
             { "ii->i", { 3, 4 }, {}, "label i is repeated in operand 0 with sizes 3 and 4" },
             { "iij->j", { 2, 2, 3 }, { 3, 3 }, "1 input terms for 3 operands" },
             { "ij,jj->i", { 2, 3 }, { 3, 4 }, "label j is repeated in operand 1 with sizes 3 and 4" },
             { "ij,jk->ii", { 2, 3 }, { 3, 4 }, "the output \"ii\" repeats 'i'" },
             // The product of operands 0 and 1 would have 7 axes, all needed by operand 2.
             { "abcd,efg,abcdefg->", { 2, 1, 2, 1 }, { 2, 1, 2 }, "the product of operands 0 to 1 has 7 axes" },
         }) {
        INFO(b.equation);
        ::onnx::ModelProto m = oneInputModel("einsum", 12, b.x);
        auto* g = m.mutable_graph();
        std::vector<std::string> ins = { "x" };
        if (!b.k.empty()) {
            auto* t = g->add_initializer();
            t->set_name("k");
            t->set_data_type(::onnx::TensorProto::FLOAT);
            int64_t n = 1;
            for (int64_t d : b.k) {
                t->add_dims(d);
                n *= d;
            }
            for (int64_t e = 0; e < n; ++e)
                t->add_float_data(float(e));
            ins.push_back("k");
        }
        if (b.equation == "iij->j")
            ins.push_back("x");
        if (b.equation.rfind("abcd,efg,", 0) == 0) {
            auto* t = g->add_initializer(); // abcdefg
            t->set_name("big");
            t->set_data_type(::onnx::TensorProto::FLOAT);
            for (int64_t d : { 2, 1, 2, 1, 2, 1, 2 })
                t->add_dims(d);
            for (int e = 0; e < 16; ++e)
                t->add_float_data(1.0f);
            ins.push_back("big");
        }
        text(node(g, "Einsum", "bad_einsum", ins, "y"), "equation", b.equation);
        CHECK_THROWS_WITH(import(m), Contains(b.words) && Contains("bad_einsum") && Contains(b.equation));
    }
}

#endif
