// The ONNX element-wise operators with constant operands, converted: Clip (relu6, relu or hardtanh by its bounds) and
// PRelu (one slope, or one per channel). Rows of the operator table (onnx_operators.cpp).
#include "compute/onnx/onnx_graph.h"

#include "compute/error.h"
#include "compute/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::onnx {

using Node = ::onnx::NodeProto;

// Clip(x, min, max) → relu6 (0, 6), relu (0, ∞) or hardtanh (any other bounds). A missing bound is ONNX's
// default, numeric_limits<float>::lowest() / max(): a hardtanh bound must be a finite number (it is written to
// the network file), and clamping a float to ±FLT_MAX changes nothing but an infinite input.
void clip(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
{
    constexpr double kLowest = std::numeric_limits<float>::lowest(), kMax = std::numeric_limits<float>::max();
    double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
    if (g.opset < 11) {
        lo = a.getFloat("min", std::numeric_limits<float>::lowest());
        hi = a.getFloat("max", std::numeric_limits<float>::max());
    } else {
        const auto bound = [&](int k, const char* what, double& v) {
            const ConstTensor* c = g.optionalConstant(n, k, a, what);
            if (!c)
                return;
            if (c->numel() != 1)
                refuse(n, a,
                    std::string("Clip with a ") + what + " of shape " + npyDimsText(c->dims)
                        + " (ONNX's bounds are scalars)");
            v = c->at(0);
        };
        bound(1, "min", lo);
        bound(2, "max", hi);
    }
    onlyFirstOutput(g, n, a);
    const auto add = [&](LayerSpec spec) { g.addLayer(name, std::move(spec), { in0(n, a) }, n.output(0), a); };
    if (lo == 0 && hi == 6)
        return add(ReLU6 {});
    if (lo == 0 && hi >= kMax)
        return add(ReLU {});
    if (std::isnan(lo) || std::isnan(hi))
        refuse(n, a, "Clip with a NaN bound");
    if (!(lo < hi))
        refuse(n, a,
            "Clip to [" + std::to_string(lo) + ", " + std::to_string(hi)
                + "]: ConvScope's hardtanh (PyTorch's) needs min below max");
    add(Hardtanh { std::max(lo, kLowest), std::min(hi, kMax) });
}

// PRelu(x, slope) with a constant slope: one element, or one per channel in any shape that broadcasts (from the
// right, numpy's rule) along dim 1 only: [C, 1, 1] or [1, C, 1, 1] for an image, [C, 1, 1, 1] for a volume, [C]
// for a flat [N, C]. Before opset 7 PRelu had no numpy broadcasting: a slope [C] is one per channel there (what
// PyTorch's exporter wrote then).
void prelu(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
{
    const Shape in = g.activation(in0(n, a), a).shape;
    if (n.input_size() < 2 || !g.isConstant(n.input(1)))
        refuse(n, a, "PRelu whose slope is not a constant (ConvScope's prelu learns one slope per channel)");
    const ConstTensor& slope = g.constant(n.input(1), a, "slope");
    if (!slope.isFloat)
        a.fail("the slope must be float");
    const std::vector<int64_t> xd = in.dims();
    const std::vector<int64_t>& sd = slope.dims;
    const bool legacyChannels = g.opset < 7 && sd.size() == 1 && sd[0] == in.c;
    bool perChannel = slope.numel() == 1 || legacyChannels || (sd.size() <= xd.size() && slope.numel() == in.c);
    if (perChannel && slope.numel() != 1 && !legacyChannels) {
        // Right-aligned against x: the dim under x's dim 1 is C, every other is 1.
        const size_t offset = xd.size() - sd.size();
        for (size_t k = 0; k < sd.size(); ++k)
            perChannel = perChannel && (sd[k] == (k + offset == 1 ? in.c : 1));
    }
    if (!perChannel || sd.size() > xd.size())
        refuse(n, a,
            "PRelu with a slope of shape " + npyDimsText(sd) + " on the input " + in.str()
                + " (ConvScope's prelu takes one slope, or one per channel: " + npyDimsText({ in.c })
                + (in.flat              ? ""
                        : in.isVolume() ? " as [C, 1, 1, 1]"
                                        : " as [C, 1, 1]")
                + ")");
    onlyFirstOutput(g, n, a);
    const int64_t count = slope.numel();
    auto e = std::make_shared<Layer::Embedded>();
    ConstTensor flat = slope;
    flat.dims = { count };
    e->weight = toTensor(flat, Shape::nchw(count, 1, 1, 1), a, "the slope");
    g.addLayer(name, PReLU { count }, { n.input(0) }, n.output(0), a, e);
}

} // namespace convscope::onnx
