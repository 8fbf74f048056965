#include "kernels/cudnn/native_layers.h"

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/storage_convert.cuh"
#include "kernels/cudnn/graph_conv.h"
#include "kernels/cudnn/volume_kernels.cuh"

#include <cstdio>

namespace convscope::cudnn {

namespace {

    EpilogueAct epilogueAct(FusedActivation::Kind k)
    {
        switch (k) {
        case FusedActivation::Kind::ReLU:
            return EpilogueAct::ReLU;
        case FusedActivation::Kind::Sigmoid:
            return EpilogueAct::Sigmoid;
        case FusedActivation::Kind::Tanh:
            return EpilogueAct::Tanh;
        case FusedActivation::Kind::ELU:
            return EpilogueAct::ELU;
        default:
            return EpilogueAct::None; // leaky ReLU never gets here: CudnnBackend::fusesActivation refuses it
        }
    }

    // The pad step of an image: a volume of depth 1.
    Pad3d padOf(const ConvLayout& l)
    {
        return { l.n, l.cin, 1, l.in[0], l.in[1], 0, 0, int(l.pad.top), int(l.pad.bottom), int(l.pad.left),
            int(l.pad.right) };
    }
} // namespace

size_t nativeConvScratchBytes(const Conv2d& spec, const LayerShape& shape, DType storage)
{
    const ConvLayout l = nativeConvLayout(spec, shape, storage);
    const size_t bytes = dtypeBytes(storage);
    return gpu::DeviceArena::alignUp(l.nhwcWeightFloats() * bytes) + gpu::DeviceArena::alignUp(size_t(l.cout) * bytes)
        + l.nativePaddedBytes();
}

std::unique_ptr<NativeConvPlan> planNativeConv(cudnnHandle_t h, const Conv2d& spec, const LayerShape& shape, DType type,
    const ConvOptions& o, std::optional<cudnnConvolutionFwdAlgo_t> pinned, bool fuseBias, const LayerBuffers& b,
    cudaStream_t stream, const std::string& who)
{
    auto p = std::make_unique<NativeConvPlan>();
    p->layout = nativeConvLayout(spec, shape, type);
    const ConvLayout& l = p->layout;
    auto* sp = static_cast<char*>(b.scratch);
    // [K, C/g, R, S] is a tensor whose channels-last form is [K, R, S, C/g]: toStorage converts and permutes.
    const StorageFormat format { type, true };
    gpu::toStorage(b.weight, sp, Shape::nchw(l.cout, l.cin / l.groups, l.kernel[0], l.kernel[1]), format, stream);
    p->weight = sp;
    char* biasAt = sp + gpu::DeviceArena::alignUp(l.nhwcWeightFloats() * dtypeBytes(type));
    if (b.bias && type != DType::F32) {
        gpu::convertValues(b.bias, biasAt, l.cout, type, stream);
        p->bias = biasAt;
    } else {
        p->bias = b.bias;
    }
    // cuDNN reads the padded copy (padding 0 in the descriptors) when the padding is asymmetric.
    const void* x = b.x;
    if (l.padStep) {
        p->padded = biasAt + gpu::DeviceArena::alignUp(size_t(l.cout) * dtypeBytes(type));
        padVolumeChannelsLast(padOf(l), type, b.x, p->padded, stream);
        x = p->padded;
    }
    describe(l, mathTypeFor(o.math), p->d);
    const EpilogueAct act = epilogueAct(spec.fused_activation.kind);
    p->actParam = float(spec.fused_activation.param);
    ConvEpilogue epilogue { p->bias, fuseBias, act == EpilogueAct::ReLU, b.skip != nullptr, {} };
    if (b.bias || b.skip || act != EpilogueAct::None)
        epilogue.pass
            = [y = b.y, bias = b.bias, total = shape.out.numel(), k = l.cout, type, act, param = p->actParam, stream,
                  skip = b.skip] { biasActivation(y, bias, total, k, type, act, param, stream, skip); };
    p->choice
        = pinned ? choosePinned(h, l, p->d, o, *pinned, who) : chooseAuto(h, l, p->d, o, x, p->weight, b.y, epilogue);
    p->fusedBias = !p->choice.graph && legacyFusesBias(epilogue, p->choice.algo);
    const bool reluInCall = p->fusedBias && epilogue.relu;
    if (p->fusedBias) {
        p->act = std::make_unique<ActivationDesc>();
        p->act->set(reluInCall ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, 0.0);
    }
    p->passAct = reluInCall ? EpilogueAct::None : act;
    // A fused residual add (compute/fusion.h, b.skip) is the fused call's z operand, else a term of our pass.
    p->pass = ((b.bias || b.skip) && !p->fusedBias) || p->passAct != EpilogueAct::None;

    const AlgoChoice& c = p->choice;
    const std::string tname = dtypeName(type);
    std::string note = choiceNote(c, pinned.has_value(), "epilogue pass");
    note += "; " + nativeConvNote(type, "NHWC", "[K, R, S, C/g]") + ", math " + mathTypeName(c.math) + ", workspace "
        + gpu::mib(c.workspace);
    if (!c.overLimit.empty())
        note += "; over the workspace limit of " + gpu::mib(o.workspaceLimit) + ": " + c.overLimit
            + " (--option workspace_limit=BYTES)";
    if (b.bias && p->fusedBias)
        note += std::string(", bias ") + (reluInCall ? "and relu " : "")
            + "fused (cudnnConvolutionBiasActivationForward, bias in " + tname + ")";
    if (p->pass)
        note += std::string(", ") + (b.bias && !p->fusedBias ? "FP32 bias " : "")
            + (b.bias && !p->fusedBias && p->passAct != EpilogueAct::None ? "and " : "")
            + (p->passAct != EpilogueAct::None ? "fused activation " : "") + "in one pass of ours (FP32 math)";
    if (b.skip)
        note += p->fusedBias ? ", residual add fused (the z operand of cudnnConvolutionBiasActivationForward)"
                             : ", residual add in our pass";
    if (l.padStep)
        note += "; pad step for asymmetric padding [" + std::to_string(l.pad.top) + ", " + std::to_string(l.pad.bottom)
            + ", " + std::to_string(l.pad.left) + ", " + std::to_string(l.pad.right) + "] in " + tname
            + " (a copy of ours; cuDNN pads both sides equally), timed with the layer";
    p->note = note;
    return p;
}

void runNativeConv(const NativeConvPlan& p, cudnnHandle_t h, const LayerBuffers& b, void* workspace,
    size_t workspaceBytes, cudaStream_t stream)
{
    const ConvDescriptors& d = p.d;
    const void* x = b.x;
    if (p.padded) {
        padVolumeChannelsLast(padOf(p.layout), p.layout.storage, b.x, p.padded, stream);
        x = p.padded;
    }
    if (p.choice.graph) {
        p.choice.graph->execute(h, x, p.weight, b.y, workspace);
    } else if (p.fusedBias) {
        CONVSCOPE_CUDNN_CHECK(cudnnConvolutionBiasActivationForward(h, &kOne, d.x.get(), x, d.w.get(), p.weight,
            d.conv.get(), p.choice.algo, workspace, workspaceBytes, b.skip ? &kOne : &kZero, d.y.get(),
            b.skip ? b.skip : b.y, d.bias.get(), p.bias, p.act->get(), d.y.get(), b.y)); // z: a fused residual's skip
    } else {
        CONVSCOPE_CUDNN_CHECK(cudnnConvolutionForward(h, &kOne, d.x.get(), x, d.w.get(), p.weight, d.conv.get(),
            p.choice.algo, workspace, workspaceBytes, &kZero, d.y.get(), b.y));
    }
    if (p.pass)
        biasActivation(b.y, p.fusedBias ? nullptr : b.bias,
            int64_t(p.layout.n) * p.layout.cout * p.layout.out[0] * p.layout.out[1], p.layout.cout, p.layout.storage,
            p.passAct, p.actParam, stream, p.fusedBias ? nullptr : b.skip);
}

void runNativeLinear(cublasHandle_t h, const LayerShape& s, DType type, MathMode math, const void* w, const void* x,
    void* y, const float* bias, cudaStream_t stream)
{
    CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h, stream));
    // No reduced-precision reductions: the sums stay FP32 in every mode.
    CONVSCOPE_CUBLAS_CHECK(
        cublasSetMathMode(h, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    const cudaDataType_t t = type == DType::F16 ? CUDA_R_16F : type == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t compute = math == MathMode::TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const int n = int(s.in.n), in = int(s.in.c), out = int(s.out.numel() / s.in.n);
    // [N, F] or [N, C, 1, 1] only (storage_ops.cpp's runsNatively): the rows are the batch.
    // Row-major y[n, out] = x[n, in] · W[out, in]ᵀ is, column-major, yᵀ[out, n] = W · xᵀ with W read as the
    // transposed [in, out] column-major matrix.
    CONVSCOPE_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &kOne, w, t, in, x, t, in, &kZero, y,
        t, out, compute, CUBLAS_GEMM_DEFAULT));
    biasActivation(y, bias, int64_t(n) * out, out, type, EpilogueAct::None, 0.0f, stream);
}

std::string nativeLinearNote(DType type, MathMode math)
{
    return std::string("cublasGemmEx on ") + dtypeName(type) + " operands ("
        + (math == MathMode::TF32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F")
        + ", no reduced-precision reductions), FP32 bias in one pass of ours";
}

} // namespace convscope::cudnn
