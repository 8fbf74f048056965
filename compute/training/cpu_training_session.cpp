// The CPU training session's per-kind forward, backward-data and backward-weights (the class and its steps are in
// cpu_training_internal.h), the kinds the CPU cannot train, and the session's factory.
#include "compute/training/cpu_training_session.h"

#include "compute/reduce.h"
#include "compute/training/cpu_training_internal.h"

#include "compute/normalization.h"

namespace convscope {

namespace cpu_training {

    // Every kind is named; a kind added to LayerSpec without a branch here does not compile.
    void CpuTrainingSession::forward(size_t i, const std::vector<const Tensor*>& ins, int64_t step)
    {
        const Layer& layer = m_net.layers[i];
        LayerState& st = m_state[i];
        const Padding2d& pad = m_shapes.layers[i].resolvedPadding;
        const Padding3d& pad3 = m_shapes.layers[i].resolvedPadding3d;
        Tensor& out = m_outputs[i];
        const bool fast = m_fast;
        if (owned(i)) {
            m_ops->forward(i, *ins.at(0), params(i), out);
            return;
        }
        // Mixed precision (mixed_products.h): a product reads its input and weight rounded, its output is rounded.
        const bool rounded = roundsProducts(i);
        Tensor roundedIn;
        if (rounded) {
            roundedIn = roundedCopy(*ins.at(0), m_math);
            st.productWeight = roundedCopy(*st.weight, m_math);
        }
        const Tensor& in = rounded ? roundedIn : *ins.at(0);
        const auto weight = [&]() -> const Tensor& { return rounded ? st.productWeight : *st.weight; };
        std::visit(
            [&](const auto& spec) {
                using S = std::decay_t<decltype(spec)>;
                if constexpr (std::is_same_v<S, Conv2d>) {
                    fast ? cpu::fast::conv2d(in, weight(), st.bias.get(), spec, pad, out)
                         : cpu::direct::conv2d(in, weight(), st.bias.get(), spec, pad, out);
                } else if constexpr (std::is_same_v<S, ConvTranspose2d>) {
                    fast ? cpu::fast::convTranspose2d(in, weight(), st.bias.get(), spec, pad, out)
                         : cpu::direct::convTranspose2d(in, weight(), st.bias.get(), spec, pad, out);
                } else if constexpr (std::is_same_v<S, Linear>) {
                    fast ? cpu::fast::linear(in, weight(), st.bias.get(), out)
                         : cpu::direct::linear(in, weight(), st.bias.get(), out);
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
                        in, spec.p, dropoutMaskSeed(m_options.dropoutSeed, step, i), st.mask, out);
                } else if constexpr (std::is_same_v<S,
                                         Flatten> || std::is_same_v<S, Identity> || std::is_same_v<S, Reshape>) {
                    cpu::grad::copy(in, out);
                } else if constexpr (std::is_same_v<S, Transpose>) {
                    const std::vector<int64_t> perm = wrappedDims(spec, in.shape().ndim());
                    fast ? cpu::fast::transpose(in, perm, out) : cpu::direct::transpose(in, perm, out);
                } else if constexpr (isSoftmaxKind<S>) {
                    const int64_t axis = wrapAxis(spec.dim, in.shape().ndim(), layerTypeName(spec));
                    fast ? cpu::fast::softmax(in, out, axis, isLogSoftmax<S>)
                         : cpu::direct::softmax(in, out, axis, isLogSoftmax<S>);
                } else if constexpr (std::is_same_v<S, Reduce>) {
                    fast ? cpu::fast::reduce(in, spec, out) : cpu::direct::reduce(in, spec, out);
                } else if constexpr (std::is_same_v<S, PReLU>) {
                    fast ? cpu::fast::prelu(in, *st.weight, out) : cpu::direct::prelu(in, *st.weight, out);
                } else if constexpr (std::is_same_v<S, Add>) {
                    fast ? cpu::fast::add(ins, out) : cpu::direct::add(ins, out);
                } else if constexpr (std::is_same_v<S, Binary>) {
                    cpu::runBinary(spec, m_shapes.layers[i], ins, st.weight.get(), out, fast);
                } else if constexpr (std::is_same_v<S, Mul>) {
                    fast ? cpu::fast::mul(*ins.at(0), *ins.at(1), out) : cpu::direct::mul(*ins.at(0), *ins.at(1), out);
                } else if constexpr (std::is_same_v<S, Concat>) {
                    const int64_t dim = wrappedDim(spec, out.shape().ndim());
                    fast ? cpu::fast::concat(ins, dim, out) : cpu::direct::concat(ins, dim, out);
                } else if constexpr (std::is_same_v<S, Pad>) {
                    fast ? cpu::fast::pad(in, spec, out) : cpu::direct::pad(in, spec, out);
                } else if constexpr (kPlainActivation<S>) {
                    fast ? cpu::fast::activation(in, layer.spec, out) : cpu::direct::activation(in, layer.spec, out);
                } else if constexpr (std::is_same_v<S, Conv3d>) {
                    fast ? cpu::fast::conv3d(in, weight(), st.bias.get(), spec, pad3, out)
                         : cpu::direct::conv3d(in, weight(), st.bias.get(), spec, pad3, out);
                } else if constexpr (std::is_same_v<S, ConvTranspose3d>) {
                    fast ? cpu::fast::convTranspose3d(in, weight(), st.bias.get(), spec, pad3, out)
                         : cpu::direct::convTranspose3d(in, weight(), st.bias.get(), spec, pad3, out);
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
                } else if constexpr (isNormKind<S>) {
                    const NormPlan plan = normPlan(spec, in.shape());
                    fast ? cpu::fast::normalization(in, *st.weight, *st.bias, plan, out)
                         : cpu::direct::normalization(in, *st.weight, *st.bias, plan, out);
                } else if constexpr (std::is_same_v<S, Matmul>) {
                    cpu::runMatmul(spec, m_shapes.layers[i], ins, st.weight.get(), out, fast);
                } else if constexpr (std::is_same_v<S, Gather>) {
                    cpu::runGather(spec, in, out);
                } else {
                    static_assert(dependent_false<S>, "cpu training: a layer kind has no forward branch");
                }
            },
            layer.spec);
        if (rounded)
            roundInPlace(out, m_math);
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
        // Mixed precision: a product reads its output gradient and weight rounded (the forward's), writes its input
        // gradients rounded.
        const bool rounded = roundsProducts(k);
        if (rounded)
            st.productGrad = roundedCopy(m_grads[k], m_math); // backwardWeights reads it too
        const Tensor& gy = rounded ? st.productGrad : m_grads[k];
        const auto weight = [&]() -> const Tensor& { return rounded ? st.productWeight : *st.weight; };
        const std::vector<int>& sources = m_shapes.layers[k].sources;
        const bool fast = m_fast;
        bool ran = false;
        int64_t channelOffset = 0; // concat
        for (size_t j = 0; j < sources.size(); ++j) {
            const int src = sources[j];
            const Tensor& x = *ins[j];
            // Concat: the input's size along the joined dim (channels, by default); the offset of the next one.
            const auto* cat = std::get_if<Concat>(&layer.spec);
            const int64_t channels = cat ? x.shape().dims()[size_t(wrappedDim(*cat, x.shape().ndim()))] : x.shape().c;
            if (src < 0 && !m_options.inputGradient) {
                channelOffset += channels;
                continue;
            }
            char& set = src < 0 ? inputHas : has[size_t(src)];
            Tensor& total = src < 0 ? m_inputGrad : m_grads[size_t(src)];
            Tensor& gx = set ? (src < 0 ? m_inputScratch : m_scratch[size_t(src)]) : total;
            if (owned(k))
                m_ops->backwardData(k, x, m_outputs[k], gy, params(k), gx);
            std::visit(
                [&](const auto& spec) {
                    using S = std::decay_t<decltype(spec)>;
                    if (owned(k))
                        return; // the library's ops ran it (host_layer_ops.h)
                    if constexpr (std::is_same_v<S, Conv2d>) {
                        fast ? cpu::grad::fast::conv2dData(gy, weight(), spec, pad, gx)
                             : cpu::grad::direct::conv2dData(gy, weight(), spec, pad, gx);
                    } else if constexpr (std::is_same_v<S, ConvTranspose2d>) {
                        fast ? cpu::grad::fast::convTranspose2dData(gy, weight(), spec, pad, gx)
                             : cpu::grad::direct::convTranspose2dData(gy, weight(), spec, pad, gx);
                    } else if constexpr (std::is_same_v<S, Linear>) {
                        fast ? cpu::grad::fast::linearData(gy, weight(), gx)
                             : cpu::grad::direct::linearData(gy, weight(), gx);
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
                    } else if constexpr (
                        std::is_same_v<S,
                            Flatten> || std::is_same_v<S, Identity> || std::is_same_v<S, Add> || std::is_same_v<S, Reshape>) {
                        cpu::grad::copy(gy, gx);
                    } else if constexpr (std::is_same_v<S, Transpose>) {
                        // The inverse movement: gx = gy.permute(inverse), inverse[perm[a]] = a.
                        const std::vector<int64_t> perm = wrappedDims(spec, x.shape().ndim());
                        std::vector<int64_t> inverse(perm.size());
                        for (size_t a = 0; a < perm.size(); ++a)
                            inverse[size_t(perm[a])] = int64_t(a);
                        fast ? cpu::fast::transpose(gy, inverse, gx) : cpu::direct::transpose(gy, inverse, gx);
                    } else if constexpr (isSoftmaxKind<S>) {
                        const int64_t axis = wrapAxis(spec.dim, x.shape().ndim(), layerTypeName(spec));
                        cpu::grad::softmax(gy, m_outputs[k], gx, fast, axis, isLogSoftmax<S>);
                    } else if constexpr (std::is_same_v<S, Reduce>) {
                        cpu::grad::reduce(gy, x, m_outputs[k], spec, gx);
                    } else if constexpr (std::is_same_v<S, PReLU>) {
                        cpu::grad::preluData(gy, x, *st.weight, gx);
                    } else if constexpr (std::is_same_v<S, Binary>) {
                        cpu::grad::binaryLayerInput(spec, m_shapes.layers[k], ins, st.weight.get(), j, gy, gx);
                    } else if constexpr (std::is_same_v<S, Mul>) {
                        cpu::grad::mulInput(gy, *ins.at(1 - j), gx);
                    } else if constexpr (std::is_same_v<S, Concat>) {
                        // gy narrowed to this input's window along the joined dim (a slice's forward).
                        const int64_t dim = wrappedDim(spec, x.shape().ndim());
                        const Slice window { dim, channelOffset, channelOffset + channels };
                        fast ? cpu::fast::slice(gy, window, gx) : cpu::direct::slice(gy, window, gx);
                    } else if constexpr (std::is_same_v<S, Pad>) {
                        cpu::grad::pad(gy, spec, gx);
                    } else if constexpr (kPlainActivation<S>) {
                        cpu::grad::activation(gy, x, layer.spec, gx, fast);
                    } else if constexpr (std::is_same_v<S, Conv3d>) {
                        fast ? cpu::grad::fast::conv3dData(gy, weight(), spec, pad3, gx)
                             : cpu::grad::direct::conv3dData(gy, weight(), spec, pad3, gx);
                    } else if constexpr (std::is_same_v<S, ConvTranspose3d>) {
                        fast ? cpu::grad::fast::convTranspose3dData(gy, weight(), spec, pad3, gx)
                             : cpu::grad::direct::convTranspose3dData(gy, weight(), spec, pad3, gx);
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
                    } else if constexpr (isNormKind<S>) {
                        cpu::grad::normalizationData(gy, x, *st.weight, normPlan(spec, x.shape()), gx, fast);
                    } else if constexpr (std::is_same_v<S, Matmul>) {
                        cpu::grad::matmulLayerInput(spec, m_shapes.layers[k], ins, st.weight.get(), j, gy, gx);
                    } else if constexpr (std::is_same_v<S, Gather>) {
                        cpu::grad::gatherInput(spec, gy, gx);
                    } else {
                        static_assert(dependent_false<S>, "cpu training: a layer kind has no backward branch");
                    }
                },
                layer.spec);
            if (rounded)
                roundInPlace(gx, m_math);
            if (set)
                cpu::grad::accumulate(gx, total, fast);
            set = 1;
            ran = true;
            channelOffset += channels;
        }
        return ran;
    }

    void CpuTrainingSession::backwardWeights(size_t k, const Tensor& input)
    {
        const Layer& layer = m_net.layers[k];
        LayerState& st = m_state[k];
        const Padding2d& pad = m_shapes.layers[k].resolvedPadding;
        const Padding3d& pad3 = m_shapes.layers[k].resolvedPadding3d;
        // Mixed precision: a product's weight gradient from its input and output gradient rounded, itself in FP32.
        const bool rounded = roundsProducts(k);
        const Tensor roundedX = rounded ? roundedCopy(input, m_math) : Tensor();
        const Tensor& gy = rounded ? st.productGrad : m_grads[k]; // backwardData's, of this pass
        const Tensor& x = rounded ? roundedX : input;
        if (owned(k))
            m_ops->backwardWeights(k, x, gy, params(k));
        else if (const auto* conv = std::get_if<Conv2d>(&layer.spec))
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
        else if (isNormLayer(layer.spec))
            cpu::grad::normalizationWeights(
                gy, x, normPlan(layer.spec, x.shape()), st.gradWeight.get(), st.gradBias.get(), m_fast);
        else
            throw Error(layerLabel(m_net, k) + ": parameters without a weight gradient");
        st.productGrad = Tensor(); // its memory back until the next pass
    }

} // namespace cpu_training

using cpu_training::CpuTrainingSession;
using cpu_training::layerLabel;

std::string cpuTrainingRefusal(const Network& net)
{
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Layer& layer = net.layers[i];
        if (const auto* conv = std::get_if<Conv2d>(&layer.spec); conv && conv->fused_activation)
            return layerLabel(net, i) + ": a fused activation is unsupported in training (train the unfused network)";
        if (const auto* conv = std::get_if<Conv2d>(&layer.spec); conv && conv->fused_residual)
            return layerLabel(net, i) + ": a fused residual add is unsupported in training (train the unfused network)";
        if (std::holds_alternative<Resize>(layer.spec))
            return layerLabel(net, i) + ": resize has no backward yet (unsupported in training)";
    }
    return {};
}

std::unique_ptr<TrainingSession> makeHostTrainingSession(
    const std::string& label, const SessionOptions& options, std::unique_ptr<HostLayerOps> ops)
{
    if (!ops)
        throw Error(label + ": a host training session without its library's ops");
    return std::make_unique<CpuTrainingSession>("im2col_gemm", options, label, std::move(ops));
}

std::unique_ptr<TrainingSession> makeCpuTrainingSession(const std::string& algorithm, const SessionOptions& options)
{
    if (algorithm != "direct" && algorithm != "im2col_gemm")
        throw UnsupportedError("cpu." + algorithm
            + " has no training path (unsupported): train on cpu.direct (the reference) or cpu.im2col_gemm");
    // Every math mode the forward takes: fp16 and bf16 as mixed precision (mixed_products.h), tf32 as FP32.
    return std::make_unique<CpuTrainingSession>(algorithm, options);
}

} // namespace convscope
