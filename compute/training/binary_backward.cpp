// The binary kind's backward (issue 30), PyTorch's autograd: add 1, 1; sub 1, −1; mul b, a; div 1/b, −a/b²; pow
// b·a^(b−1) (0 where b = 0) and a^b·ln a (0 where a = 0 and b ≥ 0); minimum and maximum send the gradient to the
// operand that won and half to each on a tie. An operand that was broadcast gets the sum over the outputs it reached
// (double sums, one pass over gy).
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"
#include "compute/training/cpu_backward_ops.h"

#include <cmath>
#include <vector>

namespace convscope::cpu::grad {

namespace {
    double partial(BinaryFn fn, double a, double b, int which)
    {
        switch (fn) {
        case BinaryFn::Add:
            return 1.0;
        case BinaryFn::Sub:
            return which == 0 ? 1.0 : -1.0;
        case BinaryFn::Mul:
            return which == 0 ? b : a;
        case BinaryFn::Div:
            return which == 0 ? 1.0 / b : -a / (b * b);
        case BinaryFn::Pow:
            if (which == 0)
                return b == 0.0 ? 0.0 : b * std::pow(a, b - 1.0);
            return (a == 0.0 && b >= 0.0) ? 0.0 : double(float(std::pow(a, b))) * std::log(a);
        case BinaryFn::Min:
        case BinaryFn::Max: {
            if (std::isnan(a) || std::isnan(b)) // PyTorch's masks are false for NaN: both operands get the gradient
                return 1.0;
            if (a == b)
                return 0.5;
            const bool aWins = fn == BinaryFn::Max ? a > b : a < b;
            return (which == 0) == aWins ? 1.0 : 0.0;
        }
        }
        return 0.0;
    }
} // namespace

void binaryInput(const Tensor& gy, const float* a, const float* b, const BinaryPlan& plan, int which, Tensor& g)
{
    detail::require(gy.numel() == plan.count, "binary backward",
        "the gradient " + gy.shape().str() + " does not hold the broadcast output");
    std::vector<double> sum(size_t(g.numel()), 0.0);
    const float* gyd = gy.data();
    for (int64_t i = 0; i < plan.count; ++i) {
        int64_t oa = 0, ob = 0;
        binaryOffsets(plan, i, oa, ob);
        const int64_t at = which == 0 ? oa : ob;
        detail::require(at < g.numel(), "binary backward", "an operand offset past its gradient");
        sum[size_t(at)] += double(gyd[i]) * partial(plan.fn, double(a[oa]), double(b[ob]), which);
    }
    for (int64_t k = 0; k < g.numel(); ++k)
        g.data()[k] = static_cast<float>(sum[size_t(k)]);
}

void binaryLayerInput(const Binary& l, const LayerShape& s, const std::vector<const Tensor*>& ins,
    const Tensor* constant, size_t j, const Tensor& gy, Tensor& gx)
{
    const float *a = nullptr, *b = nullptr;
    const BinaryPlan p = binaryLayerPlan(l, s, ins, constant, a, b);
    // Input j is operand j, unless the constant comes first (then the one input is operand 1).
    const int which = !l.constant.empty() && l.constant_first ? 1 : int(j);
    binaryInput(gy, a, b, p, which, gx);
}

} // namespace convscope::cpu::grad
