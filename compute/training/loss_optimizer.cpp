// The losses (reduction='mean') and the optimizers of the training step, as torch.nn and torch.optim define them.
//   cross-entropy  ℓ = mean_n (log Σ_c exp x[n, c] − x[n, t_n]);     ∂ℓ/∂x = (softmax(x) − onehot(t)) / N
//   mse            ℓ = mean (x − y)²;                               ∂ℓ/∂x = 2 (x − y) / numel
//   bce            ℓ = mean (max(x, 0) − x·y + log(1 + e^−|x|));    ∂ℓ/∂x = (σ(x) − y) / numel
//   SGD   g = grad + wd·p; buf = g (first step) or momentum·buf + g; p −= lr·buf (without momentum: p −= lr·g)
//   Adam  g = grad + wd·p; m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²;
//         p −= lr / (1 − β1^t) · m / (sqrt(v) / sqrt(1 − β2^t) + eps)
#include "compute/training/training.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/npy.h"
#include "compute/random.h"

#include <algorithm>
#include <cmath>

namespace convscope {

LossKind parseLossKind(const std::string& text)
{
    if (text == "ce" || text == "cross_entropy")
        return LossKind::CrossEntropy;
    if (text == "mse")
        return LossKind::MSE;
    if (text == "bce" || text == "bce_with_logits")
        return LossKind::BCEWithLogits;
    throw InputError("--loss " + text + ": expected ce (cross-entropy from logits), mse or bce (BCE with logits)");
}

std::string lossKindName(LossKind kind)
{
    switch (kind) {
    case LossKind::CrossEntropy:
        return "ce";
    case LossKind::MSE:
        return "mse";
    case LossKind::BCEWithLogits:
        return "bce";
    }
    return "?";
}

void checkLossTarget(LossKind kind, const Shape& output, const std::vector<int64_t>& targetDims)
{
    const std::vector<int64_t> out = output.dims();
    if (kind == LossKind::CrossEntropy) {
        if (output.isVolume() || output.h != 1 || output.w != 1)
            throw InputError("loss ce: the network's output is " + output.str()
                + "; cross-entropy takes logits [N, C] (or [N, C, 1, 1])");
        if (targetDims != std::vector<int64_t> { output.n })
            throw InputError("loss ce: the target is " + npyDimsText(targetDims) + " but the output " + output.str()
                + " needs class indices [" + std::to_string(output.n) + "]");
        return;
    }
    if (targetDims != out)
        throw InputError("loss " + lossKindName(kind) + ": the target is " + npyDimsText(targetDims)
            + " but the network's output is " + output.str() + "; the target must have the output's shape");
}

void checkClassIndices(const Shape& output, const Tensor& target)
{
    for (int64_t n = 0; n < target.numel(); ++n) {
        const float t = target.data()[n];
        if (!(t >= 0 && t < float(output.c) && t == std::floor(t)))
            throw InputError("loss ce: target " + std::to_string(n) + " is " + std::to_string(t)
                + ", not a class index in [0, " + std::to_string(output.c) + ")");
    }
}

double computeLoss(LossKind kind, const Tensor& output, const Tensor& target, Tensor& gradient)
{
    const int64_t count = output.numel();
    const float* x = output.data();
    const float* y = target.data();
    float* g = gradient.data();
    double loss = 0;
    switch (kind) {
    case LossKind::CrossEntropy: {
        const int64_t batch = output.shape().n, classes = output.shape().c;
        checkClassIndices(output.shape(), target);
        for (int64_t n = 0; n < batch; ++n) {
            const float* row = x + n * classes;
            const double top = *std::max_element(row, row + classes);
            double sum = 0;
            for (int64_t c = 0; c < classes; ++c)
                sum += std::exp(double(row[c]) - top);
            const auto t = static_cast<int64_t>(y[n]);
            loss += top + std::log(sum) - row[t];
            for (int64_t c = 0; c < classes; ++c)
                g[n * classes + c]
                    = static_cast<float>((std::exp(double(row[c]) - top) / sum - (c == t ? 1.0 : 0.0)) / double(batch));
        }
        return loss / double(batch);
    }
    case LossKind::MSE:
        for (int64_t i = 0; i < count; ++i) {
            const double d = double(x[i]) - y[i];
            loss += d * d;
            g[i] = static_cast<float>(2 * d / double(count));
        }
        return loss / double(count);
    case LossKind::BCEWithLogits:
        for (int64_t i = 0; i < count; ++i) {
            const double v = x[i], t = y[i];
            loss += std::max(v, 0.0) - v * t + std::log1p(std::exp(-std::abs(v)));
            g[i] = static_cast<float>((1.0 / (1.0 + std::exp(-v)) - t) / double(count));
        }
        return loss / double(count);
    }
    return loss;
}

OptimizerSpec::Kind parseOptimizerKind(const std::string& text)
{
    if (text == "sgd")
        return OptimizerSpec::Kind::SGD;
    if (text == "adam")
        return OptimizerSpec::Kind::Adam;
    throw InputError("--optimizer " + text + ": expected sgd or adam");
}

void checkOptimizer(const OptimizerSpec& spec)
{
    const auto need = [](bool ok, const std::string& what) {
        if (!ok)
            throw InputError(what);
    };
    need(std::isfinite(spec.lr) && spec.lr >= 0, "the learning rate must be a finite number ≥ 0");
    need(std::isfinite(spec.weightDecay) && spec.weightDecay >= 0, "the weight decay must be a finite number ≥ 0");
    need(std::isfinite(spec.momentum) && spec.momentum >= 0, "the momentum must be a finite number ≥ 0");
    need(spec.beta1 >= 0 && spec.beta1 < 1 && spec.beta2 >= 0 && spec.beta2 < 1, "Adam's betas must be in [0, 1)");
    need(std::isfinite(spec.eps) && spec.eps >= 0, "Adam's eps must be a finite number ≥ 0");
}

ParameterUpdate::ParameterUpdate(const OptimizerSpec& spec, int64_t count)
    : m_spec(spec)
    , m_first(size_t(count), 0.0)
    , m_second(spec.kind == OptimizerSpec::Kind::Adam ? size_t(count) : 0, 0.0)
{
}

void ParameterUpdate::reset()
{
    std::fill(m_first.begin(), m_first.end(), 0.0);
    std::fill(m_second.begin(), m_second.end(), 0.0);
    m_started = false;
}

namespace {
    constexpr size_t kParallelUpdate = size_t(1) << 15; // below it the team's wake-up costs more than the loop
} // namespace

void ParameterUpdate::apply(float* param, const float* grad, int64_t step)
{
    const size_t count = m_first.size();
    const double lr = m_spec.lr, wd = m_spec.weightDecay;
    if (m_spec.kind == OptimizerSpec::Kind::SGD) {
        const double mu = m_spec.momentum;
        const bool started = m_started;
        // Element by element, so the team's split changes no bit; a large layer's state is hundreds of MB a step.
#pragma omp parallel for schedule(static) if (count >= kParallelUpdate)
        for (size_t i = 0; i < count; ++i) {
            double g = double(grad[i]) + wd * param[i];
            if (mu != 0) {
                m_first[i] = started ? mu * m_first[i] + g : g;
                g = m_first[i];
            }
            param[i] = static_cast<float>(param[i] - lr * g);
        }
        m_started = true;
        return;
    }
    const double b1 = m_spec.beta1, b2 = m_spec.beta2;
    const double correction1 = 1 - std::pow(b1, double(step));
    const double correction2 = 1 - std::pow(b2, double(step));
    const double stepSize = lr / correction1;
    const double root2 = std::sqrt(correction2);
#pragma omp parallel for schedule(static) if (count >= kParallelUpdate)
    for (size_t i = 0; i < count; ++i) {
        const double g = double(grad[i]) + wd * param[i];
        m_first[i] = b1 * m_first[i] + (1 - b1) * g;
        m_second[i] = b2 * m_second[i] + (1 - b2) * g * g;
        const double denom = std::sqrt(m_second[i]) / root2 + m_spec.eps;
        param[i] = static_cast<float>(param[i] - stepSize * m_first[i] / denom);
    }
    m_started = true;
}

std::string trainingLayerLabel(const Network& net, size_t i)
{
    return "layer " + std::to_string(i) + " (" + net.layers[i].name + ", " + layerKind(net.layers[i].spec).type + ")";
}

uint64_t dropoutMaskSeed(uint64_t dropoutSeed, int64_t step, size_t layer)
{
    return dropoutSeed + uint64_t(step) * 1000003u + layer;
}

void drawDropoutMask(double p, uint64_t seed, std::vector<float>& mask)
{
    if (!(p >= 0 && p < 1))
        throw InputError("dropout's p must be in [0, 1), got " + std::to_string(p));
    Random rng(seed);
    const float keep = static_cast<float>(1.0 / (1.0 - p));
    for (float& m : mask)
        m = rng.uniform() < p ? 0.0f : keep;
}

} // namespace convscope
