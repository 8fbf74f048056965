// ONNX's normalization operators as the normalization kinds (compute/normalization.h), rows of the operator table:
// LayerNormalization (opset 17: axis, epsilon, Scale, optional B; stash_type is the precision of the statistics, and
// ConvScope's are FP32 or better either way) → layer_norm over the axes from `axis` on; InstanceNormalization (6:
// scale and B per channel, epsilon) → instance_norm with affine; GroupNormalization (18: scale and bias per GROUP, each
// expanded to the group's channels; 21: per channel) → group_norm with affine. Scale and bias must be constants (the
// conformance suite binds its inputs as such); a constant that broadcasts (one value) is expanded.
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"
#include "compute/normalization.h"

#include <algorithm>

namespace convscope::onnx::convert {

namespace {
    using Node = ::onnx::NodeProto;

    // Input k of the node as `count` parameter values: `count` of them (any dims of that count, or `count` after
    // leading ones) or one broadcast; `perGroup` > 1 expands count / perGroup values to count, each repeated.
    std::shared_ptr<const Tensor> parameter(const GraphBuilder& g, const Node& n, int k, const Attributes& a,
        const std::string& role, int64_t count, int64_t perGroup = 1)
    {
        if (n.input_size() <= k || n.input(k).empty())
            refuse(n, a, n.op_type() + " without its " + role);
        if (!g.isConstant(n.input(k)))
            refuse(n, a, n.op_type() + " whose " + role + " is computed (ConvScope needs it constant)");
        const ConstTensor& c = g.constant(n.input(k), a, role);
        if (!c.isFloat)
            a.fail(role + " must be a float tensor");
        const int64_t given = count / perGroup;
        if (c.numel() != given && c.numel() != 1)
            refuse(n, a,
                n.op_type() + " with a " + role + " of shape " + npyDimsText(c.dims) + " (" + std::to_string(given)
                    + " values needed" + (perGroup > 1 ? ", one per group" : "") + ")");
        Tensor t(Shape::nchw(count, 1, 1, 1));
        for (int64_t v = 0; v < count; ++v)
            t.data()[v] = c.numel() == 1 ? c.f[0] : c.f[size_t(v / perGroup)];
        return std::make_shared<const Tensor>(std::move(t));
    }

    double epsilonOf(const Node& n, const Attributes& a)
    {
        const double eps = a.getFloat("epsilon", 1e-5f);
        if (!(eps >= 0))
            refuse(n, a, n.op_type() + " with a negative epsilon " + std::to_string(eps));
        return eps;
    }
} // namespace

void layerNormalization(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
{
    const Shape in = g.activation(in0(n, a), a).shape;
    const std::vector<int64_t> d = in.dims();
    const int64_t rank = int64_t(d.size());
    int64_t axis = a.getInt("axis", -1);
    if (axis < -rank || axis >= rank)
        a.fail("LayerNormalization axis " + std::to_string(axis) + " is out of range for the input " + in.str());
    axis = axis < 0 ? axis + rank : axis;
    onlyFirstOutput(g, n, a);
    LayerNorm l;
    l.normalized_shape.assign(d.begin() + axis, d.end());
    l.eps = epsilonOf(n, a);
    l.bias = n.input_size() > 2 && !n.input(2).empty();
    int64_t count = 1;
    for (const int64_t v : l.normalized_shape)
        count *= v;
    auto e = std::make_shared<Layer::Embedded>();
    e->weight = parameter(g, n, 1, a, "Scale", count);
    if (l.bias)
        e->bias = parameter(g, n, 2, a, "B", count);
    g.addLayer(name, l, { n.input(0) }, n.output(0), a, e);
}

void instanceNormalization(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
{
    const Shape in = g.activation(in0(n, a), a).shape;
    if (in.ndim() < 3)
        refuse(n, a, "InstanceNormalization of " + in.str() + " (it needs [N, C, D1, ...])");
    onlyFirstOutput(g, n, a);
    const int64_t c = in.dims()[1];
    auto e = std::make_shared<Layer::Embedded>();
    e->weight = parameter(g, n, 1, a, "scale", c);
    e->bias = parameter(g, n, 2, a, "B", c);
    // Scale 1 and B 0 (PyTorch's GroupNorm export: Reshape to [N, G, −1], this, Reshape back, Mul, Add) is the same
    // layer without affine, which oneDNN's layer normalization runs.
    const auto all = [](const Tensor& t, float v) {
        return std::all_of(t.data(), t.data() + t.numel(), [v](float x) { return x == v; });
    };
    if (all(*e->weight, 1.0f) && all(*e->bias, 0.0f))
        return g.addLayer(name, InstanceNorm { epsilonOf(n, a), false }, { n.input(0) }, n.output(0), a);
    g.addLayer(name, InstanceNorm { epsilonOf(n, a), true }, { n.input(0) }, n.output(0), a, e);
}

void groupNormalization(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
{
    const Shape in = g.activation(in0(n, a), a).shape;
    if (in.ndim() < 3)
        refuse(n, a, "GroupNormalization of " + in.str() + " (it needs [N, C, D1, ...])");
    const int64_t groups = a.getInt("num_groups", 0), c = in.dims()[1];
    if (groups < 1 || c % groups != 0)
        a.fail("GroupNormalization num_groups " + std::to_string(groups) + " does not divide the " + std::to_string(c)
            + " channels of " + in.str());
    onlyFirstOutput(g, n, a);
    // Opsets 18 to 20 give scale and bias per group (the operator's first definition, deprecated in 21).
    const int64_t perGroup = g.opset < 21 ? c / groups : 1;
    auto e = std::make_shared<Layer::Embedded>();
    e->weight = parameter(g, n, 1, a, "scale", c, perGroup);
    e->bias = parameter(g, n, 2, a, "bias", c, perGroup);
    g.addLayer(name, GroupNorm { groups, epsilonOf(n, a), true }, { n.input(0) }, n.output(0), a, e);
}

} // namespace convscope::onnx::convert
