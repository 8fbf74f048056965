// Per layer kind, what the cuda training session runs (the table is in cuda_training_session.h): the refusal, the
// plan made once in prepare (the convolutions' three geometries, the implicit GEMM tables, the split-K workspace),
// and the forward, backward-data and backward-weights launches, all on the session's stream. Our kernels only.
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/normalization.h"
#include "compute/reduce.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/training_kernels.cuh"
#include "kernels/cuda/activation_kind.h"
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/conv_transpose2d.cuh"
#include "kernels/cuda/copy_kernels.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/layer_geometry.h"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/merge.cuh"
#include "kernels/cuda/parametric_activation.cuh"
#include "kernels/cuda/pooling.cuh"
#include "kernels/cuda/softmax.cuh"
#include "kernels/cuda/training/batchnorm_training.cuh"
#include "kernels/cuda/training/channel_reduce.cuh"
#include "kernels/cuda/training/conv2d_backward_weights.cuh"
#include "kernels/cuda/training/conv2d_winograd_wgrad.cuh"
#include "kernels/cuda/training/cuda_training_session.h"
#include "kernels/cuda/training/pad_backward.cuh"
#include "kernels/cuda/training/pool2d_backward.cuh"
#include "kernels/cuda/training/softmax_backward.cuh"
#include "kernels/cuda/training/training_geometry.h"
#include "kernels/cuda/transposed_phase_kernels.cuh"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <variant>

namespace convscope::cuda {

namespace {
    using gpu::train::ActivationGrad;

    // The activations' backward kinds (training_kernels.cuh), each with its parameters. The tensor-maths kinds (gelu,
    // softplus, mish, unary) have no backward here: cudaTrainingRefusal refuses them.
    template <typename T>
    constexpr bool kActivation = layerKindOf<T>().family == KindFamily::Activation
        && !std::is_same_v<T, PReLU> && !isSoftmaxKind<T> && !isElementwiseMathKind<T>;

    template <typename T> ActivationGrad gradKind(const T& l, float* param, float* param2)
    {
        *param = 0.0f;
        *param2 = 0.0f;
        if constexpr (std::is_same_v<T, ReLU>)
            return ActivationGrad::ReLU;
        else if constexpr (std::is_same_v<T, LeakyReLU>) {
            *param = float(l.negative_slope);
            return ActivationGrad::LeakyReLU;
        } else if constexpr (std::is_same_v<T, Sigmoid>)
            return ActivationGrad::Sigmoid;
        else if constexpr (std::is_same_v<T, Tanh>)
            return ActivationGrad::Tanh;
        else if constexpr (std::is_same_v<T, ELU>) {
            *param = float(l.alpha);
            return ActivationGrad::ELU;
        } else if constexpr (std::is_same_v<T, ReLU6>)
            return ActivationGrad::ReLU6;
        else if constexpr (std::is_same_v<T, Hardswish>)
            return ActivationGrad::Hardswish;
        else if constexpr (std::is_same_v<T, Hardsigmoid>)
            return ActivationGrad::Hardsigmoid;
        else if constexpr (std::is_same_v<T, SiLU>)
            return ActivationGrad::SiLU;
        else if constexpr (std::is_same_v<T, Hardtanh>) {
            *param = float(l.min_val);
            *param2 = float(l.max_val);
            return ActivationGrad::Hardtanh;
        } else
            static_assert(dependent_false<T>, "cuda training: an activation kind has no backward");
    }
} // namespace

std::string cudaTrainingRefusal(const Network& net, const ShapeReport& shapes, size_t i)
{
    const LayerSpec& spec = net.layers[i].spec;
    const LayerShape& s = shapes.layers[i];
    if (isVolumeLayer(spec) || s.in.isVolume() || s.out.isVolume())
        return std::string(layerKind(spec).type)
            + " on volumes has no backward on cuda yet (the volume kinds are unsupported; train on cpu.direct)";
    if (s.in.rank == 6 || s.out.rank == 6) // the kernels here read [N, C, H, W] views; rank 6 folds two axes into d
        return std::string(layerKind(spec).type)
            + " on a rank-6 tensor has no backward on cuda yet (unsupported; train on cpu.direct)";
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    if (s.in.numel() > kMax || s.out.numel() > kMax)
        return "tensors of more than 2^31 elements are unsupported (32-bit indexing)";
    if (const auto* c = std::get_if<Conv2d>(&spec)) {
        if (c->fused_activation)
            return "a fused activation is unsupported in training (train the unfused network)";
        if (c->fused_residual)
            return "a fused residual add is unsupported in training (train the unfused network)";
        if (c->groups > 0 && s.out.c * (s.in.c / c->groups) * c->kernel_size[0] * c->kernel_size[1] > kMax)
            return "weights of more than 2^31 elements are unsupported (32-bit indexing)";
    }
    if (std::holds_alternative<Resize>(spec))
        return "resize has no backward on cuda yet (unsupported; the CPU refuses it too)";
    if (std::visit([](const auto& l) { return isElementwiseMathKind<std::decay_t<decltype(l)>>; }, spec)
        || std::holds_alternative<Binary>(spec))
        return std::string(layerKind(spec).type)
            + " has no backward on cuda yet (unsupported; train on cpu.direct or cpu.im2col_gemm)";
    if (isNormLayer(spec))
        return std::string(layerKind(spec).type) + " has no backward on cuda yet (unsupported; the CPU refuses it too)";
    if (std::holds_alternative<Reduce>(spec))
        return "reduce has no backward on cuda yet (unsupported; train on cpu.direct or cpu.im2col_gemm)";
    if (std::holds_alternative<Transpose>(spec))
        return "transpose has no backward on cuda yet (unsupported; train on cpu.direct or cpu.im2col_gemm)";
    if (std::holds_alternative<Matmul>(spec) || std::holds_alternative<Gather>(spec))
        return std::string(layerKind(spec).type)
            + " has no backward on cuda yet (unsupported; train on cpu.direct or cpu.im2col_gemm)";
    if (std::holds_alternative<Linear>(spec) && !linearRowsAreBatch(s.in))
        return "linear on the last axis of " + s.in.str()
            + " has no backward on cuda yet (only [N, F]; train on cpu.direct or cpu.im2col_gemm)";
    if (const auto* cat = std::get_if<Concat>(&spec); cat && wrappedDim(*cat, s.out.ndim()) != 1)
        return "concat along dim " + std::to_string(cat->dim)
            + " has no backward on cuda yet (only along the channels; train on cpu.direct or cpu.im2col_gemm)";
    return {};
}

void CudaTrainingSession::planLayer(size_t i)
{
    CudaTrainLayer& t = m_layers[i];
    const LayerShape& s = m_shapes.layers[i];
    const cudaStream_t st = m_stream->get();
    const auto wgradNeeds = [&](const ConvGeometry& g) {
        m_workspaceBytes = std::max(m_workspaceBytes, train::conv2dWgradWorkspaceBytes(g, m_sms));
    };
    // The per-channel reductions' partials (channel_reduce.cuh, batchnorm_training.cuh: bias, gate and prelu slope
    // gradients, batch norm) share the same workspace: every launch runs on the session's one stream, no two overlap.
    const auto reduceNeeds = [&](size_t bytes) { m_workspaceBytes = std::max(m_workspaceBytes, bytes); };
    const auto biasNeeds = [&] { // the bias gradient: Σ of gy per output channel
        reduceNeeds(train::channelSumsWorkspaceBytes(s.out.n, s.out.c, s.out.h * s.out.w, m_sms));
    };
    // An implicit GEMM of geometry g: its scratch, for whichever variant the launcher picks (g.igemmPipe = 1). A table
    // is built once here; the pipelined tiles' transposed weights are remade before every launch (gemmRun), since
    // the update changes the weights.
    const auto gemmTable = [&](ConvGeometry& g, gpu::DeviceBuffer& scratch) {
        g.igemmPipe = 1;
        const size_t bytes = conv2dImplicitGemmScratchBytes(g, m_sms);
        scratch = gpu::DeviceBuffer(bytes, "train: an implicit GEMM's table or transposed weights");
        if (!conv2dImplicitGemmPreparesWeights(g, m_sms))
            conv2dImplicitGemmPrepare(g, nullptr, scratch.get(), m_sms, st);
    };
    const auto variantOf = [&](const ConvGeometry& g) { return conv2dImplicitGemmVariant(g, m_sms); };
    const auto onTensorCoresNote = [&](const ConvGeometry& g) {
        return conv2dTensorCoreNote(g, tcType(), m_tcOptions, m_tcDevice) + " on channels-last " + dtypeName(tcType())
            + " copies";
    };
    // The transposed convolution tg as stride-phase implicit GEMMs, where every phase is an ordinary convolution.
    const auto phaseGemmOf = [&](const ConvGeometry& tg) {
        if (!gemmFamily() || !transposedPhaseGemmApplies(tg))
            return;
        t.phases = makeTransposedPhaseGemm(tg, m_sms, m_winogradTile);
        t.phaseGemm = true;
        t.phaseWeights = gpu::DeviceBuffer(t.phases.weightFloats * sizeof(float), "train: a phase's gathered taps");
        t.phaseScratch = gpu::DeviceBuffer(t.phases.scratchBytes, "train: the phases' implicit GEMM scratch");
        t.phaseTemp = gpu::DeviceBuffer(t.phases.tempFloats * sizeof(float), "train: a phase's staged outputs");
        transposedPhaseGemmPrepare(t.phases, t.phaseScratch.get(), m_sms, st);
    };
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (std::is_same_v<T, Conv2d>) {
                t.fwd = makeGeometry(int(s.in.n), int(s.in.c), int(s.in.h), int(s.in.w), int(s.out.c), int(s.out.h),
                    int(s.out.w), geometryOf(l, s));
                t.fwd.tf32 = tensorCoreMode(); // the geometries below are made from it
                t.data = transposedOf(t.fwd);
                t.wgrad = t.fwd;
                if (m_tcKernel) // may take the forward and the backward-data
                    planTensorCoreKernel(i);
                t.fwdGemm = gemmFamily() && !t.tcFwd;
                t.dataGemm = gemmFamily() && convTranspose2dPhaseApplies(t.data);
                if (m_winogradTile && conv2dWinogradRefusal(t.fwd, m_winogradTile).empty()) {
                    t.fwdWinograd = m_winogradTile; // the weights are transformed at every launch: they change
                    t.fwdScratch = gpu::DeviceBuffer(
                        conv2dWinogradScratchBytes(t.fwd, t.fwdWinograd), "train: Winograd's transformed tiles");
                    conv2dWinogradPrepare(t.fwd, t.fwdWinograd, t.fwdScratch.get(), st);
                } else if (t.fwdGemm) {
                    gemmTable(t.fwd, t.fwdScratch);
                }
                if (!t.tcData)
                    phaseGemmOf(t.data);
                t.wgradWinograd = m_winogradWgrad && train::conv2dWinogradWgradRefusal(t.wgrad).empty();
                wgradNeeds(t.wgradWinograd ? train::conv2dWinogradWgradGemm(t.wgrad) : t.wgrad);
                biasNeeds();
                t.note = std::string(t.tcFwd     ? "forward: " + onTensorCoresNote(t.tcFwdGeometry)
                                 : t.fwdWinograd ? "forward: " + conv2dWinogradNote(t.fwd, t.fwdWinograd, m_sms)
                                 : t.fwdGemm     ? "forward: " + variantOf(t.fwd)
                                                 : "forward: direct")
                    + "; backward-data: "
                    + (t.tcData ? "the forward kernel on the flipped weight, " + onTensorCoresNote(t.tcDataGeometry)
                            : t.phaseGemm ? transposedPhaseGemmNote(t.phases, m_sms)
                                          : std::string("transposed convolution, ")
                                + (t.dataGemm ? "stride-phase form" : "gather form"))
                    + "; "
                    + (t.wgradWinograd ? train::conv2dWinogradWgradNote(t.wgrad, m_sms)
                                       : train::conv2dWgradNote(t.wgrad, m_sms));
            } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                t.fwd = makeGeometry(int(s.in.n), int(s.in.c), int(s.in.h), int(s.in.w), int(s.out.c), int(s.out.h),
                    int(s.out.w), geometryOf(l, s));
                t.fwd.tf32 = tensorCoreMode();
                // The adjoint: a convolution from the output [n, k, p, q] to the input [n, c, h, w], weight
                // [c, k/groups, r, s] read as conv2d's [K = c, C/G = k/groups, r, s].
                t.data = transposedOf(t.fwd);
                t.wgrad = t.data; // dy as its input, x as its output gradient
                t.fwdGemm = gemmFamily() && convTranspose2dPhaseApplies(t.fwd);
                if (m_tcKernel) // may take the backward-data
                    planTensorCoreKernel(i);
                t.dataGemm = gemmFamily() && !t.tcData;
                if (t.dataGemm)
                    gemmTable(t.data, t.dataScratch);
                phaseGemmOf(t.fwd);
                wgradNeeds(t.wgrad);
                biasNeeds();
                t.note = std::string(t.phaseGemm ? "forward: " + transposedPhaseGemmNote(t.phases, m_sms)
                                 : t.fwdGemm     ? "forward: stride-phase form"
                                                 : "forward: gather form")
                    + "; backward-data: conv2d "
                    + (t.tcData          ? onTensorCoresNote(t.tcDataGeometry)
                            : t.dataGemm ? variantOf(t.data)
                                         : "direct")
                    + "; roles swapped for the " + train::conv2dWgradNote(t.wgrad, m_sms);
            } else if constexpr (std::is_same_v<T, Linear>) {
                const int rows = int(s.in.n), in = int(s.in.c * s.in.h * s.in.w), out = int(s.out.c);
                t.fwd = linearGeometry(rows, in, out);
                t.data = transposedOf(t.fwd);
                t.wgrad = t.fwd;
                const size_t bytes = linearScratchBytes(rows, in, out, m_sms);
                if (bytes > 0)
                    t.fwdScratch = gpu::DeviceBuffer(bytes, "train: linear's split-K partial sums");
                // Backward-data dx = dy · W is linear's own GEMM with the weight transposed to [in, out].
                const size_t dataBytes = linearScratchBytes(rows, out, in, m_sms);
                if (dataBytes > 0)
                    t.dataScratch = gpu::DeviceBuffer(dataBytes, "train: linear's backward-data split-K sums");
                t.phaseWeights = gpu::DeviceBuffer(t.weightCount * sizeof(float), "train: linear's transposed weight");
                wgradNeeds(t.wgrad);
                biasNeeds();
                t.note = "forward: " + linearNote(rows, in, out, m_sms)
                    + "; backward-data: " + linearNote(rows, out, in, m_sms) + " on the transposed weight; "
                    + train::conv2dWgradNote(t.wgrad, m_sms);
            } else if constexpr (std::is_same_v<T, PReLU>) {
                reduceNeeds(
                    train::preluSlopeGradientWorkspaceBytes(t.weightCount, s.in.n, s.in.c, s.in.h * s.in.w, m_sms));
            } else if constexpr (std::is_same_v<T, BatchNorm2d>) {
                reduceNeeds(train::batchNormTrainWorkspaceBytes(s.in.n, s.in.c, s.in.h * s.in.w, m_sms));
            } else if constexpr (std::is_same_v<T, Mul>) {
                if (s.ins[0] != s.out || s.ins[1] != s.out) // a broadcast gate: its gradient is per-plane sums
                    reduceNeeds(train::channelSumsWorkspaceBytes(1, s.out.n * s.out.c, s.out.h * s.out.w, m_sms));
            } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                t.mask = gpu::DeviceBuffer(size_t(s.out.numel()) * sizeof(int), "train: maxpool2d's window argmax");
                t.note = "forward: each window's argmax kept beside its maximum; backward: a gather per input element";
            } else if constexpr (std::is_same_v<T, Dropout>) {
                if (!(l.p >= 0 && l.p < 1))
                    throw InputError(
                        trainingLayerLabel(m_net, i) + ": dropout's p must be in [0, 1), got " + std::to_string(l.p));
                t.mask = gpu::DeviceBuffer(size_t(s.out.numel()) * sizeof(float), "train: a dropout mask");
                t.hostMask.assign(size_t(s.out.numel()), 0.0f);
                t.note = "the mask drawn on the host from ConvScope's seeded generator (the CPU's masks exactly)";
            } else if constexpr (std::is_same_v<T,
                                     Flatten> || std::is_same_v<T, Reshape> || std::is_same_v<T, Identity>) {
                t.note = "a view (no launch)";
            }
        },
        m_net.layers[i].spec);
    if (rounds(i)) {
        const std::string mode = mathModeName(m_options.math);
        t.roundedIn = gpu::DeviceBuffer(size_t(s.in.numel()) * sizeof(float), "train: a product's rounded input");
        t.roundedWeight = gpu::DeviceBuffer(size_t(t.weightCount) * sizeof(float), "train: a product's rounded weight");
        t.note += "; input, weight and output gradient rounded to " + mode + ", output and input gradient "
            + "rounded in place";
    }
}

void CudaTrainingSession::forward(size_t i)
{
    CudaTrainLayer& t = m_layers[i];
    if (t.tcFwd) {
        tensorCoreForward(i);
        return;
    }
    const LayerShape& s = m_shapes.layers[i];
    const cudaStream_t st = m_stream->get();
    const auto* x = static_cast<const float*>(in(i, 0)); // FP32 storage, in every math mode
    auto* y = static_cast<float*>(m_out[i]);
    const float* w = t.weight.floats();
    const float* b = t.bias.get() ? t.bias.floats() : nullptr;
    const bool rounded = rounds(i); // mixed precision: a product reads its input and weight rounded
    if (rounded) {
        gpu::train::roundThrough(x, t.roundedIn.floats(), s.in.numel(), halfType(), st);
        gpu::train::roundThrough(w, t.roundedWeight.floats(), t.weightCount, halfType(), st);
        x = t.roundedIn.floats();
        w = t.roundedWeight.floats();
    }
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (std::is_same_v<T, Conv2d>) {
                if (t.fwdWinograd)
                    conv2dWinograd(t.fwd, t.fwdWinograd, x, w, b, y, t.fwdScratch.get(), m_sms, st);
                else if (t.fwdGemm)
                    gemmRun(t.fwd, x, w, b, y, t.fwdScratch.get());
                else
                    conv2dDirect(t.fwd, x, w, b, y, st);
            } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                if (t.phaseGemm)
                    transposedPhaseGemm(t.phases, x, w, b, y, t.phaseWeights.floats(), t.phaseScratch.get(),
                        t.phaseTemp.floats(), m_sms, st);
                else if (t.fwdGemm)
                    convTranspose2dPhase(t.fwd, x, w, b, y, st);
                else
                    convTranspose2dGather(t.fwd, x, w, b, y, st);
            } else if constexpr (std::is_same_v<T, Linear>) {
                linear(t.fwd.n, t.fwd.c, t.fwd.k, x, w, b, y, t.fwdScratch.get(), m_sms, st);
            } else if constexpr (std::is_same_v<T, BatchNorm2d>) {
                train::batchNormTrainForward(int(s.in.n), int(s.in.c), s.in.h * s.in.w, x,
                    l.affine ? t.weight.floats() : nullptr, l.affine ? t.bias.floats() : nullptr, l.eps,
                    m_train.batchNormMomentum, t.mean.floats(), t.var.floats(), static_cast<double*>(t.saveMean.get()),
                    static_cast<double*>(t.saveInvStd.get()), y, m_workspace.get(), m_sms, st);
            } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                train::maxPool2dTrainForward(poolGeometry(s, l.kernel_size, l.effectiveStride(), l.dilation),
                    DType::F32, x, y, static_cast<int*>(t.mask.get()), st);
            } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                PoolGeometry g = poolGeometry(s, l.kernel_size, l.effectiveStride(), { 1, 1 });
                g.countIncludePad = l.count_include_pad;
                g.divisorOverride = l.divisor_override ? int(*l.divisor_override) : 0;
                avgPool2d(g, x, y, st);
            } else if constexpr (std::is_same_v<T, GlobalAvgPool2d>) {
                globalAvgPool2d(int(s.in.n * s.in.c), int(s.in.h * s.in.w), x, y, st);
            } else if constexpr (isSoftmaxKind<T>) { // any axis, as [outer, size, inner]
                const AxisView v = softmaxView(s.in, l.dim);
                softmaxAxis(v.outer, v.size, v.inner, isLogSoftmax<T>, DType::F32, x, y, st);
            } else if constexpr (std::is_same_v<T, Hardtanh>) {
                hardtanh(float(l.min_val), float(l.max_val), s.in.numel(), x, y, st);
            } else if constexpr (std::is_same_v<T, PReLU>) {
                prelu(w, t.weightCount, s.in.n, s.in.c, s.in.h * s.in.w, x, y, st);
            } else if constexpr (kActivation<T>) {
                float param = 0;
                const ActivationKind kind = activationKindOf(l, &param);
                activation(kind, param, s.in.numel(), x, y, st);
            } else if constexpr (std::is_same_v<T, Add>) {
                std::vector<const float*> xs;
                for (size_t j = 0; j < s.ins.size(); ++j)
                    xs.push_back(static_cast<const float*>(in(i, j)));
                addTensors(xs, s.out.numel(), y, st);
            } else if constexpr (std::is_same_v<T, Mul>) {
                const bool gateFirst = s.ins[0] != s.out;
                const bool broadcast = s.ins[gateFirst ? 0 : 1] != s.out;
                mulTensors(static_cast<const float*>(in(i, gateFirst ? 1 : 0)),
                    static_cast<const float*>(in(i, gateFirst ? 0 : 1)), s.out.numel(),
                    broadcast ? s.out.h * s.out.w : 0, y, st);
            } else if constexpr (std::is_same_v<T, Concat>) {
                std::vector<const float*> xs;
                std::vector<long long> channels;
                for (size_t j = 0; j < s.ins.size(); ++j) {
                    xs.push_back(static_cast<const float*>(in(i, j)));
                    channels.push_back(s.ins[j].c);
                }
                concatChannels(xs, channels, s.out.n, s.out.h * s.out.w, y, st);
            } else if constexpr (std::is_same_v<T, Pad>) {
                pad2d(x, s.in.n * s.in.c, int(s.in.h), int(s.in.w), int(l.padding[0]), int(l.padding[2]), int(s.out.h),
                    int(s.out.w), padMode(l.mode), float(l.value), y, st);
            } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                channelShuffle(x, s.in.n, s.in.c, l.groups, s.in.h * s.in.w, 4, y, st);
            } else if constexpr (std::is_same_v<T, Slice>) {
                const AxisRuns r = axisRuns(s.in, l.dim, false);
                sliceAxis(x, r.outer, r.size, r.inner, l.start, l.end, 4, y, st);
            } else if constexpr (std::is_same_v<T, Dropout>) {
                drawDropoutMask(l.p, dropoutMaskSeed(m_train.dropoutSeed, m_step, i), t.hostMask);
                CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
                    t.mask.get(), t.hostMask.data(), t.hostMask.size() * sizeof(float), cudaMemcpyHostToDevice, st));
                mulTensors(x, t.mask.floats(), s.out.numel(), 0, y, st);
            } else if constexpr (std::is_same_v<T,
                                     Flatten> || std::is_same_v<T, Reshape> || std::is_same_v<T, Identity>) {
                // a view: the output is the input's buffer
            } else {
                throw UnsupportedError(m_prefix + ": " + trainingLayerLabel(m_net, i) + " is unsupported in training");
            }
        },
        m_net.layers[i].spec);
    if (rounded) // ... and writes its output rounded
        gpu::train::roundThrough(y, y, s.out.numel(), halfType(), st);
}

void CudaTrainingSession::backwardData(size_t k, size_t j, void* gxStorage)
{
    auto* gx = static_cast<float*>(gxStorage);
    CudaTrainLayer& t = m_layers[k];
    const LayerShape& s = m_shapes.layers[k];
    const cudaStream_t st = m_stream->get();
    const auto* x = static_cast<const float*>(in(k, 0));
    const auto* y = static_cast<const float*>(m_out[k]);
    const bool rounded = rounds(k); // mixed precision: a product reads its output gradient and weight rounded
    m_roundedGradOf = SIZE_MAX; // rounded afresh: this pass's gradient
    if (t.tcData) {
        tensorCoreBackwardData(k, gx);
        return;
    }
    const float* gy = rounded ? roundedGradient(k) : static_cast<const float*>(m_grad[k]);
    const float* w = rounded ? t.roundedWeight.floats() : t.weight.floats();
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (std::is_same_v<T, Conv2d>) {
                if (t.phaseGemm)
                    transposedPhaseGemm(t.phases, gy, w, nullptr, gx, t.phaseWeights.floats(), t.phaseScratch.get(),
                        t.phaseTemp.floats(), m_sms, st);
                else if (t.dataGemm)
                    convTranspose2dPhase(t.data, gy, w, nullptr, gx, st);
                else
                    convTranspose2dGather(t.data, gy, w, nullptr, gx, st);
            } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                if (t.dataGemm)
                    gemmRun(t.data, gy, w, nullptr, gx, t.dataScratch.get());
                else
                    conv2dDirect(t.data, gy, w, nullptr, gx, st);
            } else if constexpr (std::is_same_v<T, Linear>) {
                // [out, in] → [in, out]: a 1×1 layer's tap gather (transposed_phase_kernels.cuh) is the transpose.
                gatherPhaseTaps(
                    1, t.fwd.k, t.fwd.c, 1, 1, 1, flatAxis(), flatAxis(), flatAxis(), w, t.phaseWeights.floats(), st);
                linear(t.fwd.n, t.fwd.k, t.fwd.c, gy, t.phaseWeights.floats(), nullptr, gx, t.dataScratch.get(), m_sms,
                    st);
            } else if constexpr (std::is_same_v<T, PReLU>) {
                gpu::train::preluBackwardData(w, t.weightCount, s.in.n, s.in.c, s.in.h * s.in.w, x, gy, gx, st);
            } else if constexpr (kActivation<T>) {
                float param = 0, param2 = 0;
                const ActivationGrad kind = gradKind(l, &param, &param2);
                gpu::train::activationBackward(kind, param, param2, x, gy, gx, s.in.numel(), st);
            } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                train::maxPool2dBackward(poolGeometry(s, l.kernel_size, l.effectiveStride(), l.dilation), DType::F32,
                    static_cast<const int*>(t.mask.get()), gy, gx, st);
            } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                PoolGeometry g = poolGeometry(s, l.kernel_size, l.effectiveStride(), { 1, 1 });
                g.countIncludePad = l.count_include_pad;
                g.divisorOverride = l.divisor_override ? int(*l.divisor_override) : 0;
                train::avgPool2dBackward(g, gy, gx, st);
            } else if constexpr (std::is_same_v<T, GlobalAvgPool2d>) {
                train::globalAvgPool2dBackward(s.in.n * s.in.c, s.in.h * s.in.w, gy, gx, st);
            } else if constexpr (isSoftmaxKind<T>) {
                const AxisView v = softmaxView(s.in, l.dim);
                train::softmaxBackward(int(v.outer), int(v.size), v.inner, y, gy, gx, st, isLogSoftmax<T>);
            } else if constexpr (
                std::is_same_v<T,
                    Add> || std::is_same_v<T, Flatten> || std::is_same_v<T, Reshape> || std::is_same_v<T, Identity>) {
                CONVSCOPE_CUDA_CHECK(
                    cudaMemcpyAsync(gx, gy, size_t(s.ins[j].numel()) * sizeof(float), cudaMemcpyDeviceToDevice, st));
            } else if constexpr (std::is_same_v<T, Mul>) {
                const auto* other = static_cast<const float*>(in(k, 1 - j));
                const long long plane = s.out.h * s.out.w;
                if (s.ins[j] == s.out) // the full factor: gy · the other (broadcast when it is the gate)
                    mulTensors(gy, other, s.out.numel(), s.ins[1 - j] != s.out ? plane : 0, gx, st);
                else // the gate [N, C, 1, 1]: Σ over each plane of gy · the full factor
                    train::channelSums(gy, other, 1, s.out.n * s.out.c, plane, gx, m_workspace.get(), m_sms, st);
            } else if constexpr (std::is_same_v<T, Dropout>) {
                mulTensors(gy, t.mask.floats(), s.out.numel(), 0, gx, st);
            } else if constexpr (std::is_same_v<T, Concat>) {
                int64_t offset = 0;
                for (size_t q = 0; q < j; ++q)
                    offset += s.ins[q].c;
                const size_t plane = size_t(s.out.h * s.out.w) * sizeof(float);
                CONVSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(gx, size_t(s.ins[j].c) * plane, gy + offset * s.out.h * s.out.w,
                    size_t(s.out.c) * plane, size_t(s.ins[j].c) * plane, size_t(s.out.n), cudaMemcpyDeviceToDevice,
                    st));
            } else if constexpr (std::is_same_v<T, Pad>) {
                train::pad2dBackward(gy, s.in.n * s.in.c, int(s.in.h), int(s.in.w), int(l.padding[0]),
                    int(l.padding[2]), int(s.out.h), int(s.out.w), padMode(l.mode), gx, st);
            } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                // The inverse permutation: the shuffle with C / groups groups.
                channelShuffle(gy, s.in.n, s.in.c, s.in.c / l.groups, s.in.h * s.in.w, 4, gx, st);
            } else if constexpr (std::is_same_v<T, Slice>) {
                const AxisRuns r = axisRuns(s.in, l.dim, false);
                const size_t run = size_t((l.end - l.start) * r.inner) * sizeof(float);
                CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(gx, 0, size_t(s.in.numel()) * sizeof(float), st));
                CONVSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(gx + l.start * r.inner, size_t(r.size * r.inner) * sizeof(float),
                    gy, run, run, size_t(r.outer), cudaMemcpyDeviceToDevice, st));
            } else {
                throw Error(trainingLayerLabel(m_net, k) + ": no backward-data on cuda");
            }
        },
        m_net.layers[k].spec);
    if (rounded) // ... and writes its input gradient rounded
        gpu::train::roundThrough(gx, gx, s.ins[j].numel(), halfType(), st);
}

// The gradients go where gW / gB point: the layer's own buffers, or under data parallel its windows of a bucket.
void CudaTrainingSession::backwardWeights(size_t k)
{
    CudaTrainLayer& t = m_layers[k];
    const LayerShape& s = m_shapes.layers[k];
    const cudaStream_t st = m_stream->get();
    // Mixed precision: a product's weight and bias gradients (FP32) from its input and output gradient rounded.
    const bool rounded = rounds(k);
    const auto* x = rounded ? t.roundedIn.floats() : static_cast<const float*>(in(k, 0));
    const float* gy = rounded ? roundedGradient(k) : static_cast<const float*>(m_grad[k]);
    float* ws = m_workspace.get() ? m_workspace.floats() : nullptr;
    const LayerSpec& spec = m_net.layers[k].spec;
    if (t.wgradWinograd)
        train::conv2dWinogradBackwardWeights(
            t.wgrad, x, gy, static_cast<float*>(t.gW), m_winogradWgradScratch.get(), ws, m_sms, st);
    else if (std::holds_alternative<Conv2d>(spec) || std::holds_alternative<Linear>(spec))
        train::conv2dBackwardWeights(t.wgrad, x, gy, static_cast<float*>(t.gW), ws, m_sms, st);
    else if (std::holds_alternative<ConvTranspose2d>(spec)) // roles swapped: dy is the convolution's input
        train::conv2dBackwardWeights(t.wgrad, gy, x, static_cast<float*>(t.gW), ws, m_sms, st);
    else if (std::holds_alternative<PReLU>(spec))
        train::preluSlopeGradient(t.weightCount, s.in.n, s.in.c, s.in.h * s.in.w, x, gy, static_cast<float*>(t.gW),
            m_workspace.get(), m_sms, st);
    else
        throw Error(trainingLayerLabel(m_net, k) + ": parameters without a weight gradient");
    if (t.trainBias) // Σ of the output's gradient over the batch and the positions, per output channel
        train::channelSums(
            gy, nullptr, s.out.n, s.out.c, s.out.h * s.out.w, static_cast<float*>(t.gB), m_workspace.get(), m_sms, st);
    m_roundedGradOf = SIZE_MAX; // the next pass's output gradient is another
}

void CudaTrainingSession::batchNormBackward(size_t k, void* gxStorage)
{
    auto* gx = static_cast<float*>(gxStorage);
    CudaTrainLayer& t = m_layers[k];
    const LayerShape& s = m_shapes.layers[k];
    const auto& spec = std::get<BatchNorm2d>(m_net.layers[k].spec);
    train::batchNormTrainBackward(int(s.in.n), int(s.in.c), s.in.h * s.in.w, static_cast<const float*>(in(k, 0)),
        static_cast<const float*>(m_grad[k]), spec.affine ? t.weight.floats() : nullptr,
        static_cast<const double*>(t.saveMean.get()), static_cast<const double*>(t.saveInvStd.get()), gx,
        t.trainWeight ? static_cast<float*>(t.gW) : nullptr, t.trainBias ? static_cast<float*>(t.gB) : nullptr,
        m_workspace.get(), m_sms, m_stream->get());
}

} // namespace convscope::cuda
