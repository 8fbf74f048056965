// ONNX's element-wise operators of two operands as the binary kind (issue 30): Sub, Div, Pow, Min and Max always, Add
// and Mul where the add and mul kinds (equal shapes; mul's [N, C, 1, 1] gate) do not fit — a constant operand (an
// initializer or a folded Constant) becomes the layer's constant, with its dims and its side, and two activations of
// broadcastable shapes a two-input layer. NumPy's broadcasting from opset 7 (Min and Max from 8); the older operators'
// `axis` broadcasting is refused.
#include "compute/onnx/onnx_converters.h"

#include "compute/binary.h"
#include "compute/error.h"

namespace convscope::onnx::convert {

void binary(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a, Binary::Op op)
{
    onlyFirstOutput(g, n, a);
    if (n.input_size() != 2)
        refuse(
            n, a, n.op_type() + " of " + std::to_string(n.input_size()) + " inputs (ConvScope's binary layer reads 2)");
    if (a.has("axis") || (a.getInt("broadcast", 0) != 0 && g.opset < 7))
        refuse(n, a, n.op_type() + " with the legacy broadcast attributes of opsets before 7");
    const std::string &x = n.input(0), &y = n.input(1);
    const bool xc = g.isConstant(x), yc = g.isConstant(y);
    Binary l;
    l.op = op;
    if (xc && yc)
        refuse(n, a, n.op_type() + " of two constants that were not folded");
    if (!xc && !yc) {
        (void)g.activation(x, a);
        (void)g.activation(y, a);
        g.addLayer(name, l, { x, y }, n.output(0), a);
        return;
    }
    const ConstTensor& c = g.constant(xc ? x : y, a, "constant operand");
    l.constant.reserve(size_t(c.numel()));
    for (int64_t k = 0; k < c.numel(); ++k)
        l.constant.push_back(static_cast<float>(c.at(size_t(k))));
    l.constant_shape = c.dims;
    l.constant_first = xc;
    if (l.constant_shape.empty())
        l.constant_shape = { 1 };
    g.addLayer(name, l, { xc ? y : x }, n.output(0), a);
}

void binaryChain(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a,
    Binary::Op op, double scale)
{
    // Max, Min, Sum and Mean of any count are commutative: start from the first activation and fold every other input
    // in, in order, as a two-input layer or with a constant operand; Mean divides the sum by the count at the end.
    onlyFirstOutput(g, n, a);
    std::string current;
    for (const auto& in : n.input())
        if (current.empty() && g.isActivation(in))
            current = in;
    if (current.empty())
        refuse(n, a, n.op_type() + " of constants only, which were not folded");
    std::vector<int> others; // every input but the first activation, in order
    for (int k = 0, skipped = 0; k < n.input_size(); ++k) {
        if (!skipped && n.input(k) == current)
            skipped = 1;
        else
            others.push_back(k);
    }
    int step = 0;
    const auto add = [&](Binary l, const std::vector<std::string>& ins, bool last) {
        const std::string out = last ? n.output(0) : n.output(0) + "#" + std::to_string(step);
        g.addLayer(step == 0 ? name : name + "/" + std::to_string(step), std::move(l), ins, out, a);
        ++step;
        current = out;
    };
    for (size_t j = 0; j < others.size(); ++j) {
        const int k = others[j];
        const std::string& in = n.input(k);
        Binary l;
        l.op = op;
        const bool last = j + 1 == others.size() && scale == 1.0;
        if (g.isActivation(in)) {
            add(l, { current, in }, last);
            continue;
        }
        const ConstTensor& c = g.constant(in, a, "input " + std::to_string(k));
        for (int64_t e = 0; e < c.numel(); ++e)
            l.constant.push_back(static_cast<float>(c.at(size_t(e))));
        l.constant_shape = c.dims.empty() ? std::vector<int64_t> { 1 } : c.dims;
        add(l, { current }, last);
    }
    if (scale != 1.0) {
        Binary d;
        d.op = Binary::Op::Div;
        d.constant = { static_cast<float>(scale) }; // the count of inputs
        d.constant_shape = { 1 };
        add(d, { current }, true);
    } else if (step == 0) {
        g.addLayer(name, Identity {}, { current }, n.output(0), a);
    }
}

} // namespace convscope::onnx::convert
