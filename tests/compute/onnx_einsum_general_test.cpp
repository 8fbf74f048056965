// ONNX Einsum beyond one or two operands that each name a label once (issue 30): a label repeated inside one term (the
// diagonal "ii->i", the trace "ii->", "bii->bi", three times "iii->i", apart "ijji->ij"), three and four operands
// contracted left to right ("ij,jk,kl->il", "bij,bjk,bkl->bil", "i,i,i->", with "..."), constants anywhere among them
// (two constants first: contracted at import), each imported and run on cpu.direct against numpy.einsum's definition
// (tests/compute/einsum_cases.h, tests/onnx/onnx_einsum_backends_test.cpp on the other backends); and what is still
// refused, named.
#include "convscope_config.h"

#if CONVSCOPE_WITH_ONNX

#include "compute/error.h"
#include "compute/onnx_model.h"
#include "compute/shape_inference.h"
#include "tests/compute/einsum_cases.h"
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

TEST_CASE("ONNX Einsum with a label repeated in one term (a diagonal) or three and more operands runs as "
          "numpy.einsum",
    "[onnx][einsum]")
{
    for (const EinsumCase& c : generalEinsumCases()) {
        INFO(c.equation << " " << c.kinds);
        std::vector<EinsumOperand> ops;
        const Network net = buildEinsum(c, ops);
        const ShapeReport shapes = inferShapes(net);
        REQUIRE(shapes.ok());
        CHECK(shapes.layers.back().out.dims() == c.outDims);
        const Tensor y = onePassOutput(net, einsumInput(c));
        const std::vector<double> want = referenceEinsum(ops, c.out);
        REQUIRE(size_t(y.numel()) == want.size());
        CHECK(einsumRelL2(y, want) < 1e-6);
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
            floatInitializer(g, "k", b.k, [](int64_t e) { return float(e); });
            ins.push_back("k");
        }
        if (b.equation == "iij->j")
            ins.push_back("x");
        if (b.equation.rfind("abcd,efg,", 0) == 0) {
            floatInitializer(g, "big", { 2, 1, 2, 1, 2, 1, 2 }, [](int64_t) { return 1.0f; }); // abcdefg
            ins.push_back("big");
        }
        text(node(g, "Einsum", "bad_einsum", ins, "y"), "equation", b.equation);
        CHECK_THROWS_WITH(import(m), Contains(b.words) && Contains("bad_einsum") && Contains(b.equation));
    }
}

#endif
