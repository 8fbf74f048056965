// ONNX MatMul and Gather on activations (issue 30). MatMul of two activations is a matmul layer (torch.matmul's rules,
// which are ONNX's: numpy.matmul); MatMul of an activation by a constant 2-D B [K, N] is a linear layer on the last
// axis (weight Bᵀ, no bias: an Add of a constant right after it is folded in as its bias, foldLinearBias); a constant
// A, or a B of another rank (a batched one), is a matmul layer holding the constant on its side. The one
// input a linear layer reads otherwise — [N, C, 1, 1] or [N, C, 1, 1, 1], which linear takes as [N, C]
// (compute/linear_geometry.h) — is reshaped to [N, C, 1] first and back after, so ONNX's last-axis product is what
// runs. Gather of an activation by constant indices is a gather layer (Gather of constants is folded, onnx_fold.cpp);
// an index out of range fails naming the node and the numbers (shape inference's message).
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"
#include "compute/linear_geometry.h"

namespace convscope::onnx::convert {

void matmul(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    onlyFirstOutput(g, n, a);
    if (n.input_size() != 2)
        refuse(n, a, "MatMul of " + std::to_string(n.input_size()) + " inputs (it has 2)");
    const std::string &x = n.input(0), &y = n.input(1);
    const bool xc = g.isConstant(x), yc = g.isConstant(y);
    if (!xc && !yc) {
        (void)g.activation(x, a);
        (void)g.activation(y, a);
        return g.addLayer(name, Matmul {}, { x, y }, n.output(0), a);
    }
    if (xc && yc)
        refuse(n, a, "MatMul of two constants that were not folded");
    const ConstTensor& w = g.constant(xc ? x : y, a, xc ? "A" : "B");
    if (xc || w.dims.size() != 2) { // a constant A, or a B of another rank: a matmul layer holding it
        if (!w.isFloat)
            a.fail(std::string(xc ? "A" : "B") + " must be float");
        if (w.dims.empty() || w.dims.size() > 6)
            refuse(n, a, "MatMul by a constant of " + std::to_string(w.dims.size()) + " dims (ranks 1 to 6)");
        Matmul m;
        m.constant = w.f;
        m.constant_shape = w.dims;
        m.constant_first = xc;
        return g.addLayer(name, m, { xc ? y : x }, n.output(0), a);
    }
    if (!w.isFloat)
        a.fail("B must be float");
    const int64_t inF = w.dims[0], outF = w.dims[1];
    const Shape in = g.activation(x, a).shape;
    const std::vector<int64_t> dims = in.dims();
    if (dims.back() != inF)
        a.fail("B " + npyDimsText(w.dims) + " does not fit the input " + in.str() + " (its last axis must be "
            + std::to_string(inF) + ")");
    std::vector<float> t(w.f.size()); // [in, out] → [out, in], PyTorch's Linear layout
    for (int64_t i = 0; i < inF; ++i)
        for (int64_t o = 0; o < outF; ++o)
            t[size_t(o * inF + i)] = w.f[size_t(i * outF + o)];
    ConstTensor wt;
    wt.dims = { outF, inF };
    wt.f = std::move(t);
    auto e = std::make_shared<Layer::Embedded>();
    e->weight = toTensor(wt, Shape::nchw(outF, inF, 1, 1), a, "B");
    Linear l;
    l.out_features = outF;
    l.bias = false;
    if (!linearReadsPooled(in))
        return g.addLayer(name, l, { x }, n.output(0), a, e);
    // [N, C, 1, 1] (or [N, C, 1, 1, 1]) by B [1, N_out]: reshape to [N, C, 1], linear, reshape to [N, C, 1, N_out].
    const std::string flat = n.output(0) + "#rows", product = n.output(0) + "#product";
    g.addLayer(name + "_rows", Reshape { { in.n, in.c, 1 } }, { x }, flat, a);
    g.addLayer(name, l, { flat }, product, a, e);
    std::vector<int64_t> outDims = dims;
    outDims.back() = outF;
    g.addLayer(name + "_unrows", Reshape { outDims }, { product }, n.output(0), a);
}

void gather(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    onlyFirstOutput(g, n, a);
    if (n.input_size() != 2)
        refuse(n, a, "Gather of " + std::to_string(n.input_size()) + " inputs (it has 2: data and indices)");
    if (!g.isConstant(n.input(1)))
        refuse(n, a,
            "Gather with computed indices (ConvScope's gather layer takes constant indices: an initializer, "
            "a Constant or folded shape arithmetic)");
    const ConstTensor& idx = g.constant(n.input(1), a, "indices");
    if (idx.isFloat)
        a.fail("the indices must be integers");
    Gather l;
    l.axis = a.getInt("axis", 0);
    l.indices = idx.ints(a.where() + ": indices");
    l.indices_shape = idx.dims;
    if (l.indices.empty())
        refuse(n, a, "Gather of no index (an empty output)");
    g.addLayer(name, l, { in0(n, a) }, n.output(0), a);
}

} // namespace convscope::onnx::convert
