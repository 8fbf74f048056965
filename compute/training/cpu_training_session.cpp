// The CPU's TrainingSession (cpu.direct and cpu.im2col_gemm): the network's parameters copied into tensors of its
// own, every layer output and gradient allocated once in prepare(), and one step = forward (training mode: batch
// norm's batch statistics, dropout's mask), the loss, the backward in reverse layer order, the optimizer's update.
// Each phase of each layer runs inside an NVTX range ("cpu.direct · train · L3 conv2d · backward-data") and is timed
// with the forward profiler's clock (compute/cpu/layer_clock.h). The finiteness checks run between the timed phases.
//
// A tensor read by several layers (a residual's input) gets the sum of their gradients: the first writes the
// gradient buffer, the others write a scratch buffer that is added on. A layer whose output no later layer reads
// (and that is not the last) gets no gradient, runs no backward and its parameters are not updated, as in PyTorch,
// where such parameters keep grad None and the optimizer skips them.
#include "compute/training/cpu_training_session.h"

#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/layer_clock.h"
#include "compute/cpu_threads.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/nvtx.h"
#include "compute/training/cpu_backward_ops.h"

#include <cmath>
#include <optional>

namespace convscope {

namespace {

    std::string layerLabel(const Network& net, size_t i)
    {
        return "layer " + std::to_string(i) + " (" + net.layers[i].name + ", " + layerKind(net.layers[i].spec).type
            + ")";
    }

    std::unique_ptr<Tensor> cloneOf(const std::shared_ptr<const Tensor>& t)
    {
        return t ? std::make_unique<Tensor>(t->clone()) : nullptr;
    }

    // The activations without weights (cpu::direct::activation and cpu::grad::activation take them all).
    template <typename S>
    constexpr bool kPlainActivation = std::is_same_v<S,
                                          ReLU> || std::is_same_v<S, LeakyReLU> || std::is_same_v<S, Sigmoid> || std::is_same_v<S, Tanh> || std::is_same_v<S, ELU> || std::is_same_v<S, ReLU6> || std::is_same_v<S, Hardswish> || std::is_same_v<S, Hardsigmoid> || std::is_same_v<S, SiLU> || std::is_same_v<S, Hardtanh> || isElementwiseMathKind<S>;

    struct LayerState {
        std::unique_ptr<Tensor> weight, bias, mean, var; // the session's parameters and running statistics
        std::unique_ptr<Tensor> gradWeight, gradBias;
        std::optional<ParameterUpdate> updateWeight, updateBias;
        cpu::grad::BatchStats stats; // batch norm: the last forward's batch mean and 1/std
        std::vector<float> mask; // dropout: the last forward's mask
        std::array<std::string, 4> ranges; // NVTX names of the four phases
    };

    class CpuTrainingSession final : public TrainingSession {
    public:
        CpuTrainingSession(std::string algorithm, const SessionOptions& options)
            : m_algorithm(std::move(algorithm))
            , m_fast(m_algorithm != "direct")
            , m_clock(options)
        {
        }

        void prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options) override
        {
            enterCpuThreadPolicy();
            if (!shapes.ok())
                throw InputError("train: the network has a shape error: " + shapes.firstError());
            if (const std::string refusal = cpuTrainingRefusal(net); !refusal.empty())
                throw UnsupportedError("cpu." + m_algorithm + ": " + refusal);
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
                const bool weighted = (layerKind(layer.spec).needs & kNeedsWeights) != 0 || (bn2 && bn2->affine)
                    || (bn3 && bn3->affine);
                if (weighted && st.weight) {
                    st.gradWeight = std::make_unique<Tensor>(st.weight->shape());
                    st.updateWeight.emplace(options.optimizer, st.weight->numel());
                    trainable += st.weight->numel();
                }
                if (weighted && st.bias) {
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
                const std::string base = "cpu." + m_algorithm + " · train · L" + std::to_string(i) + " "
                    + layerKind(layer.spec).type + " " + layer.name + " · ";
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
            m_initial = trainedNetwork();
        }

        StepResult step(const Tensor& input, const Tensor& target, int64_t step) override
        {
            enterCpuThreadPolicy();
            const Shape& want = m_shapes.input;
            if (input.shape().numel() != want.numel() || input.shape().n != want.n)
                throw InputError(
                    "train: the input is " + input.shape().str() + " but the network expects " + want.str());
            StepResult r;
            r.layers.assign(m_net.layers.size(), {});
            std::vector<const Tensor*> ins;
            for (size_t i = 0; i < m_net.layers.size(); ++i) {
                gather(i, input, ins);
                const nvtx::Range range(m_state[i].ranges[0], "cpu");
                const double t0 = m_clock.nowMs();
                forward(i, ins, step);
                r.layers[i].forward = m_clock.nowMs() - t0;
            }
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
            std::vector<char> has(m_net.layers.size(), 0);
            has[last] = 1;
            char inputHas = 0;
            for (size_t k = m_net.layers.size(); k-- > 0;) {
                if (!has[k])
                    continue; // nothing downstream read this output
                gather(k, input, ins);
                LayerPhaseMs& t = r.layers[k];
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
                if (st.gradWeight) {
                    const nvtx::Range range(st.ranges[3], "cpu");
                    const double t0 = m_clock.nowMs();
                    st.updateWeight->apply(st.weight->data(), st.gradWeight->data(), step);
                    if (st.gradBias)
                        st.updateBias->apply(st.bias->data(), st.gradBias->data(), step);
                    t.update = m_clock.nowMs() - t0;
                }
            }
            m_inputHas = inputHas != 0;
            return r;
        }

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
        }

        Network trainedNetwork() const override
        {
            Network net = m_net;
            const auto share = [](const std::unique_ptr<Tensor>& t) {
                return t ? std::make_shared<const Tensor>(t->clone()) : nullptr;
            };
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
            return { { "algorithm", "cpu." + m_algorithm }, { "clock", m_clock.name() },
                { "threads", std::to_string(cpuThreadCount()) },
                { "backward",
                    m_fast ? "conv / linear: im2col + parallel sgemm; other layers: loops, double sums"
                           : "plain loops, double sums" } };
        }

    private:
        void gather(size_t i, const Tensor& input, std::vector<const Tensor*>& ins) const
        {
            ins.clear();
            for (int src : m_shapes.layers[i].sources)
                ins.push_back(src < 0 ? &input : &m_outputs[size_t(src)]);
        }

        void forward(size_t i, const std::vector<const Tensor*>& ins, int64_t step);
        bool backwardData(size_t k, const std::vector<const Tensor*>& ins, std::vector<char>& has, char& inputHas);
        void backwardWeights(size_t k, const Tensor& x);

        void checkFinite(size_t k, int64_t step, const std::vector<char>& has, char inputHas) const
        {
            const LayerState& st = m_state[k];
            bool finite = (!st.gradWeight || cpu::grad::allFinite(*st.gradWeight))
                && (!st.gradBias || cpu::grad::allFinite(*st.gradBias));
            for (int src : m_shapes.layers[k].sources)
                if (src < 0 ? inputHas : has[size_t(src)])
                    finite = finite && cpu::grad::allFinite(src < 0 ? m_inputGrad : m_grads[size_t(src)]);
            if (!finite)
                throw InputError("step " + std::to_string(step) + ": the gradient is not finite; the first layer "
                    + "whose gradient is not finite (in backward order) is " + layerLabel(m_net, k));
        }

        std::string m_algorithm;
        bool m_fast;
        cpu::LayerClock m_clock;
        Network m_net, m_initial;
        ShapeReport m_shapes;
        TrainingOptions m_options;
        std::vector<LayerState> m_state;
        std::vector<Tensor> m_outputs, m_grads, m_scratch;
        std::vector<int> m_readers;
        Tensor m_inputGrad, m_inputScratch;
        bool m_inputHas = false;
    };

    // Every kind is named; a kind added to LayerSpec without a branch here does not compile.
    void CpuTrainingSession::forward(size_t i, const std::vector<const Tensor*>& ins, int64_t step)
    {
        const Layer& layer = m_net.layers[i];
        LayerState& st = m_state[i];
        const Padding2d& pad = m_shapes.layers[i].resolvedPadding;
        const Padding3d& pad3 = m_shapes.layers[i].resolvedPadding3d;
        const Tensor& in = *ins.at(0);
        Tensor& out = m_outputs[i];
        const bool fast = m_fast;
        std::visit(
            [&](const auto& spec) {
                using S = std::decay_t<decltype(spec)>;
                if constexpr (std::is_same_v<S, Conv2d>) {
                    fast ? cpu::fast::conv2d(in, *st.weight, st.bias.get(), spec, pad, out)
                         : cpu::direct::conv2d(in, *st.weight, st.bias.get(), spec, pad, out);
                } else if constexpr (std::is_same_v<S, ConvTranspose2d>) {
                    fast ? cpu::fast::convTranspose2d(in, *st.weight, st.bias.get(), spec, pad, out)
                         : cpu::direct::convTranspose2d(in, *st.weight, st.bias.get(), spec, pad, out);
                } else if constexpr (std::is_same_v<S, Linear>) {
                    fast ? cpu::fast::linear(in, *st.weight, st.bias.get(), out)
                         : cpu::direct::linear(in, *st.weight, st.bias.get(), out);
                } else if constexpr (std::is_same_v<S, MaxPool2d>) {
                    fast ? cpu::fast::maxPool2d(in, spec, pad, out) : cpu::direct::maxPool2d(in, spec, pad, out);
                } else if constexpr (std::is_same_v<S, AvgPool2d>) {
                    fast ? cpu::fast::avgPool2d(in, spec, pad, out) : cpu::direct::avgPool2d(in, spec, pad, out);
                } else if constexpr (std::is_same_v<S, GlobalAvgPool2d>) {
                    fast ? cpu::fast::globalAvgPool2d(in, out) : cpu::direct::globalAvgPool2d(in, out);
                } else if constexpr (std::is_same_v<S, BatchNorm2d>) {
                    cpu::grad::batchNorm2dTrainForward(in, st.weight.get(), st.bias.get(), spec.eps,
                        m_options.batchNormMomentum, *st.mean, *st.var, out, st.stats, fast);
                } else if constexpr (std::is_same_v<S, Dropout>) {
                    cpu::grad::dropoutForward(
                        in, spec.p, m_options.dropoutSeed + uint64_t(step) * 1000003u + i, st.mask, out);
                } else if constexpr (std::is_same_v<S, Flatten> || std::is_same_v<S, Identity>) {
                    cpu::grad::copy(in, out);
                } else if constexpr (std::is_same_v<S, Softmax>) {
                    fast ? cpu::fast::softmax(in, out) : cpu::direct::softmax(in, out);
                } else if constexpr (std::is_same_v<S, PReLU>) {
                    fast ? cpu::fast::prelu(in, *st.weight, out) : cpu::direct::prelu(in, *st.weight, out);
                } else if constexpr (std::is_same_v<S, Add>) {
                    fast ? cpu::fast::add(ins, out) : cpu::direct::add(ins, out);
                } else if constexpr (std::is_same_v<S, Binary>) {
                    cpu::runBinary(spec, m_shapes.layers[i], ins, st.weight.get(), out, fast);
                } else if constexpr (std::is_same_v<S, Mul>) {
                    fast ? cpu::fast::mul(*ins.at(0), *ins.at(1), out) : cpu::direct::mul(*ins.at(0), *ins.at(1), out);
                } else if constexpr (std::is_same_v<S, Concat>) {
                    fast ? cpu::fast::concat(ins, out) : cpu::direct::concat(ins, out);
                } else if constexpr (std::is_same_v<S, Pad>) {
                    fast ? cpu::fast::pad(in, spec, out) : cpu::direct::pad(in, spec, out);
                } else if constexpr (kPlainActivation<S>) {
                    fast ? cpu::fast::activation(in, layer.spec, out) : cpu::direct::activation(in, layer.spec, out);
                } else if constexpr (std::is_same_v<S, Conv3d>) {
                    fast ? cpu::fast::conv3d(in, *st.weight, st.bias.get(), spec, pad3, out)
                         : cpu::direct::conv3d(in, *st.weight, st.bias.get(), spec, pad3, out);
                } else if constexpr (std::is_same_v<S, ConvTranspose3d>) {
                    fast ? cpu::fast::convTranspose3d(in, *st.weight, st.bias.get(), spec, pad3, out)
                         : cpu::direct::convTranspose3d(in, *st.weight, st.bias.get(), spec, pad3, out);
                } else if constexpr (std::is_same_v<S, MaxPool3d>) {
                    fast ? cpu::fast::maxPool3d(in, spec, pad3, out) : cpu::direct::maxPool3d(in, spec, pad3, out);
                } else if constexpr (std::is_same_v<S, AvgPool3d>) {
                    fast ? cpu::fast::avgPool3d(in, spec, pad3, out) : cpu::direct::avgPool3d(in, spec, pad3, out);
                } else if constexpr (std::is_same_v<S, GlobalAvgPool3d>) {
                    fast ? cpu::fast::globalAvgPool3d(in, out) : cpu::direct::globalAvgPool3d(in, out);
                } else if constexpr (std::is_same_v<S, BatchNorm3d>) {
                    cpu::grad::batchNorm2dTrainForward(in, st.weight.get(), st.bias.get(), spec.eps,
                        m_options.batchNormMomentum, *st.mean, *st.var, out, st.stats, fast);
                } else if constexpr (std::is_same_v<S, Resize>) {
                    throw UnsupportedError("resize has no backward on the CPU yet (cpuTrainingRefusal refuses it)");
                } else if constexpr (std::is_same_v<S, ChannelShuffle>) {
                    fast ? cpu::fast::channelShuffle(in, spec, out) : cpu::direct::channelShuffle(in, spec, out);
                } else if constexpr (std::is_same_v<S, Slice>) {
                    fast ? cpu::fast::slice(in, spec, out) : cpu::direct::slice(in, spec, out);
                } else {
                    static_assert(dependent_false<S>, "cpu training: a layer kind has no forward branch");
                }
            },
            layer.spec);
    }

    // The gradients of layer k's inputs; returns whether any was computed (the network's input is skipped unless
    // TrainingOptions::inputGradient).
    bool CpuTrainingSession::backwardData(
        size_t k, const std::vector<const Tensor*>& ins, std::vector<char>& has, char& inputHas)
    {
        const Layer& layer = m_net.layers[k];
        LayerState& st = m_state[k];
        const Padding2d& pad = m_shapes.layers[k].resolvedPadding;
        const Padding3d& pad3 = m_shapes.layers[k].resolvedPadding3d;
        const Tensor& gy = m_grads[k];
        const std::vector<int>& sources = m_shapes.layers[k].sources;
        const bool fast = m_fast;
        bool ran = false;
        int64_t channelOffset = 0; // concat
        for (size_t j = 0; j < sources.size(); ++j) {
            const int src = sources[j];
            const Tensor& x = *ins[j];
            const int64_t channels = x.shape().c;
            if (src < 0 && !m_options.inputGradient) {
                channelOffset += channels;
                continue;
            }
            char& set = src < 0 ? inputHas : has[size_t(src)];
            Tensor& total = src < 0 ? m_inputGrad : m_grads[size_t(src)];
            Tensor& gx = set ? (src < 0 ? m_inputScratch : m_scratch[size_t(src)]) : total;
            std::visit(
                [&](const auto& spec) {
                    using S = std::decay_t<decltype(spec)>;
                    if constexpr (std::is_same_v<S, Conv2d>) {
                        fast ? cpu::grad::fast::conv2dData(gy, *st.weight, spec, pad, gx)
                             : cpu::grad::direct::conv2dData(gy, *st.weight, spec, pad, gx);
                    } else if constexpr (std::is_same_v<S, ConvTranspose2d>) {
                        fast ? cpu::grad::fast::convTranspose2dData(gy, *st.weight, spec, pad, gx)
                             : cpu::grad::direct::convTranspose2dData(gy, *st.weight, spec, pad, gx);
                    } else if constexpr (std::is_same_v<S, Linear>) {
                        fast ? cpu::grad::fast::linearData(gy, *st.weight, gx)
                             : cpu::grad::direct::linearData(gy, *st.weight, gx);
                    } else if constexpr (std::is_same_v<S, MaxPool2d>) {
                        cpu::grad::maxPool2d(gy, x, spec, pad, gx, fast);
                    } else if constexpr (std::is_same_v<S, AvgPool2d>) {
                        cpu::grad::avgPool2d(gy, spec, pad, gx, fast);
                    } else if constexpr (std::is_same_v<S, GlobalAvgPool2d>) {
                        cpu::grad::globalAvgPool2d(gy, gx);
                    } else if constexpr (std::is_same_v<S, BatchNorm2d>) {
                        cpu::grad::batchNorm2dData(gy, x, st.weight.get(), st.stats, gx, fast);
                    } else if constexpr (std::is_same_v<S, Dropout>) {
                        cpu::grad::dropoutBackward(gy, st.mask, gx);
                    } else if constexpr (std::is_same_v<S,
                                             Flatten> || std::is_same_v<S, Identity> || std::is_same_v<S, Add>) {
                        cpu::grad::copy(gy, gx);
                    } else if constexpr (std::is_same_v<S, Softmax>) {
                        cpu::grad::softmax(gy, m_outputs[k], gx, fast);
                    } else if constexpr (std::is_same_v<S, PReLU>) {
                        cpu::grad::preluData(gy, x, *st.weight, gx);
                    } else if constexpr (std::is_same_v<S, Binary>) {
                        cpu::grad::binaryLayerInput(spec, m_shapes.layers[k], ins, st.weight.get(), j, gy, gx);
                    } else if constexpr (std::is_same_v<S, Mul>) {
                        cpu::grad::mulInput(gy, *ins.at(1 - j), gx);
                    } else if constexpr (std::is_same_v<S, Concat>) {
                        cpu::grad::concatInput(gy, channelOffset, gx);
                    } else if constexpr (std::is_same_v<S, Pad>) {
                        cpu::grad::pad(gy, spec, gx);
                    } else if constexpr (kPlainActivation<S>) {
                        cpu::grad::activation(gy, x, layer.spec, gx, fast);
                    } else if constexpr (std::is_same_v<S, Conv3d>) {
                        fast ? cpu::grad::fast::conv3dData(gy, *st.weight, spec, pad3, gx)
                             : cpu::grad::direct::conv3dData(gy, *st.weight, spec, pad3, gx);
                    } else if constexpr (std::is_same_v<S, ConvTranspose3d>) {
                        fast ? cpu::grad::fast::convTranspose3dData(gy, *st.weight, spec, pad3, gx)
                             : cpu::grad::direct::convTranspose3dData(gy, *st.weight, spec, pad3, gx);
                    } else if constexpr (std::is_same_v<S, MaxPool3d>) {
                        cpu::grad::maxPool3d(gy, x, spec, pad3, gx);
                    } else if constexpr (std::is_same_v<S, AvgPool3d>) {
                        cpu::grad::avgPool3d(gy, spec, pad3, gx);
                    } else if constexpr (std::is_same_v<S, GlobalAvgPool3d>) {
                        cpu::grad::globalAvgPool2d(gy, gx);
                    } else if constexpr (std::is_same_v<S, BatchNorm3d>) {
                        cpu::grad::batchNorm2dData(gy, x, st.weight.get(), st.stats, gx, fast);
                    } else if constexpr (std::is_same_v<S, Resize>) {
                        throw UnsupportedError("resize has no backward on the CPU yet (cpuTrainingRefusal refuses it)");
                    } else if constexpr (std::is_same_v<S, ChannelShuffle>) {
                        // The inverse permutation: a shuffle with C/g groups.
                        const ChannelShuffle inverse { x.shape().c / spec.groups };
                        fast ? cpu::fast::channelShuffle(gy, inverse, gx)
                             : cpu::direct::channelShuffle(gy, inverse, gx);
                    } else if constexpr (std::is_same_v<S, Slice>) {
                        cpu::grad::slice(gy, spec, gx);
                    } else {
                        static_assert(dependent_false<S>, "cpu training: a layer kind has no backward branch");
                    }
                },
                layer.spec);
            if (set)
                cpu::grad::accumulate(gx, total, fast);
            set = 1;
            ran = true;
            channelOffset += channels;
        }
        return ran;
    }

    void CpuTrainingSession::backwardWeights(size_t k, const Tensor& x)
    {
        const Layer& layer = m_net.layers[k];
        LayerState& st = m_state[k];
        const Padding2d& pad = m_shapes.layers[k].resolvedPadding;
        const Padding3d& pad3 = m_shapes.layers[k].resolvedPadding3d;
        const Tensor& gy = m_grads[k];
        if (const auto* conv = std::get_if<Conv2d>(&layer.spec))
            m_fast ? cpu::grad::fast::conv2dWeights(gy, x, *conv, pad, *st.gradWeight, st.gradBias.get())
                   : cpu::grad::direct::conv2dWeights(gy, x, *conv, pad, *st.gradWeight, st.gradBias.get());
        else if (const auto* convT = std::get_if<ConvTranspose2d>(&layer.spec))
            m_fast ? cpu::grad::fast::convTranspose2dWeights(gy, x, *convT, pad, *st.gradWeight, st.gradBias.get())
                   : cpu::grad::direct::convTranspose2dWeights(gy, x, *convT, pad, *st.gradWeight, st.gradBias.get());
        else if (std::holds_alternative<Linear>(layer.spec))
            m_fast ? cpu::grad::fast::linearWeights(gy, x, *st.gradWeight, st.gradBias.get())
                   : cpu::grad::direct::linearWeights(gy, x, *st.gradWeight, st.gradBias.get());
        else if (const auto* conv3 = std::get_if<Conv3d>(&layer.spec))
            m_fast ? cpu::grad::fast::conv3dWeights(gy, x, *conv3, pad3, *st.gradWeight, st.gradBias.get())
                   : cpu::grad::direct::conv3dWeights(gy, x, *conv3, pad3, *st.gradWeight, st.gradBias.get());
        else if (const auto* convT3 = std::get_if<ConvTranspose3d>(&layer.spec))
            m_fast ? cpu::grad::fast::convTranspose3dWeights(gy, x, *convT3, pad3, *st.gradWeight, st.gradBias.get())
                   : cpu::grad::direct::convTranspose3dWeights(gy, x, *convT3, pad3, *st.gradWeight, st.gradBias.get());
        else if (std::holds_alternative<BatchNorm2d>(layer.spec) || std::holds_alternative<BatchNorm3d>(layer.spec))
            cpu::grad::batchNorm2dWeights(gy, x, st.stats, *st.gradWeight, *st.gradBias, m_fast);
        else if (std::holds_alternative<PReLU>(layer.spec))
            cpu::grad::preluWeights(gy, x, *st.gradWeight);
        else
            throw Error(layerLabel(m_net, k) + ": parameters without a weight gradient");
    }

} // namespace

std::string cpuTrainingRefusal(const Network& net)
{
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Layer& layer = net.layers[i];
        if (const auto* conv = std::get_if<Conv2d>(&layer.spec); conv && conv->fused_activation)
            return layerLabel(net, i) + ": a fused activation is unsupported in training (train the unfused network)";
        if (std::holds_alternative<Resize>(layer.spec))
            return layerLabel(net, i) + ": resize has no backward yet (unsupported in training)";
    }
    return {};
}

std::unique_ptr<TrainingSession> makeCpuTrainingSession(const std::string& algorithm, const SessionOptions& options)
{
    if (algorithm != "direct" && algorithm != "im2col_gemm")
        throw UnsupportedError("cpu." + algorithm
            + " has no training path (unsupported): train on cpu.direct (the reference) or cpu.im2col_gemm");
    return std::make_unique<CpuTrainingSession>(algorithm, options);
}

} // namespace convscope
