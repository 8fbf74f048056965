// The general Einsum cases of issue 30 (a label repeated in one term, three and more operands, constants anywhere),
// built as one-input ONNX models with the expected values of numpy.einsum's definition (einsum_reference.h): shared by
// onnx_einsum_general_test.cpp (cpu.direct) and tests/onnx/onnx_einsum_backends_test.cpp (the other backends).
#pragma once

#include "compute/network.h"
#include "tests/compute/einsum_reference.h"
#include "tests/compute/onnx_test_graph.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace convscope::test {

// The cases' data: element k of a tensor seeded `salt`, a float held as a double (the reference's operands are exact).
inline double einsumValue(size_t k, int salt) { return double(float(std::sin(double(k) * 0.37 + salt) + 0.1 * salt)); }

// Every element of a tensor of dims, or the float sigmoid of each.
inline std::vector<double> einsumValues(const std::vector<int64_t>& dims, int salt, bool sigmoid = false)
{
    int64_t n = 1;
    for (int64_t d : dims)
        n *= d;
    std::vector<double> v;
    for (int64_t k = 0; k < n; ++k)
        v.push_back(sigmoid ? double(1.0f / (1.0f + std::exp(-float(einsumValue(size_t(k), salt)))))
                            : einsumValue(size_t(k), salt));
    return v;
}

struct EinsumCase {
    std::string equation;
    std::vector<int64_t> x; // the model's input
    std::string kinds; // per operand: 'x' the input, 's' sigmoid(x), 'c' a constant (its dims in constDims, in turn)
    std::vector<std::vector<int64_t>> constDims;
    std::vector<std::string> labels; // per operand, for the reference ("..." written out as letters)
    std::string out; // the output's labels
    std::vector<int64_t> outDims;
};

// The case's model (constant k of operand k: einsumValues(dims, 3 + k)), imported; ops: the reference's operands.
inline Network buildEinsum(const EinsumCase& c, std::vector<EinsumOperand>& ops)
{
    ::onnx::ModelProto m = oneInputModel("einsum", 12, c.x);
    auto* g = m.mutable_graph();
    std::vector<std::string> ins;
    size_t nextConst = 0;
    bool sigmoid = false;
    for (size_t k = 0; k < c.kinds.size(); ++k) {
        if (c.kinds[k] == 'x') {
            ins.push_back("x");
            ops.push_back({ c.labels[k], c.x, einsumValues(c.x, 0) });
        } else if (c.kinds[k] == 's') {
            if (!sigmoid)
                node(g, "Sigmoid", "sig", { "x" }, "s");
            sigmoid = true;
            ins.push_back("s");
            ops.push_back({ c.labels[k], c.x, einsumValues(c.x, 0, true) });
        } else {
            const std::vector<int64_t>& dims = c.constDims.at(nextConst++);
            const std::string name = "k" + std::to_string(k);
            const std::vector<double> v = einsumValues(dims, 3 + int(k));
            floatInitializer(g, name, dims, [&v](int64_t e) { return v[size_t(e)]; });
            ins.push_back(name);
            ops.push_back({ c.labels[k], dims, v });
        }
    }
    text(node(g, "Einsum", "e", ins, "y"), "equation", c.equation);
    return import(m);
}

inline std::vector<EinsumCase> generalEinsumCases()
{
    return {
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
}

// The case's input as a tensor (einsumValues(x, 0)).
inline Tensor einsumInput(const EinsumCase& c)
{
    const std::vector<double> x = einsumValues(c.x, 0);
    Tensor in(Shape::of(c.x));
    for (size_t k = 0; k < x.size(); ++k)
        in.data()[k] = float(x[k]);
    return in;
}

// ||y − want||₂ / ||want||₂.
inline double einsumRelL2(const Tensor& y, const std::vector<double>& want)
{
    double err = 0, norm = 0;
    for (size_t k = 0; k < want.size(); ++k) {
        err += (y.data()[k] - want[k]) * (y.data()[k] - want[k]);
        norm += want[k] * want[k];
    }
    return std::sqrt(err / norm);
}

} // namespace convscope::test
