// The element-wise tensor-maths kinds of issue 30 (gelu, softplus, mish, unary: compute/layer_spec.h), written once for
// the CPU ops and the CUDA kernels (the functions are __host__ __device__ under nvcc), in the precision of their
// argument type: double in cpu.direct, float in the fast CPU path and on the GPU. Every kind of these is one plain
// `MathFn` and up to two numbers, so a kernel takes it by value and every backend's dispatch is one branch for the four
// kinds (`isElementwiseMathKind<T>`).
#pragma once

#include "compute/layer_spec.h"

#include <cmath>
#include <type_traits>

#if defined(__CUDACC__)
#define CONVSCOPE_MATH_HD __host__ __device__
#else
#define CONVSCOPE_MATH_HD
#endif

namespace convscope {

template <typename T>
inline constexpr bool isElementwiseMathKind
    = std::is_same_v<T, GELU> || std::is_same_v<T, Softplus> || std::is_same_v<T, Mish> || std::is_same_v<T, Unary>;

enum class MathFn { GeluErf, GeluTanh, Softplus, Mish, Exp, Log, Sqrt, Reciprocal, Neg, Abs, Erf };

struct MathOp {
    MathFn fn = MathFn::Exp;
    double a = 0, b = 0; // softplus: beta, threshold
};

// The op of a kind of the four (any other spec does not compile).
template <typename T> inline MathOp mathOpOf(const T& l)
{
    if constexpr (std::is_same_v<T, GELU>)
        return { l.tanh_approximation ? MathFn::GeluTanh : MathFn::GeluErf, 0, 0 };
    else if constexpr (std::is_same_v<T, Softplus>)
        return { MathFn::Softplus, l.beta, l.threshold };
    else if constexpr (std::is_same_v<T, Mish>)
        return { MathFn::Mish, 0, 0 };
    else {
        static_assert(std::is_same_v<T, Unary>, "mathOpOf: not an element-wise maths kind");
        switch (l.op) {
        case Unary::Op::Exp:
            return { MathFn::Exp, 0, 0 };
        case Unary::Op::Log:
            return { MathFn::Log, 0, 0 };
        case Unary::Op::Sqrt:
            return { MathFn::Sqrt, 0, 0 };
        case Unary::Op::Reciprocal:
            return { MathFn::Reciprocal, 0, 0 };
        case Unary::Op::Neg:
            return { MathFn::Neg, 0, 0 };
        case Unary::Op::Abs:
            return { MathFn::Abs, 0, 0 };
        case Unary::Op::Erf:
            return { MathFn::Erf, 0, 0 };
        }
        return { MathFn::Exp, 0, 0 };
    }
}

// PyTorch's softplus: x where β·x > threshold, else log1p(e^(β·x)) / β.
template <typename Real> CONVSCOPE_MATH_HD inline Real softplusOf(Real x, Real beta, Real threshold)
{
    const Real bx = beta * x;
    return bx > threshold ? x : log1p(exp(bx)) / beta;
}

// f(x) for one op, PyTorch's formulas (aten's GeluKernel, Softplus, Mish).
template <typename Real> CONVSCOPE_MATH_HD inline Real applyMath(MathFn fn, Real a, Real b, Real x)
{
    switch (fn) {
    case MathFn::GeluErf:
        return x * Real(0.5) * (Real(1) + erf(x * Real(0.70710678118654752440)));
    case MathFn::GeluTanh: {
        const Real inner = Real(0.79788456080286535588) * (x + Real(0.044715) * x * x * x);
        return Real(0.5) * x * (Real(1) + tanh(inner));
    }
    case MathFn::Softplus:
        return softplusOf(x, a, b);
    case MathFn::Mish:
        return x * tanh(log1p(exp(x))); // aten's mish: no threshold
    case MathFn::Exp:
        return exp(x);
    case MathFn::Log:
        return log(x);
    case MathFn::Sqrt:
        return sqrt(x);
    case MathFn::Reciprocal:
        return Real(1) / x;
    case MathFn::Neg:
        return -x;
    case MathFn::Abs:
        return fabs(x);
    case MathFn::Erf:
        return erf(x);
    }
    return x;
}

// df/dx at x (PyTorch autograd's formulas; y = f(x) where it is cheaper). Used by the CPU training backward.
template <typename Real> inline Real mathDerivative(MathFn fn, Real a, Real b, Real x, Real y)
{
    using std::erf, std::exp, std::sqrt, std::tanh, std::fabs;
    switch (fn) {
    case MathFn::GeluErf: {
        const Real cdf = Real(0.5) * (Real(1) + erf(x * Real(0.70710678118654752440)));
        const Real pdf = exp(Real(-0.5) * x * x) * Real(0.39894228040143267794);
        return cdf + x * pdf;
    }
    case MathFn::GeluTanh: {
        const Real k = Real(0.79788456080286535588), c = Real(0.044715);
        const Real inner = k * (x + c * x * x * x);
        const Real t = tanh(inner);
        const Real left = Real(0.5) * x, right = Real(1) + t;
        const Real leftDerivative = Real(0.5) * right;
        const Real rightDerivative = left * (Real(1) - t * t) * k * (Real(1) + Real(3) * c * x * x);
        return leftDerivative + rightDerivative;
    }
    case MathFn::Softplus: {
        // PyTorch: z = e^(β·x); β·x > threshold ? 1 : z / (z + 1).
        const Real bx = a * x;
        if (bx > b)
            return Real(1);
        const Real z = exp(bx);
        return z / (z + Real(1));
    }
    case MathFn::Mish: {
        // PyTorch: sigmoid(x)·x·(1 − tanh²(softplus(x))) + tanh(softplus(x)).
        const Real sig = Real(1) / (Real(1) + exp(-x));
        const Real t = tanh(std::log1p(exp(x)));
        return t + x * sig * (Real(1) - t * t);
    }
    case MathFn::Exp:
        return y;
    case MathFn::Log:
        return Real(1) / x;
    case MathFn::Sqrt:
        return Real(1) / (Real(2) * y);
    case MathFn::Reciprocal:
        return -y * y;
    case MathFn::Neg:
        return Real(-1);
    case MathFn::Abs: // sign(x): 0 at 0, as torch.abs's backward
        return x > Real(0) ? Real(1) : (x < Real(0) ? Real(-1) : Real(0));
    case MathFn::Erf:
        return Real(1.12837916709551257390) * exp(-x * x);
    }
    return Real(1);
}

} // namespace convscope
