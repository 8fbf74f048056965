// Batch norm in training mode (forward and backward), the activations' backward and PReLU's, as PyTorch's autograd
// computes them (aten/src/ATen/native: batch_norm_cpu_update_stats / batch_norm_backward_cpu, threshold_backward,
// leaky_relu_backward, elu_backward, hardtanh_backward, hardswish_backward, hardsigmoid_backward, silu_backward,
// sigmoid_backward and tanh_backward from the result). Sums in double.
#include "compute/training/batch_norm_fast.h"
#include "compute/training/cpu_backward_ops.h"

#include "compute/cpu/op_common.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"

#include <cmath>

namespace convscope::cpu::grad {

void batchNorm2dTrainForward(const Tensor& x, const Tensor* weight, const Tensor* bias, double eps, double momentum,
    Tensor& runningMean, Tensor& runningVar, Tensor& y, BatchStats& stats, bool parallel)
{
    const Planes p(x.shape());
    const int64_t count = p.batch * p.area;
    detail::require(count > 1, "batch norm (training)",
        "expected more than 1 value per channel when training, got input " + x.shape().str()
            + " (PyTorch refuses it too)");
    detail::requireVector(&runningMean, p.channels, "batch norm (training)", "running_mean");
    detail::requireVector(&runningVar, p.channels, "batch norm (training)", "running_var");
    detail::requireVector(weight, p.channels, "batch norm (training)", "weight");
    detail::requireVector(bias, p.channels, "batch norm (training)", "bias");
    stats.sumsOf[0] = stats.sumsOf[1] = nullptr; // new statistics: no backward's sums are kept
    stats.gradientSums.clear();
    if (parallel) {
        fast_bn::trainForward(p, x.data(), weight ? weight->data() : nullptr, bias ? bias->data() : nullptr, eps,
            momentum, runningMean.data(), runningVar.data(), y.data(), stats);
        return;
    }
    stats.mean.assign(size_t(p.channels), 0.0);
    stats.invstd.assign(size_t(p.channels), 0.0);
    for (int64_t c = 0; c < p.channels; ++c) {
        double sum = 0;
        for (int64_t n = 0; n < p.batch; ++n)
            sum += detail::sumInDouble(x.data() + (n * p.channels + c) * p.area, p.area);
        const double mean = sum / double(count);
        double squares = 0;
        for (int64_t n = 0; n < p.batch; ++n) {
            const float* src = x.data() + (n * p.channels + c) * p.area;
            for (int64_t i = 0; i < p.area; ++i)
                squares += (src[i] - mean) * (src[i] - mean);
        }
        const double var = squares / double(count);
        const double invstd = 1.0 / std::sqrt(var + eps);
        stats.mean[size_t(c)] = mean;
        stats.invstd[size_t(c)] = invstd;
        const double w = weight ? weight->data()[c] : 1.0, b = bias ? bias->data()[c] : 0.0;
        for (int64_t n = 0; n < p.batch; ++n) {
            const float* src = x.data() + (n * p.channels + c) * p.area;
            float* dst = y.data() + (n * p.channels + c) * p.area;
            for (int64_t i = 0; i < p.area; ++i)
                dst[i] = static_cast<float>((src[i] - mean) * invstd * w + b);
        }
        float& rm = runningMean.data()[c];
        float& rv = runningVar.data()[c];
        rm = static_cast<float>((1 - momentum) * rm + momentum * mean);
        rv = static_cast<float>((1 - momentum) * rv + momentum * squares / double(count - 1));
    }
}

namespace {
    // Σ gy and Σ gy·x̂ of channel c.
    std::pair<double, double> channelSums(const Tensor& gy, const Tensor& x, const BatchStats& stats, int64_t c)
    {
        const Planes p(x.shape());
        double sum = 0, dot = 0;
        const double mean = stats.mean[size_t(c)], invstd = stats.invstd[size_t(c)];
        for (int64_t n = 0; n < p.batch; ++n) {
            const float* g = gy.data() + (n * p.channels + c) * p.area;
            const float* src = x.data() + (n * p.channels + c) * p.area;
            for (int64_t i = 0; i < p.area; ++i) {
                sum += g[i];
                dot += double(g[i]) * (src[i] - mean) * invstd;
            }
        }
        return { sum, dot };
    }
} // namespace

void batchNorm2dData(
    const Tensor& gy, const Tensor& x, const Tensor* weight, BatchStats& stats, Tensor& gx, bool parallel)
{
    const Planes p(x.shape());
    if (parallel) {
        // The sums stay for the weights' gradient of the same backward (batchNorm2dWeights).
        stats.gradientSums = fast_bn::gradientSums(p, gy.data(), x.data(), stats);
        stats.sumsOf[0] = gy.data();
        stats.sumsOf[1] = x.data();
        fast_bn::data(p, gy.data(), x.data(), weight ? weight->data() : nullptr, stats, stats.gradientSums, gx.data());
        return;
    }
    const double count = double(p.batch * p.area);
    for (int64_t c = 0; c < p.channels; ++c) {
        const auto [sum, dot] = channelSums(gy, x, stats, c);
        const double mean = stats.mean[size_t(c)], invstd = stats.invstd[size_t(c)];
        const double scale = (weight ? weight->data()[c] : 1.0) * invstd;
        for (int64_t n = 0; n < p.batch; ++n) {
            const int64_t base = (n * p.channels + c) * p.area;
            for (int64_t i = 0; i < p.area; ++i) {
                const double xhat = (x.data()[base + i] - mean) * invstd;
                gx.data()[base + i]
                    = static_cast<float>(scale * (gy.data()[base + i] - sum / count - xhat * dot / count));
            }
        }
    }
}

void batchNorm2dWeights(const Tensor& gy, const Tensor& x, BatchStats& stats, Tensor& gw, Tensor& gb, bool parallel)
{
    const Planes p(x.shape());
    if (parallel) {
        // batchNorm2dData's sums of this gy and x when it ran just before (the backward-data phase), else summed now.
        const bool kept = stats.sumsOf[0] == gy.data() && stats.sumsOf[1] == x.data()
            && stats.gradientSums.size() == size_t(2 * p.channels);
        const std::vector<double> sums
            = kept ? std::move(stats.gradientSums) : fast_bn::gradientSums(p, gy.data(), x.data(), stats);
        stats.sumsOf[0] = stats.sumsOf[1] = nullptr;
        stats.gradientSums.clear();
        for (int64_t c = 0; c < p.channels; ++c) {
            gw.data()[c] = static_cast<float>(sums[size_t(2 * c + 1)]);
            gb.data()[c] = static_cast<float>(sums[size_t(2 * c)]);
        }
        return;
    }
    for (int64_t c = 0; c < p.channels; ++c) {
        const auto [sum, dot] = channelSums(gy, x, stats, c);
        gw.data()[c] = static_cast<float>(dot);
        gb.data()[c] = static_cast<float>(sum);
    }
}

void activation(const Tensor& gy, const Tensor& x, const LayerSpec& spec, Tensor& gx, bool parallel)
{
    detail::require(gy.numel() == x.numel() && gx.numel() == x.numel(), "activation backward",
        "the gradient " + gy.shape().str() + " does not match the input " + x.shape().str());
    const int64_t n = x.numel();
    const float* g = gy.data();
    const float* in = x.data();
    float* out = gx.data();
    const bool threads = parallel && n >= detail::kMinParallelElements;
    auto each = [&](auto derivative) {
#pragma omp parallel for schedule(static) if (threads)
        for (int64_t i = 0; i < n; ++i)
            out[i] = static_cast<float>(derivative(double(in[i])) * double(g[i]));
    };
    std::visit(
        [&](const auto& s) {
            using S = std::decay_t<decltype(s)>;
            if constexpr (std::is_same_v<S, ReLU>) {
                each([](double v) { return v > 0 ? 1.0 : 0.0; });
            } else if constexpr (std::is_same_v<S, LeakyReLU>) {
                each([&](double v) { return v > 0 ? 1.0 : s.negative_slope; });
            } else if constexpr (std::is_same_v<S, Sigmoid>) {
                // PyTorch differentiates from the float result y: gy · (1 − y) · y.
                each([](double v) {
                    const double y = double(static_cast<float>(1.0 / (1.0 + std::exp(-v))));
                    return (1.0 - y) * y;
                });
            } else if constexpr (std::is_same_v<S, Tanh>) {
                each([](double v) {
                    const double y = double(static_cast<float>(std::tanh(v)));
                    return 1.0 - y * y;
                });
            } else if constexpr (std::is_same_v<S, ELU>) {
                each([&](double v) { return v <= 0 ? s.alpha * std::exp(v) : 1.0; });
            } else if constexpr (std::is_same_v<S, ReLU6>) {
                each([](double v) { return (v <= 0 || v >= 6) ? 0.0 : 1.0; });
            } else if constexpr (std::is_same_v<S, Hardtanh>) {
                each([&](double v) { return (v <= s.min_val || v >= s.max_val) ? 0.0 : 1.0; });
            } else if constexpr (std::is_same_v<S, Hardsigmoid>) {
                each([](double v) { return (v > -3 && v < 3) ? 1.0 / 6.0 : 0.0; });
            } else if constexpr (std::is_same_v<S, Hardswish>) {
                each([](double v) { return v < -3 ? 0.0 : v <= 3 ? v / 3 + 0.5 : 1.0; });
            } else if constexpr (std::is_same_v<S, SiLU>) {
                each([](double v) {
                    const double sg = 1.0 / (1.0 + std::exp(-v));
                    return sg * (1 + v * (1 - sg));
                });
            } else if constexpr (isElementwiseMathKind<S>) {
                // gelu, softplus, mish, unary: autograd's formulas (compute/elementwise_math.h); exp, sqrt and
                // reciprocal differentiate from the float result y, as PyTorch does.
                const MathOp op = mathOpOf(s);
                each([op](double v) {
                    const double y = double(static_cast<float>(applyMath<double>(op.fn, op.a, op.b, v)));
                    return mathDerivative<double>(op.fn, op.a, op.b, v, y);
                });
            } else {
                throw InputError(std::string("activation backward: ") + layerKind(spec).type
                    + " is not an activation without weights");
            }
        },
        spec);
}

void preluData(const Tensor& gy, const Tensor& x, const Tensor& slopes, Tensor& gx)
{
    const Planes p(x.shape());
    const bool shared = slopes.numel() == 1;
    detail::require(shared || slopes.numel() == p.channels, "prelu backward",
        std::to_string(slopes.numel()) + " slopes for " + std::to_string(p.channels) + " channels");
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t c = 0; c < p.channels; ++c) {
            const double a = slopes.data()[shared ? 0 : c];
            const int64_t base = (n * p.channels + c) * p.area;
            for (int64_t i = 0; i < p.area; ++i) {
                const float g = gy.data()[base + i];
                gx.data()[base + i] = x.data()[base + i] > 0 ? g : static_cast<float>(a * g);
            }
        }
}

void preluWeights(const Tensor& gy, const Tensor& x, Tensor& gslopes)
{
    const Planes p(x.shape());
    const bool shared = gslopes.numel() == 1;
    std::vector<double> sums(size_t(shared ? 1 : p.channels), 0.0);
    for (int64_t n = 0; n < p.batch; ++n)
        for (int64_t c = 0; c < p.channels; ++c) {
            const int64_t base = (n * p.channels + c) * p.area;
            for (int64_t i = 0; i < p.area; ++i)
                if (!(x.data()[base + i] > 0))
                    sums[shared ? 0 : size_t(c)] += double(x.data()[base + i]) * gy.data()[base + i];
        }
    for (size_t i = 0; i < sums.size(); ++i)
        gslopes.data()[i] = static_cast<float>(sums[i]);
}

} // namespace convscope::cpu::grad
