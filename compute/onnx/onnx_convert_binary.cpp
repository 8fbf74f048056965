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

} // namespace convscope::onnx::convert
