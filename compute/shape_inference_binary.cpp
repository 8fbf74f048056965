// Shape inference of the binary kind (compute/shape_inference_math.h): NumPy's broadcast of its two operands.
#include "compute/binary.h"
#include "compute/error.h"
#include "compute/shape_inference_math.h"

namespace convscope {

LayerShape inferBinary(const Binary& l, const std::vector<Shape>& ins, const std::vector<std::string>& names)
{
    const BinaryOperands o = binaryOperands(l, ins);
    const auto label = [&](int side) {
        if (o.constantSide == side)
            return std::string("the constant");
        const size_t k = o.constantSide >= 0 ? 0 : size_t(side);
        return k < names.size() ? "\"" + names[k] + "\"" : "input " + std::to_string(k);
    };
    const std::vector<int64_t> dims = broadcastDims(o.a, o.b, label(0), label(1));
    LayerShape r;
    r.out = Shape::of(dims); // any rank 1..6 (the operands' ranks are at most 6, so is their broadcast)
    const auto text = [](const std::vector<int64_t>& d) {
        std::string s = "[";
        for (size_t k = 0; k < d.size(); ++k)
            s += (k ? ", " : "") + std::to_string(d[k]);
        return s + "]";
    };
    static const char* const symbols[] = { "x + y", "x − y", "x · y", "x / y", "x ^ y", "min(x, y)", "max(x, y)" };
    r.formula = std::string("y = ") + symbols[int(l.op)] + " with x " + text(o.a)
        + (o.constantSide == 0 ? " (constant)" : "") + ", y " + text(o.b) + (o.constantSide == 1 ? " (constant)" : "")
        + "\noutput shape = NumPy broadcast " + r.out.str();
    const int64_t n = r.out.numel();
    int64_t na = 1, nb = 1;
    for (int64_t d : o.a)
        na *= d;
    for (int64_t d : o.b)
        nb *= d;
    r.cost.flops = double(n) * (l.op == Binary::Op::Pow ? 2.0 : 1.0);
    r.cost.bytesRead = 4.0 * double(na + nb);
    r.cost.bytesWritten = 4.0 * double(n);
    return r;
}

} // namespace convscope
