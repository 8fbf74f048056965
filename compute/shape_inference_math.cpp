// Shape inference of the tensor-maths kinds (compute/shape_inference_math.h).
#include "compute/shape_inference_math.h"

#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"

#include <cmath>
#include <sstream>
#include <type_traits>
#include <variant>

namespace convscope {

namespace {
    std::string numberText(double v)
    {
        std::ostringstream s;
        s << v;
        return s.str();
    }

    // The formula shown for each op and its FLOPs per element (a transcendental function counted as one).
    struct MathFormula {
        std::string text;
        double flops;
    };

    MathFormula formulaOf(const MathOp& op)
    {
        switch (op.fn) {
        case MathFn::GeluErf:
            return { "y = x/2 · (1 + erf(x/√2))", 5 };
        case MathFn::GeluTanh:
            return { "y = x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))", 9 };
        case MathFn::Softplus:
            return { "y = β·x > " + numberText(op.b) + " ? x : log(1 + e^(β·x)) / β, β = " + numberText(op.a), 5 };
        case MathFn::Mish:
            return { "y = x · tanh(log(1 + e^x))", 5 };
        case MathFn::Exp:
            return { "y = e^x", 1 };
        case MathFn::Log:
            return { "y = ln x", 1 };
        case MathFn::Sqrt:
            return { "y = √x", 1 };
        case MathFn::Reciprocal:
            return { "y = 1 / x", 1 };
        case MathFn::Neg:
            return { "y = −x", 1 };
        case MathFn::Abs:
            return { "y = |x|", 1 };
        case MathFn::Erf:
            return { "y = erf(x)", 1 };
        }
        return { "", 1 };
    }
} // namespace

LayerShape inferElementwiseMath(const Shape& in, const LayerSpec& spec)
{
    const MathOp op = std::visit(
        [](const auto& l) -> MathOp {
            using T = std::decay_t<decltype(l)>;
            if constexpr (isElementwiseMathKind<T>)
                return mathOpOf(l);
            else
                throw InputError(layerTypeName(LayerSpec { l }) + " is not an element-wise maths kind");
        },
        spec);
    if (op.fn == MathFn::Softplus && (!(op.a != 0.0) || !std::isfinite(op.a)))
        throw InputError("softplus needs a finite beta other than 0, got " + numberText(op.a));
    if (op.fn == MathFn::Softplus && std::isnan(op.b))
        throw InputError("softplus needs a threshold that is a number, got nan");
    const MathFormula f = formulaOf(op);
    LayerShape r;
    r.out = in;
    r.formula = "output shape = input shape " + in.str() + "\n" + f.text;
    r.cost.flops = f.flops * double(in.numel());
    r.cost.bytesRead = double(in.numel()) * 4.0;
    r.cost.bytesWritten = double(in.numel()) * 4.0;
    return r;
}

} // namespace convscope
