#include "compute/rounding_bound.h"

#include "compute/layer_kinds.h"

#include <algorithm>
#include <cmath>
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
                if constexpr (std::is_same_v<T, Conv2d> || std::is_same_v<T, Conv3d>
                    || std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, ConvTranspose3d>)
                    return { cin / std::max<int64_t>(1, l.groups) * product(l.kernel_size), false, true };
                else if constexpr (std::is_same_v<T, Linear>)
                    return { std::max<int64_t>(1, shape.in.numel() / std::max<int64_t>(1, shape.in.n)), false, true };
                else if constexpr (std::is_same_v<T, AvgPool2d> || std::is_same_v<T, AvgPool3d>)
                    return { product(l.kernel_size), true };
                else if constexpr (std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, GlobalAvgPool3d>)
                    return { std::max<int64_t>(1, shape.in.d * shape.in.h * shape.in.w), true };
                else if constexpr (std::is_same_v<T, Softmax>)
                    return { cin, true };
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

int64_t reductionLength(const LayerSpec& spec, const LayerShape& shape) { return reductionOf(spec, shape).k; }

std::vector<double> roundingBounds(MathMode mode, const Network& net, const ShapeReport& shapes)
{
    std::vector<double> bounds(net.layers.size(), 0.0);
    if (mode == MathMode::FP32)
        return bounds;
    const double u = operandRoundoff(mode), s = storageRoundoff(mode);
    const double inputBound = s; // the input's conversion
    for (size_t i = 0; i < net.layers.size() && i < shapes.layers.size(); ++i) {
        const LayerShape& shape = shapes.layers[i];
        double in = 0;
        for (int src : shape.sources)
            in = std::max(in, src < 0 ? inputBound : bounds[size_t(src)]);
        if (shape.sources.empty())
            in = i == 0 ? inputBound : bounds[i - 1];
        const Reduction r = reductionOf(net.layers[i].spec, shape);
        const double k = double(r.k);
        const double gamma = k * kFp32 / std::max(1e-30, 1.0 - k * kFp32);
        double local = s; // the output's rounding
        if (r.products)
            local = (2 * u + gamma) * std::sqrt(k) + s;
        else if (r.positive)
            local = gamma + s; // positive terms: no cancellation, operands already in storage
        bounds[i] = in + local;
    }
    return bounds;
}

} // namespace convscope
