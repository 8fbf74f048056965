// Element-wise activations, PyTorch's definitions:
//   ReLU       max(x, 0)                          (NaN stays NaN)
//   LeakyReLU  x > 0 ? x : negative_slope · x
//   Sigmoid    1 / (1 + e^−x)
//   Tanh       tanh(x)
//   ELU        x > 0 ? x : alpha · (e^x − 1)      (expm1, accurate near 0)
//   ReLU6      min(max(x, 0), 6)                  (hardtanh(x, 0, 6); NaN stays NaN)
//   Hardswish  x ≤ −3 ? 0 : x ≥ 3 ? x : x · (x + 3) / 6
//   Hardsigmoid x ≤ −3 ? 0 : x ≥ 3 ? 1 : x / 6 + 1/2
//   SiLU       x / (1 + e^−x)
//   Hardtanh   min(max(x, min_val), max_val)      (NaN stays NaN)
//   PReLU      x > 0 ? x : a[c] · x               (a: one slope, or one per channel; NaN stays NaN)
//   GELU, Softplus, Mish and Unary's exp, log, sqrt, reciprocal, neg, abs, erf: compute/elementwise_math.h
// The layer kind is resolved once with std::visit and the loop runs on a plain function, so the kind is not
// re-examined per element. direct:: evaluates in double on one thread; fast:: in float across OpenMP threads.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"
#include "compute/elementwise_math.h"
#include "compute/layer_kinds.h"

#include <cmath>
#include <type_traits>
#include <variant>

namespace convscope::cpu {

namespace {

    template <typename Real, typename Function> void forEach(const Tensor& in, Tensor& out, bool parallel, Function f)
    {
        const float* src = in.data();
        float* dst = out.data();
        const int64_t count = in.numel();
#pragma omp parallel for schedule(static) if (parallel && count >= detail::kMinParallelElements)
        for (int64_t i = 0; i < count; ++i)
            dst[i] = static_cast<float>(f(static_cast<Real>(src[i])));
    }

    template <typename Real> void activate(const Tensor& in, const LayerSpec& spec, Tensor& out, bool parallel)
    {
        detail::requireNonEmpty(in, out, "activation");
        detail::require(in.numel() == out.numel(), layerTypeName(spec), "output size differs from the input's");
        std::visit(
            [&](const auto& layer) {
                using Spec = std::decay_t<decltype(layer)>;
                if constexpr (std::is_same_v<Spec, ReLU>) {
                    forEach<Real>(in, out, parallel, [](Real x) { return x < Real(0) ? Real(0) : x; });
                } else if constexpr (std::is_same_v<Spec, LeakyReLU>) {
                    const Real slope = static_cast<Real>(layer.negative_slope);
                    forEach<Real>(in, out, parallel, [slope](Real x) { return x > Real(0) ? x : x * slope; });
                } else if constexpr (std::is_same_v<Spec, Sigmoid>) {
                    forEach<Real>(in, out, parallel, [](Real x) { return Real(1) / (Real(1) + std::exp(-x)); });
                } else if constexpr (std::is_same_v<Spec, Tanh>) {
                    forEach<Real>(in, out, parallel, [](Real x) { return std::tanh(x); });
                } else if constexpr (std::is_same_v<Spec, ELU>) {
                    const Real alpha = static_cast<Real>(layer.alpha);
                    forEach<Real>(
                        in, out, parallel, [alpha](Real x) { return x > Real(0) ? x : alpha * std::expm1(x); });
                } else if constexpr (std::is_same_v<Spec, ReLU6>) {
                    forEach<Real>(
                        in, out, parallel, [](Real x) { return x < Real(0) ? Real(0) : (x > Real(6) ? Real(6) : x); });
                } else if constexpr (std::is_same_v<Spec, Hardswish>) {
                    forEach<Real>(in, out, parallel, [](Real x) {
                        return x <= Real(-3) ? Real(0) : (x >= Real(3) ? x : x * (x + Real(3)) / Real(6));
                    });
                } else if constexpr (std::is_same_v<Spec, Hardsigmoid>) {
                    forEach<Real>(in, out, parallel, [](Real x) {
                        return x <= Real(-3) ? Real(0) : (x >= Real(3) ? Real(1) : x / Real(6) + Real(0.5));
                    });
                } else if constexpr (std::is_same_v<Spec, SiLU>) {
                    forEach<Real>(in, out, parallel, [](Real x) { return x / (Real(1) + std::exp(-x)); });
                } else if constexpr (std::is_same_v<Spec, Hardtanh>) {
                    // Written as two comparisons so that a NaN falls through both and stays NaN (torch.clamp).
                    const Real lo = static_cast<Real>(layer.min_val), hi = static_cast<Real>(layer.max_val);
                    forEach<Real>(in, out, parallel, [lo, hi](Real x) { return x < lo ? lo : (x > hi ? hi : x); });
                } else if constexpr (isElementwiseMathKind<Spec>) {
                    // gelu, softplus, mish, unary: compute/elementwise_math.h's formulas, shared with the GPU.
                    const MathOp op = mathOpOf(layer);
                    const Real a = static_cast<Real>(op.a), b = static_cast<Real>(op.b);
                    forEach<Real>(in, out, parallel, [op, a, b](Real x) { return applyMath<Real>(op.fn, a, b, x); });
                } else if constexpr (std::is_same_v<Spec, PReLU>) {
                    throw InputError("activation: prelu needs its slopes (cpu::prelu)");
                } else if constexpr (
                    std::is_same_v<Spec,
                        Conv2d> || std::is_same_v<Spec, ConvTranspose2d> || std::is_same_v<Spec, MaxPool2d> || std::is_same_v<Spec, AvgPool2d> || std::is_same_v<Spec, GlobalAvgPool2d> || std::is_same_v<Spec, BatchNorm2d> || std::is_same_v<Spec, Flatten> || std::is_same_v<Spec, Linear> || std::is_same_v<Spec, Softmax> || std::is_same_v<Spec, Add> || std::is_same_v<Spec, Mul> || std::is_same_v<Spec, Concat> || std::is_same_v<Spec, Pad> || std::is_same_v<Spec, Resize> || std::is_same_v<Spec, Identity> || std::is_same_v<Spec, Dropout> || std::is_same_v<Spec, ChannelShuffle> || std::is_same_v<Spec, Slice> || std::is_same_v<Spec, Reshape> || std::is_same_v<Spec, Transpose> || std::is_same_v<Spec, Binary> || isVolumeKind<Spec>) {
                    throw InputError("activation: " + layerTypeName(spec) + " is not an activation layer");
                } else if constexpr (
                    std::is_same_v<Spec,
                        LogSoftmax> || std::is_same_v<Spec, Reduce> || isNormKind<Spec> || std::is_same_v<Spec, Matmul> || std::is_same_v<Spec, Gather>) {
                    throw InputError("activation: " + layerTypeName(spec) + " is not an activation layer");
                } else {
                    static_assert(dependent_false<Spec>, "cpu activation: a layer kind is not handled");
                }
            },
            spec);
    }

    // The slope of element i is slopes[(i / plane) % channels] for a per-channel PReLU: NC(D)HW with the plane
    // D·H·W (1 for a flat [N, F] input, whose features are the channels).
    template <typename Real> void parametricRelu(const Tensor& in, const Tensor& slopes, Tensor& out, bool parallel)
    {
        detail::requireNonEmpty(in, out, "prelu");
        detail::require(in.numel() == out.numel(), "prelu", "output size differs from the input's");
        const Shape& s = in.shape();
        const int64_t channels = s.c, count = slopes.numel();
        detail::require(count == 1 || count == channels, "prelu",
            "has " + std::to_string(count) + " slopes for " + std::to_string(channels) + " channels");
        const int64_t plane = s.d * s.h * s.w;
        const int64_t images = s.n;
        const float* src = in.data();
        const float* a = slopes.data();
        float* dst = out.data();
#pragma omp parallel for collapse(2) schedule(static) if (parallel && in.numel() >= detail::kMinParallelElements)
        for (int64_t n = 0; n < images; ++n) {
            for (int64_t c = 0; c < channels; ++c) {
                const Real slope = static_cast<Real>(a[count == 1 ? 0 : c]);
                const int64_t base = (n * channels + c) * plane;
                for (int64_t k = 0; k < plane; ++k) {
                    const Real x = static_cast<Real>(src[base + k]);
                    dst[base + k] = static_cast<float>(x > Real(0) ? x : slope * x);
                }
            }
        }
    }

} // namespace

void direct::prelu(const Tensor& in, const Tensor& slopes, Tensor& out)
{
    parametricRelu<double>(in, slopes, out, false);
}

void fast::prelu(const Tensor& in, const Tensor& slopes, Tensor& out) { parametricRelu<float>(in, slopes, out, true); }

void direct::activation(const Tensor& in, const LayerSpec& spec, Tensor& out)
{
    activate<double>(in, spec, out, false);
}

void fast::activation(const Tensor& in, const LayerSpec& spec, Tensor& out) { activate<float>(in, spec, out, true); }

} // namespace convscope::cpu
