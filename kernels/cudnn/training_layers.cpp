// Per layer kind, what the cudnn training session runs (table: training_layers.h): the plan made in prepare, the
// forward and backward calls (the refusals: training_refusals.cpp), all on the session's stream; every cuDNN and cuBLAS
// status checked.
#include "kernels/cudnn/training_layers.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/normalization.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_convert.cuh"
#include "kernels/common/training_kernels.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/layer_geometry.h"
#include "kernels/cuda/parametric_activation.cuh"
#include "kernels/cuda/stored_layers.cuh"
#include "kernels/cuda/training/channel_reduce.cuh"
#include "kernels/cuda/training/pool2d_backward.cuh"
#include "kernels/cudnn/conv_geometry.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/reduce_layers.h"
#include "kernels/cudnn/tensor_layers.h"

#include <limits>
#include <type_traits>
#include <variant>

namespace convscope::cudnn {

namespace {
    std::unique_ptr<TensorDesc> desc4(const Shape& s, cudnnDataType_t type)
    {
        auto d = std::make_unique<TensorDesc>();
        d->set(CUDNN_TENSOR_NCHW, toInt(s.n, "batch"), toInt(s.c, "channels"), toInt(s.d * s.h, "height"),
            toInt(s.w, "width"), type);
        return d;
    }
    // A per-channel parameter tensor [1, C, 1, 1].
    std::unique_ptr<TensorDesc> channelDesc(int64_t c, cudnnDataType_t type)
    {
        auto d = std::make_unique<TensorDesc>();
        d->set(CUDNN_TENSOR_NCHW, 1, toInt(c, "channels"), 1, 1, type);
        return d;
    }

    template <typename T> cuda::ActivationKind forwardKind()
    {
        if constexpr (std::is_same_v<T, LeakyReLU>)
            return cuda::ActivationKind::LeakyReLU;
        else if constexpr (std::is_same_v<T, ReLU6>)
            return cuda::ActivationKind::ReLU6;
        else if constexpr (std::is_same_v<T, Hardswish>)
            return cuda::ActivationKind::Hardswish;
        else if constexpr (std::is_same_v<T, Hardsigmoid>)
            return cuda::ActivationKind::Hardsigmoid;
        else
            return cuda::ActivationKind::SiLU;
    }
    template <typename T> train::ActivationGrad backwardKind()
    {
        if constexpr (std::is_same_v<T, LeakyReLU>)
            return train::ActivationGrad::LeakyReLU;
        else if constexpr (std::is_same_v<T, ReLU6>)
            return train::ActivationGrad::ReLU6;
        else if constexpr (std::is_same_v<T, Hardswish>)
            return train::ActivationGrad::Hardswish;
        else if constexpr (std::is_same_v<T, Hardsigmoid>)
            return train::ActivationGrad::Hardsigmoid;
        else if constexpr (std::is_same_v<T, Hardtanh>)
            return train::ActivationGrad::Hardtanh;
        else
            return train::ActivationGrad::SiLU;
    }
    template <typename T> float activationParam(const T& spec)
    {
        if constexpr (std::is_same_v<T, LeakyReLU>)
            return float(spec.negative_slope);
        else if constexpr (std::is_same_v<T, Hardtanh>)
            return float(spec.min_val);
        else
            return 0.0f;
    }
    template <typename T> float activationParam2(const T& spec)
    {
        if constexpr (std::is_same_v<T, Hardtanh>)
            return float(spec.max_val);
        else
            return 0.0f;
    }

    // C = op(A) · op(B), column-major (cuBLAS's): cublasSgemm on FP32, else cublasGemmEx on the storage type with FP32
    // sums (PyTorch's half GEMMs).
    void gemm(cublasHandle_t h, DType type, cublasOperation_t opA, cublasOperation_t opB, int m, int n, int k,
        const void* a, int lda, const void* b, int ldb, void* c, int ldc)
    {
        if (type == DType::F32) {
            CONVSCOPE_CUBLAS_CHECK(cublasSgemm(h, opA, opB, m, n, k, &kOne, static_cast<const float*>(a), lda,
                static_cast<const float*>(b), ldb, &kZero, static_cast<float*>(c), ldc));
            return;
        }
        const cudaDataType_t t = type == DType::F16 ? CUDA_R_16F : CUDA_R_16BF;
        CONVSCOPE_CUBLAS_CHECK(cublasGemmEx(h, opA, opB, m, n, k, &kOne, a, t, lda, b, t, ldb, &kZero, c, t, ldc,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }

    // Element i of a device array of `type` (the concat windows' offsets).
    const void* at(const void* p, int64_t i, DType type)
    {
        return static_cast<const char*>(p) + i * int64_t(dtypeBytes(type));
    }
    void* at(void* p, int64_t i, DType type) { return static_cast<char*>(p) + i * int64_t(dtypeBytes(type)); }

} // namespace

void CudnnTrainingSession::planLayer(size_t i, cudnnHandle_t h)
{
    TrainLayer& t = m_layers[i];
    const LayerShape& s = m_shapes.layers[i];
    const cudnnDataType_t dt = cudnnType(m_storage); // the activations' type (mixed precision: HALF or BFLOAT16)
    if (mixed() && t.trainBias && storageParameters(i)) // the bias gradient's per-channel sums (backwardWeights)
        m_workspaceBytes = std::max(m_workspaceBytes,
            cuda::train::channelSumsWorkspaceBytes(s.out.n, s.out.c, s.out.d * s.out.h * s.out.w, smCount()));
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (std::is_same_v<T, Conv2d>) {
                const ConvGeometry<2> g = convGeometry(l, s);
                t.xd = desc4(s.in, dt);
                t.yd = desc4(s.out, dt);
                t.wd = std::make_unique<FilterDesc>();
                t.wd->set(CUDNN_TENSOR_NCHW, g.cout, g.cin / g.groups, g.kernel[0], g.kernel[1], dt);
                t.cd = std::make_unique<ConvDesc>();
                t.cd->set(toInt(s.resolvedPadding.top, "padding"), toInt(s.resolvedPadding.left, "padding"),
                    g.stride[0], g.stride[1], g.dilation[0], g.dilation[1], g.groups);
                t.cd->setMath(convMath());
                t.pd = channelDesc(g.cout, dt);
                int n = 0, c = 0, oh = 0, ow = 0;
                CONVSCOPE_CUDNN_CHECK(
                    cudnnGetConvolution2dForwardOutputDim(t.cd->get(), t.xd->get(), t.wd->get(), &n, &c, &oh, &ow));
                if (n != s.out.n || c != s.out.c || oh != s.out.h || ow != s.out.w)
                    throw Error(trainLayerLabel(m_net, i) + ": cuDNN's output [" + std::to_string(n) + ", "
                        + std::to_string(c) + ", " + std::to_string(oh) + ", " + std::to_string(ow)
                        + "] is not the inferred " + s.out.str());
                chooseConvAlgorithms(i, h);
            } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                // The data gradient of the convolution from the layer's output to its input: cuDNN's convolution
                // roles are swapped (xd: the layer's output, yd: its input), the filter is [C_in, C_out/g, kh, kw].
                const ConvGeometry<2> g = convGeometry(l, s);
                t.xd = desc4(s.out, dt);
                t.yd = desc4(s.in, dt);
                t.wd = std::make_unique<FilterDesc>();
                t.wd->set(CUDNN_TENSOR_NCHW, g.cin, g.cout / g.groups, g.kernel[0], g.kernel[1], dt);
                t.cd = std::make_unique<ConvDesc>();
                t.cd->set(toInt(s.resolvedPadding.top, "padding"), toInt(s.resolvedPadding.left, "padding"),
                    g.stride[0], g.stride[1], g.dilation[0], g.dilation[1], g.groups);
                t.cd->setMath(convMath());
                t.pd = channelDesc(g.cout, dt);
                int n = 0, c = 0, oh = 0, ow = 0;
                CONVSCOPE_CUDNN_CHECK(
                    cudnnGetConvolution2dForwardOutputDim(t.cd->get(), t.xd->get(), t.wd->get(), &n, &c, &oh, &ow));
                if (n != s.in.n || c != s.in.c || oh != s.in.h || ow != s.in.w)
                    throw UnsupportedError(m_prefix + ": " + trainLayerLabel(m_net, i)
                        + ": this output_padding is unsupported in training on cudnn (the convolution from the output "
                        + s.out.str() + " gives [" + std::to_string(n) + ", " + std::to_string(c) + ", "
                        + std::to_string(oh) + ", " + std::to_string(ow) + "], not the input " + s.in.str() + ")");
                chooseConvAlgorithms(i, h);
                t.note = "cudnnConvolutionBackwardData forward, cudnnConvolutionForward backward-data, "
                         "cudnnConvolutionBackwardFilter (roles swapped), cudnnConvolutionBackwardBias; "
                    + t.note;
            } else if constexpr (std::is_same_v<T, Linear>) {
                const Shape bias = Shape::nchw(s.out.n, s.out.c, 1, 1);
                t.yd = desc4(bias, dt);
                t.pd = channelDesc(s.out.c, dt);
                t.note = std::string(mixed() ? "cublasGemmEx (FP32 sums)" : "cublasSgemm")
                    + " forward, backward-data and backward-weights; bias gradient by cudnnConvolutionBackwardBias";
            } else if constexpr (std::is_same_v<T, BatchNorm2d>) {
                if (s.in.n * s.in.h * s.in.w <= 1)
                    throw InputError(trainLayerLabel(m_net, i) + ": expected more than 1 value per channel when "
                        + "training, got input " + s.in.str() + " (PyTorch refuses it too)");
                t.xd = desc4(s.in, dt);
                t.pd = channelDesc(s.in.c, CUDNN_DATA_FLOAT); // FP32 γ, β and statistics for any data type
                t.note = "cudnnBatchNormalizationForwardTraining / Backward (spatial; dx, dγ, dβ in one call, timed as "
                         "backward-data)";
            } else if constexpr (kCudnnActivation<T>) {
                t.xd = desc4(s.in, dt);
                t.act = std::make_unique<ActivationDesc>();
                if constexpr (std::is_same_v<T, ReLU>)
                    t.act->set(CUDNN_ACTIVATION_RELU, 0.0);
                else if constexpr (std::is_same_v<T, Sigmoid>)
                    t.act->set(CUDNN_ACTIVATION_SIGMOID, 0.0);
                else if constexpr (std::is_same_v<T, Tanh>)
                    t.act->set(CUDNN_ACTIVATION_TANH, 0.0);
                else
                    t.act->set(CUDNN_ACTIVATION_ELU, l.alpha);
                t.note = "cudnnActivationForward / cudnnActivationBackward";
            } else if constexpr (kOurActivation<T>) {
                t.note = "our CUDA kernels (cuDNN's activation API has no "
                    + std::string(layerKind(m_net.layers[i].spec).type) + " backward with PyTorch's kinks)";
            } else if constexpr (std::is_same_v<T, PReLU>) {
                if (t.weightCount != 1 && t.weightCount != s.in.c)
                    throw InputError(trainLayerLabel(m_net, i) + ": " + std::to_string(t.weightCount) + " slopes for "
                        + std::to_string(s.in.c) + " channels");
                m_workspaceBytes = std::max(m_workspaceBytes,
                    cuda::train::preluSlopeGradientWorkspaceBytes(
                        t.weightCount, s.in.n, s.in.c, s.in.d * s.in.h * s.in.w, smCount()));
                t.note = "our CUDA kernels (cuDNN has no prelu): the forward, gx, and the slopes' gradient summed in "
                         "double over runs that fill the GPU (the cuda session's per-channel reduction)";
            } else if (std::is_same_v<T, MaxPool2d> && !m_maxPoolOnCudnn) {
                t.mask = gpu::DeviceBuffer(size_t(s.out.numel()) * sizeof(int), "train: maxpool2d's window argmax");
                t.note = "our CUDA kernels, as PyTorch runs its own max_pool2d_with_indices (--option max_pool=cudnn: "
                         "cuDNN's pooling): the forward keeps each window's argmax, the backward gathers per input "
                         "element";
            } else if constexpr (std::is_same_v<T,
                                     MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, GlobalAvgPool2d>) {
                t.xd = desc4(s.in, dt);
                t.yd = desc4(s.out, dt);
                t.pool = std::make_unique<PoolDesc>();
                if constexpr (std::is_same_v<T, GlobalAvgPool2d>) {
                    t.pool->set(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, toInt(s.in.h, "height"),
                        toInt(s.in.w, "width"), 0, 0, 1, 1);
                } else {
                    const auto [sh, sw] = l.effectiveStride();
                    cudnnPoolingMode_t mode = CUDNN_POOLING_MAX_DETERMINISTIC;
                    if constexpr (std::is_same_v<T, AvgPool2d>)
                        mode = l.count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                   : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
                    t.pool->set(mode, toInt(l.kernel_size[0], "kernel"), toInt(l.kernel_size[1], "kernel"),
                        toInt(s.resolvedPadding.top, "padding"), toInt(s.resolvedPadding.left, "padding"),
                        toInt(sh, "stride"), toInt(sw, "stride"));
                }
                int n = 0, c = 0, oh = 0, ow = 0;
                CONVSCOPE_CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(t.pool->get(), t.xd->get(), &n, &c, &oh, &ow));
                if (n != s.out.n || c != s.out.c || oh != s.out.h || ow != s.out.w)
                    throw UnsupportedError(m_prefix + ": " + trainLayerLabel(m_net, i) + ": cuDNN's pooling gives ["
                        + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(oh) + ", "
                        + std::to_string(ow) + "], not PyTorch's " + s.out.str() + " (unsupported in training)");
                t.note = "cudnnPoolingForward / cudnnPoolingBackward";
            } else if constexpr (isSoftmaxKind<T>) { // any axis: channel mode on [outer, axis, inner, 1]
                t.xd = softmaxTensor(s.in, l.dim, dt);
                t.note = std::string("cudnnSoftmaxForward / Backward (")
                    + softmaxAlgoName<T> + ", [outer, axis, inner, 1])";
                if (outputInFp32(i)) { // autocast's FP32 list: an FP32 copy of the input in the workspace, FP32 out
                    t.yd = softmaxTensor(s.in, l.dim, CUDNN_DATA_FLOAT);
                    m_workspaceBytes = std::max(m_workspaceBytes, size_t(s.in.numel()) * sizeof(float));
                    t.note += ", in FP32 on an FP32 copy of its " + std::string(dtypeName(m_storage))
                        + " input, as autocast runs it; its FP32 output read by the loss";
                }
            } else if constexpr (std::is_same_v<T, Add> || std::is_same_v<T, Mul>) {
                t.yd = desc4(s.out, dt);
                if constexpr (std::is_same_v<T, Mul>) {
                    t.op = std::make_unique<OpTensorDesc>(CUDNN_OP_TENSOR_MUL);
                    t.note = "cudnnOpTensor (mul) forward and each factor's gradient";
                } else {
                    t.note = "a copy and cudnnAddTensor; the gradient copied to each input";
                }
            } else if constexpr (std::is_same_v<T, Concat>) {
                int64_t channels = 0;
                for (const Shape& x : s.ins) {
                    if (x.n != s.out.n || x.h * x.w != s.out.h * s.out.w)
                        throw Error(trainLayerLabel(m_net, i) + ": input " + x.str() + " does not fit " + s.out.str());
                    channels += x.c;
                }
                if (channels != s.out.c)
                    throw Error(trainLayerLabel(m_net, i) + ": the inputs' channels do not add up to the output's");
                t.note = "cudaMemcpy2DAsync into and out of each input's channel window (one row per image)";
            } else if constexpr (std::is_same_v<T, Dropout>) {
                if (!(l.p >= 0 && l.p < 1))
                    throw InputError(
                        trainLayerLabel(m_net, i) + ": dropout's p must be in [0, 1), got " + std::to_string(l.p));
                t.yd = desc4(s.out, dt);
                t.op = std::make_unique<OpTensorDesc>(CUDNN_OP_TENSOR_MUL);
                t.mask = gpu::DeviceBuffer(size_t(s.out.numel()) * sizeof(float), "train: a dropout mask");
                if (mixed())
                    t.maskStorage = gpu::DeviceBuffer(storageBytes(s.out.numel()), "train: a dropout mask (storage)");
                t.hostMask.assign(size_t(s.out.numel()), 0.0f);
                t.note = "the mask drawn on the host from ConvScope's seeded generator (the CPU's masks exactly) and "
                         "copied up inside the forward; y = x·mask and gx = gy·mask by cudnnOpTensor";
            } else if constexpr (std::is_same_v<T, Flatten> || std::is_same_v<T, Identity>) {
                t.note = "a view (no launch)";
            } else {
                throw UnsupportedError(m_prefix + ": " + trainLayerLabel(m_net, i) + " is unsupported in training");
            }
        },
        m_net.layers[i].spec);
}

void CudnnTrainingSession::forward(size_t i, const Handles& h)
{
    TrainLayer& t = m_layers[i];
    const LayerShape& s = m_shapes.layers[i];
    const cudaStream_t st = m_stream->get();
    const void* x = in(i, 0);
    void* y = m_out[i];
    const size_t bytes = storageBytes(s.out.numel());
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (std::is_same_v<T, Conv2d>) {
                t.cd->setMath(t.fwdMath);
                CONVSCOPE_CUDNN_CHECK(cudnnConvolutionForward(h.cudnn, &kOne, t.xd->get(), x, t.wd->get(), t.weightIn(),
                    t.cd->get(), t.fwdAlgo, m_workspace.get(), m_workspaceBytes, &kZero, t.yd->get(), y));
                if (t.bias.get())
                    CONVSCOPE_CUDNN_CHECK(
                        cudnnAddTensor(h.cudnn, &kOne, t.pd->get(), t.biasIn(), &kOne, t.yd->get(), y));
            } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                t.cd->setMath(t.bwdDataMath);
                CONVSCOPE_CUDNN_CHECK(
                    cudnnConvolutionBackwardData(h.cudnn, &kOne, t.wd->get(), t.weightIn(), t.yd->get(), x, t.cd->get(),
                        t.bwdDataAlgo, m_workspace.get(), m_workspaceBytes, &kZero, t.xd->get(), y));
                if (t.bias.get())
                    CONVSCOPE_CUDNN_CHECK(
                        cudnnAddTensor(h.cudnn, &kOne, t.pd->get(), t.biasIn(), &kOne, t.xd->get(), y));
            } else if constexpr (std::is_same_v<T, Linear>) {
                const int n = int(s.in.n), fin = int(s.in.c * s.in.h * s.in.w), fout = int(s.out.c);
                // Row-major y[n, out] = x[n, in] · W[out, in]ᵀ is, column-major, yᵀ[out, n] = W · xᵀ.
                gemm(h.cublas, m_storage, CUBLAS_OP_T, CUBLAS_OP_N, fout, n, fin, t.weightIn(), fin, x, fin, y, fout);
                if (t.bias.get())
                    CONVSCOPE_CUDNN_CHECK(
                        cudnnAddTensor(h.cudnn, &kOne, t.pd->get(), t.biasIn(), &kOne, t.yd->get(), y));
            } else if constexpr (std::is_same_v<T, BatchNorm2d>) {
                CONVSCOPE_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(h.cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne,
                    &kZero, t.xd->get(), x, t.xd->get(), y, t.pd->get(), t.weight.get(), t.bias.get(),
                    m_train.batchNormMomentum, t.mean.get(), t.var.get(), l.eps, t.saveMean.get(), t.saveInvStd.get()));
            } else if constexpr (kCudnnActivation<T>) {
                CONVSCOPE_CUDNN_CHECK(
                    cudnnActivationForward(h.cudnn, t.act->get(), &kOne, t.xd->get(), x, &kZero, t.xd->get(), y));
            } else if constexpr (std::is_same_v<T, Hardtanh>) {
                cuda::hardtanhStored(float(l.min_val), float(l.max_val), s.in.numel(), m_storage, x, y, st);
            } else if constexpr (kOurActivation<T>) {
                cuda::activationStored(forwardKind<T>(), activationParam(l), s.in.numel(), m_storage, x, y, st);
            } else if constexpr (std::is_same_v<T, PReLU>) { // FP32 only (refused in mixed precision)
                cuda::prelu(t.weight.floats(), t.weightCount, s.in.n, s.in.c, s.in.d * s.in.h * s.in.w,
                    static_cast<const float*>(x), static_cast<float*>(y), st);
            } else if (std::is_same_v<T, MaxPool2d> && !m_maxPoolOnCudnn) {
                if constexpr (std::is_same_v<T, MaxPool2d>)
                    cuda::train::maxPool2dTrainForward(
                        cuda::poolGeometry(s, l.kernel_size, l.effectiveStride(), l.dilation), m_storage, x, y,
                        static_cast<int*>(t.mask.get()), st);
            } else if constexpr (std::is_same_v<T,
                                     MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, GlobalAvgPool2d>) {
                CONVSCOPE_CUDNN_CHECK(
                    cudnnPoolingForward(h.cudnn, t.pool->get(), &kOne, t.xd->get(), x, &kZero, t.yd->get(), y));
            } else if constexpr (isSoftmaxKind<T>) {
                const bool wide = outputInFp32(i); // then on the input widened into the workspace, in FP32
                if (wide)
                    train::convertScaled(x, m_storage, m_workspace.get(), DType::F32, s.in.numel(), 1.0f, st);
                const cudnnTensorDescriptor_t d = (wide ? t.yd : t.xd)->get();
                CONVSCOPE_CUDNN_CHECK(cudnnSoftmaxForward(h.cudnn, kSoftmaxAlgo<T>, CUDNN_SOFTMAX_MODE_CHANNEL, &kOne,
                    d, wide ? m_workspace.get() : x, &kZero, d, y));
            } else if constexpr (std::is_same_v<T, Add>) {
                CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, st));
                for (size_t k = 1; k < s.sources.size(); ++k)
                    CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h.cudnn, &kOne, t.yd->get(), in(i, k), &kOne, t.yd->get(), y));
            } else if constexpr (std::is_same_v<T, Mul>) {
                CONVSCOPE_CUDNN_CHECK(cudnnOpTensor(
                    h.cudnn, t.op->get(), &kOne, t.yd->get(), x, &kOne, t.yd->get(), in(i, 1), &kZero, t.yd->get(), y));
            } else if constexpr (std::is_same_v<T, Concat>) {
                // Image n of input k (c_k·H·W values) goes to channel offset_k of the output's image n: a 2-D copy.
                const size_t plane = storageBytes(s.out.h * s.out.w);
                int64_t offset = 0;
                for (size_t k = 0; k < s.sources.size(); ++k) {
                    CONVSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(at(y, offset * s.out.h * s.out.w, m_storage),
                        size_t(s.out.c) * plane, in(i, k), size_t(s.ins[k].c) * plane, size_t(s.ins[k].c) * plane,
                        size_t(s.out.n), cudaMemcpyDeviceToDevice, st));
                    offset += s.ins[k].c;
                }
            } else if constexpr (std::is_same_v<T, Dropout>) {
                // The CPU's mask for this step and layer (cpu::grad::dropoutForward's seed and rule).
                drawDropoutMask(l.p, dropoutMaskSeed(m_train.dropoutSeed, m_step, i), t.hostMask);
                CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
                    t.mask.get(), t.hostMask.data(), t.hostMask.size() * sizeof(float), cudaMemcpyHostToDevice, st));
                if (mixed()) // the mask in the storage type: 0 or 1 / (1 − p) rounded once
                    gpu::convertValues(t.mask.floats(), t.maskStorage.get(), int64_t(t.hostMask.size()), m_storage, st);
                CONVSCOPE_CUDNN_CHECK(cudnnOpTensor(h.cudnn, t.op->get(), &kOne, t.yd->get(), x, &kOne, t.yd->get(),
                    t.maskIn(), &kZero, t.yd->get(), y));
            } else if constexpr (std::is_same_v<T, Flatten> || std::is_same_v<T, Identity>) {
                // a view: the output is the input's buffer
            } else {
                throw UnsupportedError(m_prefix + ": " + trainLayerLabel(m_net, i) + " is unsupported in training");
            }
        },
        m_net.layers[i].spec);
}

void CudnnTrainingSession::backwardData(size_t k, size_t j, void* gx, const Handles& h)
{
    TrainLayer& t = m_layers[k];
    const LayerShape& s = m_shapes.layers[k];
    const cudaStream_t st = m_stream->get();
    const void* x = in(k, 0);
    const void* y = m_out[k];
    const void* gy = m_grad[k];
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (std::is_same_v<T, Conv2d>) {
                t.cd->setMath(t.bwdDataMath);
                CONVSCOPE_CUDNN_CHECK(
                    cudnnConvolutionBackwardData(h.cudnn, &kOne, t.wd->get(), t.weightIn(), t.yd->get(), gy,
                        t.cd->get(), t.bwdDataAlgo, m_workspace.get(), m_workspaceBytes, &kZero, t.xd->get(), gx));
            } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                // The convolution's forward, from the output's gradient (cuDNN's x) to the input's (cuDNN's y).
                t.cd->setMath(t.fwdMath);
                CONVSCOPE_CUDNN_CHECK(
                    cudnnConvolutionForward(h.cudnn, &kOne, t.xd->get(), gy, t.wd->get(), t.weightIn(), t.cd->get(),
                        t.fwdAlgo, m_workspace.get(), m_workspaceBytes, &kZero, t.yd->get(), gx));
            } else if constexpr (std::is_same_v<T, Linear>) {
                const int n = int(s.in.n), fin = int(s.in.c * s.in.h * s.in.w), fout = int(s.out.c);
                // gx[n, in] = gy[n, out] · W[out, in]; column-major gxᵀ[in, n] = Wᵀ[in, out] · gyᵀ[out, n].
                gemm(h.cublas, m_storage, CUBLAS_OP_N, CUBLAS_OP_N, fin, n, fout, t.weightIn(), fin, gy, fout, gx, fin);
            } else if constexpr (kCudnnActivation<T>) {
                CONVSCOPE_CUDNN_CHECK(cudnnActivationBackward(h.cudnn, t.act->get(), &kOne, t.xd->get(), y, t.xd->get(),
                    gy, t.xd->get(), x, &kZero, t.xd->get(), gx));
            } else if constexpr (kOurActivation<T>) {
                train::activationBackward(
                    backwardKind<T>(), activationParam(l), activationParam2(l), x, gy, gx, s.in.numel(), st, m_storage);
            } else if constexpr (std::is_same_v<T, PReLU>) { // FP32 only (refused in mixed precision)
                train::preluBackwardData(t.weight.floats(), t.weightCount, s.in.n, s.in.c, s.in.d * s.in.h * s.in.w,
                    static_cast<const float*>(x), static_cast<const float*>(gy), static_cast<float*>(gx), st);
            } else if (std::is_same_v<T, MaxPool2d> && !m_maxPoolOnCudnn) {
                if constexpr (std::is_same_v<T, MaxPool2d>)
                    cuda::train::maxPool2dBackward(
                        cuda::poolGeometry(s, l.kernel_size, l.effectiveStride(), l.dilation), m_storage,
                        static_cast<const int*>(t.mask.get()), gy, gx, st);
            } else if constexpr (std::is_same_v<T,
                                     MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, GlobalAvgPool2d>) {
                CONVSCOPE_CUDNN_CHECK(cudnnPoolingBackward(h.cudnn, t.pool->get(), &kOne, t.yd->get(), y, t.yd->get(),
                    gy, t.xd->get(), x, &kZero, t.xd->get(), gx));
            } else if constexpr (isSoftmaxKind<T>) {
                const bool wide = outputInFp32(k); // then the input's gradient in FP32 in the workspace, rounded after
                const cudnnTensorDescriptor_t d = (wide ? t.yd : t.xd)->get();
                CONVSCOPE_CUDNN_CHECK(cudnnSoftmaxBackward(h.cudnn, kSoftmaxAlgo<T>, CUDNN_SOFTMAX_MODE_CHANNEL, &kOne,
                    d, y, d, gy, &kZero, d, wide ? m_workspace.get() : gx));
                if (wide)
                    gpu::convertValues(m_workspace.floats(), gx, s.in.numel(), m_storage, st);
            } else if constexpr (std::is_same_v<T, Add> || std::is_same_v<T, Flatten> || std::is_same_v<T, Identity>) {
                CONVSCOPE_CUDA_CHECK(
                    cudaMemcpyAsync(gx, gy, storageBytes(s.ins[j].numel()), cudaMemcpyDeviceToDevice, st));
            } else if constexpr (std::is_same_v<T, Mul>) {
                CONVSCOPE_CUDNN_CHECK(cudnnOpTensor(h.cudnn, t.op->get(), &kOne, t.yd->get(), gy, &kOne, t.yd->get(),
                    in(k, 1 - j), &kZero, t.yd->get(), gx));
            } else if constexpr (std::is_same_v<T, Dropout>) {
                CONVSCOPE_CUDNN_CHECK(cudnnOpTensor(h.cudnn, t.op->get(), &kOne, t.yd->get(), gy, &kOne, t.yd->get(),
                    t.maskIn(), &kZero, t.yd->get(), gx));
            } else if constexpr (std::is_same_v<T, Concat>) {
                int64_t offset = 0;
                for (size_t q = 0; q < j; ++q)
                    offset += s.ins[q].c;
                const size_t plane = storageBytes(s.out.h * s.out.w);
                CONVSCOPE_CUDA_CHECK(cudaMemcpy2DAsync(gx, size_t(s.ins[j].c) * plane,
                    at(gy, offset * s.out.h * s.out.w, m_storage), size_t(s.out.c) * plane, size_t(s.ins[j].c) * plane,
                    size_t(s.out.n), cudaMemcpyDeviceToDevice, st));
            } else {
                throw Error(trainLayerLabel(m_net, k) + ": no backward-data on cudnn");
            }
        },
        m_net.layers[k].spec);
}

void CudnnTrainingSession::backwardWeights(size_t k, const Handles& h)
{
    TrainLayer& t = m_layers[k];
    const LayerShape& s = m_shapes.layers[k];
    const void* x = in(k, 0);
    const void* gy = m_grad[k];
    if (std::holds_alternative<Conv2d>(m_net.layers[k].spec)) {
        t.cd->setMath(t.bwdFilterMath);
        CONVSCOPE_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h.cudnn, &kOne, t.xd->get(), x, t.yd->get(), gy,
            t.cd->get(), t.bwdFilterAlgo, m_workspace.get(), m_workspaceBytes, &kZero, t.wd->get(), t.gW));
    } else if (std::holds_alternative<Linear>(m_net.layers[k].spec)) {
        const int n = int(s.in.n), fin = int(s.in.c * s.in.h * s.in.w), fout = int(s.out.c);
        // gW[out, in] = gyᵀ · x; column-major gWᵀ[in, out] = xᵀ[in, n] · gy[n, out].
        gemm(h.cublas, m_storage, CUBLAS_OP_N, CUBLAS_OP_T, fin, fout, n, x, fin, gy, fout, t.gW, fin);
    } else if (std::holds_alternative<ConvTranspose2d>(m_net.layers[k].spec)) {
        // Roles swapped: the output's gradient is the convolution's input, the layer's input its output gradient.
        t.cd->setMath(t.bwdFilterMath);
        CONVSCOPE_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h.cudnn, &kOne, t.xd->get(), gy, t.yd->get(), x,
            t.cd->get(), t.bwdFilterAlgo, m_workspace.get(), m_workspaceBytes, &kZero, t.wd->get(), t.gW));
    } else if (std::holds_alternative<PReLU>(m_net.layers[k].spec)) {
        cuda::train::preluSlopeGradient(t.weightCount, s.in.n, s.in.c, s.in.d * s.in.h * s.in.w,
            static_cast<const float*>(x), static_cast<const float*>(gy), static_cast<float*>(t.gW), m_workspace.get(),
            smCount(), m_stream->get());
    } else {
        throw Error(trainLayerLabel(m_net, k) + ": parameters without a weight gradient");
    }
    // The bias gradient sums gy over N, H, W: described by the layer output's descriptor (xd for conv_transpose2d,
    // whose convolution roles are swapped).
    const bool transposed = std::holds_alternative<ConvTranspose2d>(m_net.layers[k].spec);
    if (t.trainBias && mixed()) // our per-channel sums in double (cuDNN's backward bias has no BFLOAT16)
        cuda::train::channelSumsStored(gy, m_storage, s.out.n, s.out.c, s.out.d * s.out.h * s.out.w, t.gB,
            m_workspace.get(), smCount(), m_stream->get());
    else if (t.trainBias)
        CONVSCOPE_CUDNN_CHECK(cudnnConvolutionBackwardBias(
            h.cudnn, &kOne, (transposed ? t.xd : t.yd)->get(), gy, &kZero, t.pd->get(), t.gB));
}

void CudnnTrainingSession::batchNormBackward(size_t k, void* gx, const Handles& h)
{
    TrainLayer& t = m_layers[k];
    const auto& spec = std::get<BatchNorm2d>(m_net.layers[k].spec);
    // Without an input gradient (the network's input, not asked for) dx still needs somewhere to go: the input
    // gradient's buffer, of the input's shape, which nothing reads then.
    void* dx = gx ? gx : m_inputGrad.get();
    void* dScale = t.trainWeight ? t.gW : t.dummyScale.get();
    void* dBias = t.trainBias ? t.gB : t.dummyBias.get();
    CONVSCOPE_CUDNN_CHECK(cudnnBatchNormalizationBackward(h.cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne,
        &kZero, t.xd->get(), in(k, 0), t.xd->get(), m_grad[k], t.xd->get(), dx, t.pd->get(), t.weight.get(), dScale,
        dBias, spec.eps, t.saveMean.get(), t.saveInvStd.get()));
}

} // namespace convscope::cudnn
