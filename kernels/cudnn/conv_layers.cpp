#include "kernels/cudnn/conv_layers.h"

#include "compute/nvtx.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_convert.cuh"
#include "kernels/cudnn/graph_conv.h"
#include "kernels/cudnn/layout_kernels.cuh"
#include "kernels/cudnn/storage_kernels.cuh"
#include "kernels/cudnn/volume_kernels.cuh"

#include <algorithm>

namespace convscope::cudnn {

namespace {
    // cuDNN's mode for an activation the fusion pass put in a convolution (leaky ReLU never gets here:
    // CudnnBackend::fusesActivation refuses it).
    cudnnActivationMode_t activationMode(FusedActivation::Kind kind)
    {
        switch (kind) {
        case FusedActivation::Kind::Sigmoid:
            return CUDNN_ACTIVATION_SIGMOID;
        case FusedActivation::Kind::Tanh:
            return CUDNN_ACTIVATION_TANH;
        case FusedActivation::Kind::ELU:
            return CUDNN_ACTIVATION_ELU; // coef is ELU's alpha
        default:
            return CUDNN_ACTIVATION_RELU;
        }
    }

    double median(std::vector<double> v)
    {
        if (v.empty())
            return 0;
        std::sort(v.begin(), v.end());
        return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    }
} // namespace

size_t convScratchBytes(const LayerSpec& spec, const LayerShape& shape, bool nhwc, std::optional<DType> native)
{
    if (const auto* c = std::get_if<Conv2d>(&spec)) {
        const ConvLayout l = convLayout(*c, shape, nhwc);
        const size_t floats = gpu::DeviceArena::alignUp(l.preparedInputFloats() * 4) / 4
            + gpu::DeviceArena::alignUp(l.nhwcOutputFloats() * 4) / 4 + l.nhwcWeightFloats();
        return floats * sizeof(float);
    }
    if (const auto* t = std::get_if<ConvTranspose2d>(&spec)) {
        const ConvTransposeLayout l = convTransposeLayout(*t, shape, native);
        const size_t bytes = dtypeBytes(l.storage);
        const size_t weight = native ? size_t(l.cin) * (l.cout / l.groups) * l.kernel[0] * l.kernel[1] * bytes : 0;
        return gpu::DeviceArena::alignUp(l.fullFloats() * bytes) + weight;
    }
    return 0;
}

// --- conv2d -------------------------------------------------------------------------------------------------------

Conv2dPlan::Conv2dPlan(cudnnHandle_t h, const Conv2d& spec, const LayerShape& shape, const ConvOptions& o,
    std::optional<cudnnConvolutionFwdAlgo_t> pinned, bool fuseBias, const LayerBuffers& b, cudaStream_t stream,
    const std::string& who)
    : m_layout(convLayout(spec, shape, o.nhwc))
{
    const ConvLayout& l = m_layout;
    auto* sp = static_cast<float*>(b.scratch);
    if (l.preparedInputFloats()) {
        m_prepared = sp;
        sp += gpu::DeviceArena::alignUp(l.preparedInputFloats() * 4) / 4;
    }
    if (l.nhwc) {
        m_nhwcOut = sp;
        sp += gpu::DeviceArena::alignUp(l.nhwcOutputFloats() * 4) / 4;
        m_nhwcWeight = sp;
        // [K, C/g, R, S] → [K, R, S, C/g]: per output channel, a (C/g) × (R·S) transpose. Untimed: a network
        // kept in NHWC would store its weights this way.
        transpose(b.weight, m_nhwcWeight, l.cout, l.cin / l.groups, l.kernel[0] * l.kernel[1], stream);
        for (int k = 0; k < 4; ++k)
            m_marks.emplace_back();
    }
    describe(l, mathTypeFor(o.math), m_d);
    const void* xs = m_prepared ? m_prepared : b.x;
    const void* ws = l.nhwc ? m_nhwcWeight : b.weight;
    void* ys = l.nhwc ? static_cast<void*>(m_nhwcOut) : static_cast<void*>(b.y);
    m_residual = spec.fused_residual;
    m_lateSkip = m_residual && l.nhwc; // the skip is NCHW: added after the transpose back, the activation after it
    if (m_lateSkip)
        m_nchwOut.set(CUDNN_TENSOR_NCHW, l.n, l.cout, l.out[0], l.out[1]);
    const ConvEpilogue epilogue { b.bias, fuseBias,
        spec.fused_activation.kind == FusedActivation::Kind::ReLU && !m_lateSkip, m_residual, {} };
    if (pinned)
        m_choice = choosePinned(h, l, m_d, o, *pinned, who);
    else
        m_choice = chooseAuto(h, l, m_d, o, xs, ws, ys, epilogue);
    // The bias inside the convolution call (cudnnConvolutionBiasActivationForward) instead of a separate
    // cudnnAddTensor pass over the output: on the H200 the fused epilogue took 64→64 @512² from 2.11 to
    // 1.88 ms. Option fuse_bias=0 keeps the separate pass (to show what the fusion saves).
    // A fused ReLU (compute/fusion.h) rides in the same call with any algorithm; the other fused activations
    // run as cudnnActivationForward in place on the output, still inside the layer.
    const FusedActivation::Kind fusedAct = spec.fused_activation.kind;
    // A graph API plan (cudnn.auto's race, graph_conv.h) runs the convolution alone: bias and activation follow.
    m_fusedBias = !m_choice.graph && legacyFusesBias(epilogue, m_choice.algo);
    const bool reluInCall = m_fusedBias && epilogue.relu;
    if (m_fusedBias) {
        m_act = std::make_unique<ActivationDesc>();
        m_act->set(reluInCall ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, 0.0);
    }
    if (spec.fused_activation && !reluInCall) {
        m_epilogue = std::make_unique<ActivationDesc>();
        m_epilogue->set(activationMode(fusedAct), spec.fused_activation.param);
    }

    const AlgoChoice& c = m_choice;
    std::string note = choiceNote(c, pinned.has_value(), "bias pass it cannot fuse");
    note += ", math " + mathTypeName(c.math) + ", workspace " + gpu::mib(c.workspace);
    if (!c.overLimit.empty())
        note += "; over the workspace limit of " + gpu::mib(o.workspaceLimit) + ": " + c.overLimit
            + " (--option workspace_limit=BYTES)";
    if (b.bias)
        note += m_fusedBias
            ? std::string(", bias ") + (reluInCall ? "and relu " : "") + "fused (cudnnConvolutionBiasActivationForward)"
            : ", bias by cudnnAddTensor";
    if (m_residual)
        note += m_fusedBias && !m_lateSkip
            ? ", residual add fused (the z operand of cudnnConvolutionBiasActivationForward)"
            : std::string(", residual add by cudnnAddTensor in place")
                + (m_lateSkip ? " after the NHWC→NCHW transpose" : "");
    if (m_epilogue)
        note += ", fused activation by cudnnActivationForward in place";
    if (l.padStep)
        note += "; explicit pad step for asymmetric padding [" + std::to_string(l.pad.top) + ", "
            + std::to_string(l.pad.bottom) + ", " + std::to_string(l.pad.left) + ", " + std::to_string(l.pad.right)
            + "] (cuDNN pads both sides equally), timed with the layer";
    if (l.nhwc)
        note += "; NHWC layout: input/output transposes timed with the layer";
    m_note = note;
}

void Conv2dPlan::run(cudnnHandle_t h, const LayerBuffers& b, void* workspace, size_t workspaceBytes, cudaStream_t st)
{
    const ConvLayout& l = m_layout;
    if (l.nhwc) {
        harvest(); // the previous pass has completed (every pass ends with a synchronisation)
        m_marks[0].record(st);
    }
    const float* x = b.xf();
    if (l.padStep) {
        nvtx::Range r("cudnn pad step", "cudnn");
        padInput(x, l.n, l.cin, l.in[0], l.in[1], int(l.pad.top), int(l.pad.bottom), int(l.pad.left), int(l.pad.right),
            l.nhwc, m_prepared, st);
        x = m_prepared;
    } else if (l.nhwc) {
        nvtx::Range r("cudnn NCHW→NHWC", "cudnn");
        transpose(x, m_prepared, l.n, l.cin, l.in[0] * l.in[1], st);
        x = m_prepared;
    }
    if (l.nhwc)
        m_marks[1].record(st);
    float* y = l.nhwc ? m_nhwcOut : b.yf();
    const float* w = l.nhwc ? m_nhwcWeight : b.weight;
    if (m_choice.graph) {
        m_choice.graph->execute(h, x, w, y, workspace);
        if (b.bias)
            CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h, &kOne, m_d.bias.get(), b.bias, &kOne, m_d.y.get(), y));
    } else if (m_fusedBias) {
        // y = identity(conv(x) + 0·y + bias) in one call; cuDNN allows the identity activation only with
        // implicit_precomp_gemm, so that is the only algorithm fused. A fused residual add is its z: 1·skip.
        const bool z = m_residual && !m_lateSkip;
        CONVSCOPE_CUDNN_CHECK(cudnnConvolutionBiasActivationForward(h, &kOne, m_d.x.get(), x, m_d.w.get(), w,
            m_d.conv.get(), m_choice.algo, workspace, workspaceBytes, z ? &kOne : &kZero, m_d.y.get(), z ? b.skip : y,
            m_d.bias.get(), b.bias, m_act->get(), m_d.y.get(), y));
    } else {
        CONVSCOPE_CUDNN_CHECK(cudnnConvolutionForward(h, &kOne, m_d.x.get(), x, m_d.w.get(), w, m_d.conv.get(),
            m_choice.algo, workspace, workspaceBytes, &kZero, m_d.y.get(), y));
        if (b.bias)
            CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h, &kOne, m_d.bias.get(), b.bias, &kOne, m_d.y.get(), y));
    }
    if (m_residual && !m_lateSkip && !m_fusedBias) // the skip after the bias, before the activation
        CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h, &kOne, m_d.y.get(), b.skip, &kOne, m_d.y.get(), y));
    if (m_epilogue && !m_lateSkip)
        CONVSCOPE_CUDNN_CHECK(
            cudnnActivationForward(h, m_epilogue->get(), &kOne, m_d.y.get(), y, &kZero, m_d.y.get(), y));
    if (l.nhwc) {
        m_marks[2].record(st);
        nvtx::Range r("cudnn NHWC→NCHW", "cudnn");
        transpose(m_nhwcOut, b.yf(), l.n, l.out[0] * l.out[1], l.cout, st);
        if (m_lateSkip) {
            CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h, &kOne, m_nchwOut.get(), b.skip, &kOne, m_nchwOut.get(), b.yf()));
            if (m_epilogue)
                CONVSCOPE_CUDNN_CHECK(cudnnActivationForward(
                    h, m_epilogue->get(), &kOne, m_nchwOut.get(), b.yf(), &kZero, m_nchwOut.get(), b.yf()));
        }
        m_marks[3].record(st);
        m_marksRecorded = true;
    }
}

void Conv2dPlan::harvest() const
{
    if (!m_marksRecorded || m_marks.size() != 4)
        return;
    if (cudaEventQuery(m_marks[3].get()) != cudaSuccess) {
        (void)cudaGetLastError(); // not ready: leave it for later
        return;
    }
    m_inMs.push_back(gpu::elapsedMs(m_marks[0], m_marks[1]));
    m_convMs.push_back(gpu::elapsedMs(m_marks[1], m_marks[2]));
    m_outMs.push_back(gpu::elapsedMs(m_marks[2], m_marks[3]));
    m_marksRecorded = false;
}

std::optional<Conv2dPlan::NhwcSplit> Conv2dPlan::nhwcSplit() const
{
    if (!m_layout.nhwc)
        return std::nullopt;
    harvest();
    if (m_convMs.empty())
        return std::nullopt;
    return NhwcSplit { m_convMs.size(), median(m_inMs), median(m_convMs), median(m_outMs) };
}

// --- conv_transpose2d ---------------------------------------------------------------------------------------------

ConvTranspose2dPlan::ConvTranspose2dPlan(cudnnHandle_t h, const ConvTranspose2d& spec, const LayerShape& shape,
    const ConvOptions& o, const LayerBuffers& b, std::optional<DType> native, cudaStream_t stream)
    : m_layout(convTransposeLayout(spec, shape, native))
{
    const ConvTransposeLayout& l = m_layout;
    auto* sp = static_cast<char*>(b.scratch);
    if (l.crop)
        m_full = sp;
    m_weight = b.weight;
    if (l.native) {
        // [C_in, C_out/g, R, S] is a tensor whose channels-last form is [C_in, R, S, C_out/g]: cuDNN's NHWC filter.
        void* w = sp + gpu::DeviceArena::alignUp(l.fullFloats() * dtypeBytes(l.storage));
        gpu::toStorage(b.weight, w, Shape::nchw(l.cin, l.cout / l.groups, l.kernel[0], l.kernel[1]),
            StorageFormat { l.storage, true }, stream);
        m_weight = w;
    }
    describe(l, mathTypeFor(o.math), m_d);
    m_bwd = chooseBwdData(h, l, m_d, o, m_weight, b.x, l.crop ? m_full : b.y);
    m_note = "cudnnConvolutionBackwardData " + bwdDataAlgorithmName(m_bwd.algo)
        + (m_bwd.cached ? " (cached Find choice" : " (Find choice") + ", the same for every cudnn algorithm), math "
        + mathTypeName(m_bwd.math);
    if (l.native)
        m_note += "; " + nativeConvNote(l.storage, "NHWC", "[C_in, R, S, C_out/g]");
    if (l.crop)
        m_note += "; crop step (asymmetric padding or output_padding cuDNN cannot express): cuDNN writes "
            + std::to_string(l.fullH) + "×" + std::to_string(l.fullW) + ", cropped at (" + std::to_string(l.offH) + ", "
            + std::to_string(l.offW) + ")" + (b.bias ? " with the bias added" : "")
            + (l.native ? " (a channels-last pass of ours, FP32 math)" : "");
    else if (b.bias && l.native)
        m_note += ", FP32 bias in one pass of ours (FP32 math)";
}

void ConvTranspose2dPlan::run(
    cudnnHandle_t h, const LayerBuffers& b, void* workspace, size_t workspaceBytes, cudaStream_t st) const
{
    const ConvTransposeLayout& c = m_layout;
    void* dx = c.crop ? m_full : b.y;
    CONVSCOPE_CUDNN_CHECK(cudnnConvolutionBackwardData(h, &kOne, m_d.w.get(), m_weight, m_d.dy.get(), b.x,
        m_d.conv.get(), m_bwd.algo, workspace, workspaceBytes, &kZero, m_d.dx.get(), dx));
    if (c.native) {
        if (c.crop)
            cropVolumeChannelsLastAddBias(
                { c.n, c.cout, 1, c.fullH, c.fullW, 0, c.offH, c.offW, 1, c.out[0], c.out[1] }, c.storage, m_full,
                b.bias, b.y, st);
        else
            biasActivation(b.y, b.bias, int64_t(c.n) * c.cout * c.out[0] * c.out[1], c.cout, c.storage,
                EpilogueAct::None, 0.0f, st);
        return;
    }
    if (c.crop)
        cropAddBias(static_cast<const float*>(m_full), c.n, c.cout, c.fullH, c.fullW, c.offH, c.offW, b.bias, b.yf(),
            c.out[0], c.out[1], st);
    else if (b.bias)
        CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h, &kOne, m_d.bias.get(), b.bias, &kOne, m_d.dx.get(), b.y));
}

} // namespace convscope::cudnn
