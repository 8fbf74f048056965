// Shape inference of matmul, gather and linear on any rank (compute/shape_inference_tensor.h).
#include "compute/shape_inference_tensor.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/gather.h"
#include "compute/linear_geometry.h"
#include "compute/matmul.h"

namespace convscope {

namespace {
    std::string text(const std::vector<int64_t>& d)
    {
        std::string s = "[";
        for (size_t k = 0; k < d.size(); ++k)
            s += (k ? ", " : "") + std::to_string(d[k]);
        return s + "]";
    }
    double bytesOf(int64_t count) { return 4.0 * double(count); }
} // namespace

LayerShape inferLinear(const Linear& l, const Shape& in)
{
    if (l.out_features < 1)
        throw InputError("out_features must be at least 1");
    const LinearRows g = linearRows(in);
    if (g.inFeatures < 1)
        throw InputError("linear reads the last axis of its input " + in.str() + ", which is empty");
    LayerShape r;
    r.out = Shape::of(linearOutputDims(in, l.out_features));
    r.formula = "in_features = " + std::to_string(g.inFeatures) + " → out_features = " + std::to_string(l.out_features);
    if (g.pooled)
        r.formula += "\n" + in.str() + " is read as [N, C] = [" + std::to_string(in.n) + ", " + std::to_string(in.c)
            + "] (global pooling's output): output " + r.out.str();
    else if (in.ndim() != 2)
        r.formula
            += " on the last axis of " + in.str() + " (" + std::to_string(g.rows) + " rows): output " + r.out.str();
    r.cost.params = checkedAdd(
        checkedMul(g.inFeatures, l.out_features, "linear weight"), l.bias ? l.out_features : 0, "linear parameters");
    r.cost.flops = 2.0 * double(g.rows) * double(g.inFeatures) * double(l.out_features);
    r.cost.bytesRead = bytesOf(in.numel()) + bytesOf(r.cost.params);
    r.cost.bytesWritten = bytesOf(r.out.numel());
    return r;
}

LayerShape inferMatmul(const Matmul& l, const std::vector<Shape>& ins, const std::vector<std::string>& names)
{
    const MatmulOperands o = matmulOperands(l, ins);
    const auto label = [&](int side) {
        if (o.constantSide == side)
            return std::string("the constant");
        const size_t k = o.constantSide >= 0 ? 0 : size_t(side);
        return k < names.size() ? "\"" + names[k] + "\"" : "input " + std::to_string(k);
    };
    const std::vector<int64_t>&a = o.a, &b = o.b;
    const std::vector<int64_t> out = matmulOutputDims(a, b, label(0), label(1));
    const MatmulPlan p = makeMatmulPlan(a, false, b, false, false);
    LayerShape r;
    r.out = Shape::of(out);
    r.formula = "a " + text(a) + " · b " + text(b) + ": " + std::to_string(p.batch) + " product"
        + (p.batch == 1 ? "" : "s") + " of [" + std::to_string(p.m) + ", " + std::to_string(p.k) + "] · ["
        + std::to_string(p.k) + ", " + std::to_string(p.n) + "]" + (a.size() == 1 ? " (a read as [1, K])" : "")
        + (b.size() == 1 ? " (b read as [K, 1])" : "") + "\noutput shape = " + r.out.str();
    r.cost.flops = 2.0 * double(p.batch) * double(p.m) * double(p.n) * double(p.k);
    r.cost.bytesRead = bytesOf(Shape::of(a).numel()) + bytesOf(Shape::of(b).numel());
    r.cost.bytesWritten = bytesOf(r.out.numel());
    return r;
}

LayerShape inferGather(const Gather& l, const Shape& in)
{
    const std::vector<int64_t> data = in.dims();
    LayerShape r;
    r.out = Shape::of(gatherOutputDims(l, data));
    const int64_t axis = gatherAxis(l, int(data.size()));
    r.formula = "output shape = input " + in.str() + " with axis " + std::to_string(axis) + " (size "
        + std::to_string(data[size_t(axis)]) + ") replaced by the indices' shape " + text(l.indices_shape) + " = "
        + r.out.str();
    r.cost.bytesRead = bytesOf(r.out.numel()) + 8.0 * double(l.indices.size());
    r.cost.bytesWritten = bytesOf(r.out.numel());
    return r;
}

} // namespace convscope
