#include "compute/rounding_bound.h"

#include "compute/elementwise_math.h"
#include "compute/gather.h"
#include "compute/linear_geometry.h"
#include "compute/matmul.h"

#include "compute/layer_kinds.h"
#include "compute/normalization.h"
#include "compute/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <type_traits>
#include <variant>

namespace convscope {

namespace {
    constexpr double kFp32 = 0x1p-24;

    template <typename K> int64_t product(const K& k)
    {
        int64_t p = 1;
        for (int64_t v : k)
            p *= std::max<int64_t>(1, v);
        return p;
    }

    // Terms summed per output element, and whether they are all positive (an average, softmax's denominator).
    struct Reduction {
        int64_t k = 1;
        bool positive = false;
        bool products = false; // a convolution or GEMM: its operands are rounded to the operand format
    };

    Reduction reductionOf(const LayerSpec& spec, const LayerShape& shape)
    {
        return std::visit(
            [&](const auto& l) -> Reduction {
                using T = std::decay_t<decltype(l)>;
                const int64_t cin = std::max<int64_t>(1, shape.in.c);
                if constexpr (
                    std::is_same_v<T,
                        Conv2d> || std::is_same_v<T, Conv3d> || std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, ConvTranspose3d>)
                    return { cin / std::max<int64_t>(1, l.groups) * product(l.kernel_size), false, true };
                else if constexpr (std::is_same_v<T, Linear>)
                    return { std::max<int64_t>(1, linearRows(shape.in).inFeatures), false, true };
                else if constexpr (std::is_same_v<T, AvgPool2d> || std::is_same_v<T, AvgPool3d>)
                    return { product(l.kernel_size), true };
                else if constexpr (std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, GlobalAvgPool3d>)
                    return { std::max<int64_t>(1, shape.in.d * shape.in.h * shape.in.w), true };
                else if constexpr (isSoftmaxKind<T>)
                    return { softmaxView(shape.in, l.dim).size, true };
                else if constexpr (std::is_same_v<T, Reduce>) // max and min sum nothing
                    return l.op == Reduce::Op::Max || l.op == Reduce::Op::Min
                        ? Reduction { 1, false }
                        : Reduction { std::max<int64_t>(1, shape.in.numel() / std::max<int64_t>(1, shape.out.numel())),
                              l.op != Reduce::Op::Sum };
                else if constexpr (std::is_same_v<T, Matmul>) // a GEMM of K terms: a's last axis
                    return { std::max<int64_t>(1, matmulOperands(l, shape.ins).a.back()), false, true };
                else
                    return { 1, false };
            },
            spec);
    }
} // namespace

double operandRoundoff(MathMode mode)
{
    switch (mode) {
    case MathMode::TF32:
    case MathMode::FP16:
        return 0x1p-11;
    case MathMode::BF16:
        return 0x1p-8;
    case MathMode::FP32:
        break;
    }
    return kFp32;
}

double storageRoundoff(MathMode mode)
{
    switch (mode) {
    case MathMode::FP16:
        return 0x1p-11;
    case MathMode::BF16:
        return 0x1p-8;
    case MathMode::TF32: // TF32 stores FP32
    case MathMode::FP32:
        break;
    }
    return kFp32;
}

TensorNorm tensorNorm(const Tensor& t)
{
    TensorNorm n;
    double sum = 0;
    for (int64_t k = 0; k < t.numel(); ++k) {
        const double v = t.data()[k];
        sum += v * v;
        n.maxAbs = std::max(n.maxAbs, std::abs(v));
    }
    n.l2 = std::sqrt(sum);
    return n;
}

int64_t reductionLength(const LayerSpec& spec, const LayerShape& shape) { return reductionOf(spec, shape).k; }

namespace {
    double maxAbsOf(const std::shared_ptr<const Tensor>& t, double fallback)
    {
        if (!t || t->numel() == 0)
            return fallback;
        double m = 0;
        for (int64_t i = 0; i < t->numel(); ++i)
            m = std::max(m, std::abs(double(t->data()[i])));
        return m;
    }

    // How many windows of a pooling layer read one input element: Π ⌈kernel / stride⌉.
    template <typename K, typename S> double overlaps(const K& kernel, const S& stride)
    {
        double o = 1;
        for (size_t i = 0; i < kernel.size(); ++i)
            o *= double((std::max<int64_t>(1, kernel[i]) + std::max<int64_t>(1, stride[i]) - 1)
                / std::max<int64_t>(1, stride[i]));
        return o;
    }

    // Kinds that pass each element's relative error through unchanged (or drop the element): under the componentwise
    // model (every element's error in proportion to its value), their gain is 1, whatever they zero or clip.
    template <typename T> constexpr bool keepsRelativeError()
    {
        return std::is_same_v<T,
                   ReLU> || std::is_same_v<T, ReLU6> || std::is_same_v<T, LeakyReLU> || std::is_same_v<T, PReLU> || std::is_same_v<T, Hardtanh> || std::is_same_v<T, MaxPool2d> || std::is_same_v<T, MaxPool3d> || std::is_same_v<T, Concat> || std::is_same_v<T, Pad> || std::is_same_v<T, Identity> || std::is_same_v<T, Dropout> || std::is_same_v<T, Flatten> || std::is_same_v<T, ChannelShuffle> || std::is_same_v<T, Slice> || std::is_same_v<T, Reshape> || std::is_same_v<T, Transpose>;
    }

    bool keepsRelativeError(const LayerSpec& spec)
    {
        if (const auto* u = std::get_if<Unary>(&spec))
            return u->op == Unary::Op::Neg || u->op == Unary::Op::Abs || u->op == Unary::Op::Reciprocal
                || u->op == Unary::Op::Sqrt;
        return std::visit([](const auto& l) { return keepsRelativeError<std::decay_t<decltype(l)>>(); }, spec);
    }

    // resize is linear: ‖A‖₂ ≤ √(‖A‖₁·‖A‖∞), per axis. A row (an output) sums |w| ≤ rowSum over its taps; a column (an
    // input) is read by at most taps · ⌈out / in⌉ + taps rows. Nearest copies: each input reaches ⌈out / in⌉ + 1 rows.
    double resizeLipschitz(const Resize& l, const LayerShape& shape)
    {
        const double taps = l.mode == Resize::Mode::Nearest ? 1 : l.mode == Resize::Mode::Linear ? 2 : 4;
        const double rowSum = l.mode == Resize::Mode::Cubic ? 1 + 4 * std::abs(l.cubic_coeff_a) : 1;
        const double ins[3] = { double(shape.in.d), double(shape.in.h), double(shape.in.w) };
        const double outs[3] = { double(shape.out.d), double(shape.out.h), double(shape.out.w) };
        double g = 1;
        for (int ax = 0; ax < 3; ++ax) {
            const double column = rowSum * (taps * std::ceil(outs[ax] / std::max(1.0, ins[ax])) + taps);
            g *= std::sqrt(rowSum * column);
        }
        return g;
    }

    // gelu, softplus, mish, unary: the largest |f'|. neg, abs, reciprocal (1/(x(1+ε)) ≈ (1/x)(1−ε)) and sqrt (halves
    // it) keep each element's relative error (keepsRelativeError below), whatever their slope; exp and log have no
    // constant (e^x grows without bound, 1/x near 0): infinity, so no bound is stated after them.
    double mathLipschitz(const MathOp& op)
    {
        switch (op.fn) {
        case MathFn::GeluErf:
        case MathFn::GeluTanh:
            return 1.13; // max of Φ(x) + x·φ(x), at x = √2
        case MathFn::Softplus: // sigmoid(β·x) ≤ 1
        case MathFn::Neg:
        case MathFn::Abs:
            return 1.0;
        case MathFn::Mish:
            return 1.1; // max ≈ 1.0998
        case MathFn::Erf:
            return 1.1284; // 2/√π
        case MathFn::Exp:
        case MathFn::Log:
        case MathFn::Sqrt:
        case MathFn::Reciprocal:
            return std::numeric_limits<double>::infinity();
        }
        return std::numeric_limits<double>::infinity();
    }

    // gather copies each input element to as many outputs as its index is repeated: ‖y‖₂ ≤ √(most repeats) · ‖x‖₂.
    double gatherLipschitz(const Gather& l, const LayerShape& shape)
    {
        std::map<int64_t, int64_t> repeats;
        int64_t most = 1;
        for (const int64_t i : gatherWrappedIndices(l, shape.in.dims()))
            most = std::max(most, ++repeats[i]);
        return std::sqrt(double(most));
    }

    // L: the layer's Lipschitz constant in the L2 norm (see the header).
    double lipschitz(const Layer& layer, const LayerShape& shape)
    {
        return std::visit(
            [&](const auto& l) -> double {
                using T = std::decay_t<decltype(l)>;
                if constexpr (std::is_same_v<T, Sigmoid>)
                    return 0.25;
                else if constexpr (std::is_same_v<T, Hardsigmoid>)
                    return 1.0 / 6.0;
                else if constexpr (std::is_same_v<T, Hardswish>)
                    return 1.5;
                else if constexpr (std::is_same_v<T, SiLU>)
                    return 1.1;
                else if constexpr (std::is_same_v<T, ELU>)
                    return std::max(1.0, std::abs(l.alpha));
                else if constexpr (std::is_same_v<T, LeakyReLU>)
                    return std::max(1.0, std::abs(l.negative_slope));
                else if constexpr (std::is_same_v<T, PReLU>)
                    return std::max(1.0, maxAbsOf(layer.weight, 1.0));
                else if constexpr (std::is_same_v<T, Softmax>)
                    return 0.5;
                else if constexpr (std::is_same_v<T, LogSoftmax>) // ‖I − 1·pᵀ‖₂ ≤ 1 + √n along the axis
                    return 1.0 + std::sqrt(double(softmaxView(shape.in, l.dim).size));
                else if constexpr (std::is_same_v<T, Reduce>) { // per output: mean 1/√k, sum √k, max, min, l2 1
                    const double k
                        = double(std::max<int64_t>(1, shape.in.numel() / std::max<int64_t>(1, shape.out.numel())));
                    return l.op == Reduce::Op::Mean ? 1.0 / std::sqrt(k) : l.op == Reduce::Op::Sum ? std::sqrt(k) : 1.0;
                } else if constexpr (isElementwiseMathKind<T>)
                    return mathLipschitz(mathOpOf(l));
                else if constexpr (std::is_same_v<T, Binary>) // add, sub, min, max: the inputs' norms summed; a
                    // product, quotient or power has no constant without the values' range: no bound after it
                    return l.op == Binary::Op::Add || l.op == Binary::Op::Sub || l.op == Binary::Op::Min
                            || l.op == Binary::Op::Max
                        ? 1.0
                        : std::numeric_limits<double>::infinity();
                else if constexpr (std::is_same_v<T, Matmul>) // a product of two activations: no constant
                    // without the values' range (as binary mul), so no bound is stated after it
                    return std::numeric_limits<double>::infinity();
                else if constexpr (std::is_same_v<T, Gather>) // a copy; an element read r times counts √r times
                    return gatherLipschitz(l, shape);
                else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                    if (!layer.runningVar)
                        return 1.0;
                    double g = 0;
                    for (int64_t c = 0; c < layer.runningVar->numel(); ++c) {
                        const double gamma = layer.weight ? std::abs(double(layer.weight->data()[c])) : 1.0;
                        g = std::max(g, gamma / std::sqrt(double(layer.runningVar->data()[c]) + l.eps));
                    }
                    return g;
                } else if constexpr (std::is_same_v<T, AvgPool2d> || std::is_same_v<T, AvgPool3d>) {
                    // ‖A‖₂ ≤ √(‖A‖₁·‖A‖∞): rows sum to at most k/divisor, columns to overlaps/divisor.
                    const double k = double(product(l.kernel_size));
                    const double divisor
                        = l.divisor_override && *l.divisor_override > 0 ? double(*l.divisor_override) : k;
                    return std::sqrt((k / divisor) * (overlaps(l.kernel_size, l.effectiveStride()) / divisor));
                } else if constexpr (std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, GlobalAvgPool3d>)
                    return 1.0 / std::sqrt(double(std::max<int64_t>(1, shape.in.d * shape.in.h * shape.in.w)));
                else if constexpr (std::is_same_v<T, Resize>)
                    return resizeLipschitz(l, shape);
                else if constexpr (isNormKind<T>) // 1/σ of the data itself: no constant without its values
                    return std::numeric_limits<double>::infinity();
                else if constexpr (std::is_same_v<T, Tanh> || std::is_same_v<T, Add> || std::is_same_v<T, Mul>)
                    return 1.0; // |tanh'| <= 1; add and mul: the inputs' norms are summed in roundingBounds
                else if constexpr (keepsRelativeError<T>() || layerKindOf<T>().family == KindFamily::Convolution
                    || layerKindOf<T>().family == KindFamily::FullyConnected)
                    return 1.0; // never asked: their gain is 1 (see the header)
                else
                    static_assert(dependent_false<T>, "rounding bound: a new kind needs its Lipschitz constant here");
            },
            layer.spec);
    }
} // namespace

std::vector<double> roundingBounds(
    MathMode mode, const Network& net, const ShapeReport& shapes, const ReferenceNorms& norms)
{
    std::vector<double> bounds(net.layers.size(), 0.0);
    if (mode == MathMode::FP32)
        return bounds;
    const double u = operandRoundoff(mode), s = storageRoundoff(mode);
    // A broadcast input (a gate [N, C, 1, 1] against [N, C, H, W]) counts once for every output it reaches.
    auto normOf = [&](int src, const Shape& out) -> TensorNorm {
        const Shape& shape = src < 0 ? shapes.input : shapes.layers[size_t(src)].out;
        TensorNorm n = src < 0                   ? norms.input
            : size_t(src) < norms.outputs.size() ? norms.outputs[size_t(src)]
                                                 : TensorNorm {};
        const double copies = double(out.numel()) / double(std::max<int64_t>(1, shape.numel()));
        n.l2 *= std::sqrt(std::max(1.0, copies));
        return n;
    };
    for (size_t i = 0; i < net.layers.size() && i < shapes.layers.size(); ++i) {
        const LayerShape& shape = shapes.layers[i];
        const Layer& layer = net.layers[i];
        std::vector<int> sources = shape.sources;
        if (sources.empty())
            sources.push_back(int(i) - 1);
        double in = 0;
        for (int src : sources)
            in = std::max(in, src < 0 ? s : bounds[size_t(src)]);
        const Reduction r = reductionOf(layer.spec, shape);
        const double k = double(r.k);
        const double gamma = k * kFp32 / std::max(1e-30, 1.0 - k * kFp32);
        double local = s; // the output's rounding
        if (r.products)
            local = (2 * u + gamma) * std::sqrt(k) + s;
        else if (r.positive)
            local = gamma + s; // positive terms: no cancellation
        // The gain of the input error: 1 for a convolution or GEMM (see the header); L·Σ‖x‖/‖y‖ otherwise, and for a
        // product of inputs each factor scales the other's error by its largest magnitude.
        double gain = 1;
        const TensorNorm out = i < norms.outputs.size() ? norms.outputs[i] : TensorNorm {};
        if (!r.products && out.l2 > 0) {
            double through = 0;
            if (std::holds_alternative<Mul>(layer.spec)) {
                double prodMax = 1;
                for (int src : sources)
                    prodMax *= std::max(1e-30, normOf(src, shape.out).maxAbs);
                for (int src : sources) {
                    const TensorNorm n = normOf(src, shape.out);
                    through += n.l2 * prodMax / std::max(1e-30, n.maxAbs);
                }
            } else {
                for (int src : sources)
                    through += normOf(src, shape.out).l2;
                if (std::holds_alternative<Concat>(layer.spec))
                    through = out.l2; // the inputs' errors side by side: no mixing
            }
            const double worst = lipschitz(layer, shape) * through / out.l2;
            // Kinds that pass or drop elements keep the relative error on average; on few elements the kept ones'
            // share of the error varies (about 1/√n: a ReLU of 12 elements after a 1×1 convolution, onednn bf16,
            // cross-backend seed 3262985402, was 1.39× its bound), so three standard deviations of that, never more
            // than the worst case L·‖x‖/‖y‖ and never less than 1 (an overlapping max pool repeats elements, so its
            // ‖y‖ can exceed ‖x‖ while each element keeps its relative error).
            gain = keepsRelativeError(layer.spec)
                ? std::max(1.0, std::min(worst, 1.0 + 3.0 / std::sqrt(double(std::max<int64_t>(1, shape.out.numel())))))
                : worst;
        }
        bounds[i] = local + gain * in;
    }
    return bounds;
}

} // namespace convscope
