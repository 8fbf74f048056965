// The CPU's TrainingSession class (compute/training/cpu_training_session.cpp has its per-kind forward, backward-data
// and backward-weights; this header the bookkeeping around them): the network's parameters copied into tensors of its
// own, every layer output and gradient allocated once in prepare(), and one step = forward (training mode: batch
// norm's batch statistics, dropout's mask), the loss, the backward in reverse layer order, the optimizer's update.
// Each phase of each layer runs inside an NVTX range ("cpu.direct · train · L3 conv2d · backward-data") and is timed
// with the forward profiler's clock (compute/cpu/layer_clock.h). The finiteness checks run between the timed phases.
// The phased step (forwardPass / backwardPass / updateParameters, training.h) runs the same loops with the update
// deferred and the parameter gradients summed.
//
// A tensor read by several layers (a residual's input) gets the sum of their gradients: the first writes the
// gradient buffer, the others write a scratch buffer that is added on. A layer whose output no later layer reads
// (and that is not the last) gets no gradient, runs no backward and its parameters are not updated, as in PyTorch,
// where such parameters keep grad None and the optimizer skips them.
#pragma once

#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/layer_clock.h"
#include "compute/cpu_threads.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/nvtx.h"
#include "compute/training/cpu_backward_ops.h"
#include "compute/training/grad_scaler.h"
#include "compute/training/host_layer_ops.h"
#include "compute/training/mixed_products.h"
#include "compute/training/training.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace convscope::cpu_training {

inline std::string layerLabel(const Network& net, size_t i)
{
    return "layer " + std::to_string(i) + " (" + net.layers[i].name + ", " + layerKind(net.layers[i].spec).type + ")";
}

inline std::unique_ptr<Tensor> cloneOf(const std::shared_ptr<const Tensor>& t)
{
    return t ? std::make_unique<Tensor>(t->clone()) : nullptr;
}

// The activations without weights (cpu::direct::activation and cpu::grad::activation take them all).
template <typename S>
constexpr bool kPlainActivation = std::
                                      is_same_v<S,
                                          ReLU> || std::is_same_v<S, LeakyReLU> || std::is_same_v<S, Sigmoid> || std::is_same_v<S, Tanh> || std::is_same_v<S, ELU> || std::is_same_v<S, ReLU6> || std::is_same_v<S, Hardswish> || std::is_same_v<S, Hardsigmoid> || std::is_same_v<S, SiLU> || std::is_same_v<S, Hardtanh> || isElementwiseMathKind<S>;

struct LayerState {
    std::unique_ptr<Tensor> weight, bias, mean, var; // the session's parameters and running statistics
    std::unique_ptr<Tensor> gradWeight, gradBias;
    std::unique_ptr<Tensor> sumWeight, sumBias; // the phased step's accumulated gradients (zeroGradients)
    bool summed = false; // a backwardPass since zeroGradients reached this layer's parameters
    std::optional<ParameterUpdate> updateWeight, updateBias;
    cpu::grad::BatchStats stats; // batch norm: the last forward's batch mean and 1/std
    std::vector<float> mask; // dropout: the last forward's mask
    Tensor productWeight; // mixed precision: the weight rounded to the 16-bit type at this step's forward
    Tensor productGrad; // and the output gradient rounded, by this pass's backwardData for backwardWeights
    std::array<std::string, 4> ranges; // NVTX names of the four phases
};

class CpuTrainingSession final : public TrainingSession {
public:
    // `label` and `ops` (host_layer_ops.h): another CPU library's session, whose owned layers run on `ops`; then
    // `algorithm` is the CPU code of the other layers and `label` names the selection ("onednn.auto").
    CpuTrainingSession(std::string algorithm, const SessionOptions& options, std::string label = {},
        std::unique_ptr<HostLayerOps> ops = nullptr)
        : m_algorithm(std::move(algorithm))
        , m_label(label.empty() ? "cpu." + m_algorithm : std::move(label))
        , m_fast(m_algorithm != "direct")
        , m_clock(options)
        , m_ops(std::move(ops))
        , m_math(options.math)
        , m_scaled(options.math == MathMode::FP16)
        , m_initialScale(m_scaled ? GradScaler::initialScaleFrom(options.extra) : 1.0)
        , m_scaler(m_initialScale)
    {
    }

    void prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options) override
    {
        enterCpuThreadPolicy();
        if (!shapes.ok())
            throw InputError("train: the network has a shape error: " + shapes.firstError());
        if (const std::string refusal = cpuTrainingRefusal(net); !refusal.empty())
            throw UnsupportedError(m_label + ": " + refusal);
        m_net = net;
        m_shapes = shapes;
        m_options = options;
        checkOptimizer(options.optimizer);
        const size_t count = net.layers.size();
        m_state.clear();
        m_state.resize(count);
        m_outputs.clear();
        m_grads.clear();
        m_scratch.clear();
        m_readers.assign(count, 0);
        int inputReaders = 0;
        int64_t trainable = 0;
        for (size_t i = 0; i < count; ++i) {
            const Layer& layer = net.layers[i];
            LayerState& st = m_state[i];
            st.weight = cloneOf(layer.weight);
            st.bias = cloneOf(layer.bias);
            st.mean = cloneOf(layer.runningMean);
            st.var = cloneOf(layer.runningVar);
            const auto* bn2 = std::get_if<BatchNorm2d>(&layer.spec);
            const auto* bn3 = std::get_if<BatchNorm3d>(&layer.spec);
            const bool bn = bn2 || bn3;
            if (bn && (!st.mean || !st.var))
                throw Error(layerLabel(net, i) + ": running statistics were not materialised");
            // Batch norm's weight and bias are parameters with affine only (without, they are the 1 and 0 that
            // materialisation gives every backend).
            // The norms' weight and bias likewise with affine (layer_norm: elementwise_affine, and bias for its bias).
            const bool norm = isNormLayer(layer.spec);
            const bool weighted = norm
                ? normHasWeight(layer.spec)
                : (layerKind(layer.spec).needs & kNeedsWeights) != 0 || (bn2 && bn2->affine) || (bn3 && bn3->affine);
            if (weighted && st.weight) {
                st.gradWeight = std::make_unique<Tensor>(st.weight->shape());
                st.updateWeight.emplace(options.optimizer, st.weight->numel());
                trainable += st.weight->numel();
            }
            if ((norm ? normHasBias(layer.spec) : weighted) && st.bias) {
                st.gradBias = std::make_unique<Tensor>(st.bias->shape());
                st.updateBias.emplace(options.optimizer, st.bias->numel());
                trainable += st.bias->numel();
            }
            if ((layerKind(layer.spec).needs & kNeedsWeights) && !st.weight)
                throw Error(layerLabel(net, i) + ": its weight was not materialised");
            m_outputs.emplace_back(shapes.layers[i].out);
            m_grads.emplace_back(shapes.layers[i].out);
            for (int src : shapes.layers[i].sources)
                src < 0 ? ++inputReaders : ++m_readers[size_t(src)];
            const std::string base = m_label + " · train · L" + std::to_string(i) + " " + layerKind(layer.spec).type
                + " " + layer.name + " · ";
            st.ranges = { base + "forward", base + "backward-data", base + "backward-weights", base + "update" };
        }
        if (trainable == 0)
            throw InputError(net.name
                + " has no trainable layer (no conv, linear, affine batch norm or prelu "
                  "with parameters): there is nothing to train");
        for (size_t i = 0; i < count; ++i)
            m_scratch.emplace_back(m_readers[i] > 1 ? shapes.layers[i].out : Shape {});
        m_inputGrad = Tensor(shapes.input);
        m_inputScratch = Tensor(inputReaders > 1 ? shapes.input : Shape {});
        if (m_ops)
            m_ops->prepare(net, shapes, options);
        m_initial = trainedNetwork();
    }

    StepResult step(const Tensor& input, const Tensor& target, int64_t step) override
    {
        StepResult r;
        runForward(input, step, r.layers);
        const size_t last = m_net.layers.size() - 1;
        {
            const double t0 = m_clock.nowMs();
            r.loss = computeLoss(m_options.loss, m_outputs[last], target, m_grads[last]);
            r.lossMs = m_clock.nowMs() - t0;
        }
        if (!cpu::grad::allFinite(m_grads[last]) || !std::isfinite(r.loss))
            throw InputError("step " + std::to_string(step) + ": the loss is " + std::to_string(r.loss)
                + "; the first layer whose gradient is not finite is " + layerLabel(m_net, last)
                + " (its output's gradient from the loss)");
        if (!m_scaled) {
            runBackward(input, step, r.layers, true);
            return r;
        }
        // FP16: GradScaler's step. The loss's gradient scaled, the whole backward, then the updates unless a gradient
        // overflowed (the step skipped, the scale halved).
        r.lossScale = m_scaler.scale();
        scaleInPlace(m_grads[last], float(r.lossScale));
        zeroGradients();
        runBackward(input, step, r.layers, false);
        m_phaseScale = r.lossScale;
        std::vector<LayerPhaseMs> updates;
        r.skipped = !updateParameters(step, updates);
        for (size_t k = 0; k < updates.size(); ++k)
            r.layers[k].update = updates[k].update;
        m_scaler.update(r.skipped);
        return r;
    }

    Tensor forwardPass(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times) override
    {
        m_phasedInput = input.clone(); // the first layers' backward reads it
        runForward(m_phasedInput, step, times);
        return m_outputs.back().clone();
    }

    void zeroGradients() override
    {
        for (LayerState& st : m_state) {
            const auto zero = [](std::unique_ptr<Tensor>& sum, const std::unique_ptr<Tensor>& like) {
                if (!like)
                    return;
                if (!sum)
                    sum = std::make_unique<Tensor>(like->shape());
                std::fill(sum->data(), sum->data() + sum->numel(), 0.0f);
            };
            zero(st.sumWeight, st.gradWeight);
            zero(st.sumBias, st.gradBias);
            st.summed = false;
        }
    }

    void backwardPass(const Tensor& outputGradient, int64_t step, std::vector<LayerPhaseMs>& times) override
    {
        Tensor& gy = m_grads.back();
        if (outputGradient.numel() != gy.numel())
            throw InputError("train: the output gradient is " + outputGradient.shape().str()
                + " but the network's output is " + gy.shape().str());
        std::copy(outputGradient.data(), outputGradient.data() + gy.numel(), gy.data());
        if (!m_scaled && !cpu::grad::allFinite(gy)) // FP16: the loop's scaler finds an overflow at the update
            throw InputError("step " + std::to_string(step) + ": the output gradient is not finite");
        if (m_state.front().gradWeight && !m_state.front().sumWeight)
            zeroGradients();
        times.assign(m_net.layers.size(), {}); // this pass's phases only
        runBackward(m_phasedInput, step, times, false);
    }

    bool updateParameters(int64_t step, std::vector<LayerPhaseMs>& times) override
    {
        times.assign(m_state.size(), {});
        if (m_scaled && !unscaleGradients())
            return false; // a gradient overflowed: nothing changes (scaler.step skipping optimizer.step)
        for (size_t k = 0; k < m_state.size(); ++k) {
            LayerState& st = m_state[k];
            if (!st.summed)
                continue; // no gradient reached it: PyTorch's optimizer skips a parameter whose grad is None
            const nvtx::Range range(st.ranges[3], "cpu");
            const double t0 = m_clock.nowMs();
            st.updateWeight->apply(st.weight->data(), st.sumWeight->data(), step);
            if (st.gradBias)
                st.updateBias->apply(st.bias->data(), st.sumBias->data(), step);
            times[k].update = m_clock.nowMs() - t0;
        }
        return true;
    }

    double lossScale() const override { return m_scaled ? m_initialScale : 0; }
    void setLossScale(double scale) override { m_phaseScale = scale; }

    void reset() override
    {
        for (size_t i = 0; i < m_net.layers.size(); ++i) {
            const Layer& layer = m_initial.layers[i];
            LayerState& st = m_state[i];
            const auto restore = [](std::unique_ptr<Tensor>& t, const std::shared_ptr<const Tensor>& from) {
                if (t && from)
                    cpu::grad::copy(*from, *t);
            };
            restore(st.weight, layer.weight);
            restore(st.bias, layer.bias);
            restore(st.mean, layer.runningMean);
            restore(st.var, layer.runningVar);
            if (st.updateWeight)
                st.updateWeight->reset();
            if (st.updateBias)
                st.updateBias->reset();
        }
        m_scaler.reset(m_initialScale);
    }

    Network trainedNetwork() const override
    {
        Network net = m_net;
        const auto share
            = [](const std::unique_ptr<Tensor>& t) { return t ? std::make_shared<const Tensor>(t->clone()) : nullptr; };
        for (size_t i = 0; i < net.layers.size(); ++i) {
            net.layers[i].weight = share(m_state[i].weight);
            net.layers[i].bias = share(m_state[i].bias);
            net.layers[i].runningMean = share(m_state[i].mean);
            net.layers[i].runningVar = share(m_state[i].var);
        }
        return net;
    }

    std::vector<ParameterRef> parameters() const override
    {
        std::vector<ParameterRef> refs;
        for (size_t i = 0; i < m_state.size(); ++i) {
            if (m_state[i].gradWeight)
                refs.push_back({ i, "weight" });
            if (m_state[i].gradBias)
                refs.push_back({ i, "bias" });
        }
        return refs;
    }

    Tensor parameterGradient(const ParameterRef& ref) const override
    {
        if (ref.layer >= m_state.size())
            throw Error("train: no layer " + std::to_string(ref.layer));
        const auto& g = ref.name == "weight" ? m_state[ref.layer].gradWeight : m_state[ref.layer].gradBias;
        if (!g)
            throw Error("train: layer " + std::to_string(ref.layer) + " has no parameter " + ref.name);
        return g->clone();
    }

    Tensor inputGradient() const override
    {
        if (!m_options.inputGradient || !m_inputHas)
            throw Error("train: the input gradient was not computed (TrainingOptions::inputGradient)");
        return m_inputGrad.clone();
    }

    std::map<std::string, std::string> metadata() const override
    {
        std::map<std::string, std::string> m { { "algorithm", m_label }, { "clock", m_clock.name() },
            { "threads", std::to_string(cpuThreadCount()) },
            { "backward",
                m_fast ? "conv / linear: im2col + parallel sgemm; other layers: loops, double sums"
                       : "plain loops, double sums" } };
        m["math"] = mixedTrainingMath(m_math, "the convolutions and linear layers",
            std::string("exact products, ") + (m_fast ? "FP32" : "double") + " sums", m_scaled ? m_initialScale : 0);
        if (m_ops) {
            m["backward"] = "the library's primitives where the layer note says so; every other layer cpu."
                + m_algorithm + "'s code (" + m["backward"] + ") on the same host tensors";
            for (auto& [key, value] : m_ops->metadata())
                m[key] = value;
        }
        return m;
    }

private:
    void runForward(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times)
    {
        enterCpuThreadPolicy();
        const Shape& want = m_shapes.input;
        if (input.shape().numel() != want.numel() || input.shape().n != want.n)
            throw InputError("train: the input is " + input.shape().str() + " but the network expects " + want.str());
        times.assign(m_net.layers.size(), {});
        std::vector<const Tensor*> ins;
        for (size_t i = 0; i < m_net.layers.size(); ++i) {
            gather(i, input, ins);
            const nvtx::Range range(m_state[i].ranges[0], "cpu");
            const double t0 = m_clock.nowMs();
            forward(i, ins, step);
            times[i].forward = m_clock.nowMs() - t0;
        }
    }

    // From the last layer's gradient (m_grads.back()) down. `updateInline`: step()'s update of each layer right
    // after its gradients; otherwise the parameter gradients are added to the phased step's sums.
    void runBackward(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times, bool updateInline)
    {
        enterCpuThreadPolicy();
        times.resize(m_net.layers.size());
        std::vector<const Tensor*> ins;
        std::vector<char> has(m_net.layers.size(), 0);
        has.back() = 1;
        char inputHas = 0;
        for (size_t k = m_net.layers.size(); k-- > 0;) {
            if (!has[k])
                continue; // nothing downstream read this output
            gather(k, input, ins);
            LayerPhaseMs& t = times[k];
            {
                const nvtx::Range range(m_state[k].ranges[1], "cpu");
                const double t0 = m_clock.nowMs();
                const bool ran = backwardData(k, ins, has, inputHas);
                t.backwardData = ran ? m_clock.nowMs() - t0 : -1;
            }
            LayerState& st = m_state[k];
            if (st.gradWeight) {
                const nvtx::Range range(st.ranges[2], "cpu");
                const double t0 = m_clock.nowMs();
                backwardWeights(k, *ins.at(0));
                t.backwardWeights = m_clock.nowMs() - t0;
            }
            checkFinite(k, step, has, inputHas);
            if (st.gradWeight && !updateInline) {
                cpu::grad::accumulate(*st.gradWeight, *st.sumWeight, m_fast);
                if (st.gradBias)
                    cpu::grad::accumulate(*st.gradBias, *st.sumBias, m_fast);
                st.summed = true;
            } else if (st.gradWeight) {
                const nvtx::Range range(st.ranges[3], "cpu");
                const double t0 = m_clock.nowMs();
                st.updateWeight->apply(st.weight->data(), st.gradWeight->data(), step);
                if (st.gradBias)
                    st.updateBias->apply(st.bias->data(), st.gradBias->data(), step);
                t.update = m_clock.nowMs() - t0;
            }
        }
        m_inputHas = inputHas != 0;
    }

    void gather(size_t i, const Tensor& input, std::vector<const Tensor*>& ins) const
    {
        ins.clear();
        for (int src : m_shapes.layers[i].sources)
            ins.push_back(src < 0 ? &input : &m_outputs[size_t(src)]);
    }

    void forward(size_t i, const std::vector<const Tensor*>& ins, int64_t step);
    bool owned(size_t i) const { return m_ops && m_ops->owns(i); }
    // Layer i's tensors rounded as mixed precision says (a product on the CPU's own code in fp16 or bf16).
    bool roundsProducts(size_t i) const
    {
        return mixedProducts(m_math) && !owned(i) && isProductLayer(m_net.layers[i].spec);
    }
    // FP16: whether every summed parameter gradient is finite; if so, the sums, the last pass's gradients and the
    // input gradient divided by m_phaseScale (GradScaler's unscale_).
    bool unscaleGradients()
    {
        for (const LayerState& st : m_state)
            if (st.summed
                && (!cpu::grad::allFinite(*st.sumWeight, m_fast)
                    || (st.sumBias && !cpu::grad::allFinite(*st.sumBias, m_fast))))
                return false;
        const float inverse = float(1.0 / m_phaseScale);
        for (LayerState& st : m_state)
            if (st.summed)
                for (Tensor* t : { st.sumWeight.get(), st.sumBias.get(), st.gradWeight.get(), st.gradBias.get() })
                    if (t)
                        scaleInPlace(*t, inverse);
        if (m_inputHas)
            scaleInPlace(m_inputGrad, inverse);
        return true;
    }
    HostLayerParams params(size_t i)
    {
        LayerState& st = m_state[i];
        return { st.weight.get(), st.bias.get(), st.mean.get(), st.var.get(), st.gradWeight.get(), st.gradBias.get() };
    }
    bool backwardData(size_t k, const std::vector<const Tensor*>& ins, std::vector<char>& has, char& inputHas);
    void backwardWeights(size_t k, const Tensor& x);

    void checkFinite(size_t k, int64_t step, const std::vector<char>& has, char inputHas) const
    {
        if (m_scaled)
            return; // FP16: an overflow skips the update (unscaleGradients), as GradScaler's
        const LayerState& st = m_state[k];
        bool finite = (!st.gradWeight || cpu::grad::allFinite(*st.gradWeight, m_fast))
            && (!st.gradBias || cpu::grad::allFinite(*st.gradBias, m_fast));
        for (int src : m_shapes.layers[k].sources)
            if (src < 0 ? inputHas : has[size_t(src)])
                finite = finite && cpu::grad::allFinite(src < 0 ? m_inputGrad : m_grads[size_t(src)], m_fast);
        if (!finite)
            throw InputError("step " + std::to_string(step) + ": the gradient is not finite; the first layer "
                + "whose gradient is not finite (in backward order) is " + layerLabel(m_net, k));
    }

    std::string m_algorithm, m_label;
    bool m_fast;
    cpu::LayerClock m_clock;
    std::unique_ptr<HostLayerOps> m_ops; // null: every layer on the CPU's own code
    // Mixed precision (mixed_products.h): the math mode; FP16's loss scaling, as torch.amp.GradScaler (step()'s
    // scaler; m_phaseScale: the scale this step's gradients carry, step()'s or the phased loop's setLossScale).
    MathMode m_math;
    bool m_scaled;
    double m_initialScale;
    GradScaler m_scaler;
    double m_phaseScale = 1;
    Network m_net, m_initial;
    ShapeReport m_shapes;
    TrainingOptions m_options;
    std::vector<LayerState> m_state;
    std::vector<Tensor> m_outputs, m_grads, m_scratch;
    std::vector<int> m_readers;
    Tensor m_inputGrad, m_inputScratch;
    Tensor m_phasedInput; // forwardPass's input, which backwardPass reads
    bool m_inputHas = false;
};

} // namespace convscope::cpu_training
