// The cudnn session: one plan per layer, made once in prepare (descriptors, algorithm, workspace), then
// runLayer only enqueues cuDNN / cuBLAS calls on the session's stream. The convolutions' plans live beside it:
// conv_layers.h (2-D on FP32 NCHW tensors), native_layers.h (2-D on Tensor Core storage), volume_layers.h (3-D).
//
// Pooling and PyTorch's rules: pool_plan.h (cuDNN's block of the outputs, a kernel of ours for the edge).
//
// Tensor Core modes (tf32, fp16, bf16; compute/storage_format.h): the session stores every tensor channels-last in
// FP32 / FP16 / BF16, and the layers cuDNN and cuBLAS have calls for run natively on it (runsInStorage, decided by
// storage_ops.h, which asks cuDNN once per call and type): conv2d with NHWC descriptors of the storage type, an FP32
// compute type and tensor-op math, on Find's and the graph API's engines alike (asymmetric padding through a pad step
// on the storage type); conv_transpose2d (backward data), conv3d and conv_transpose3d the same way with NHWC / NDHWC
// descriptors, their pad and crop steps on the channels-last storage; linear by cublasGemmEx with FP32
// accumulation; activations, pools, batch norm (FP32 parameters), softmax, add and mul by their cuDNN calls. A
// convolution's bias that cuDNN's fused call does not take, and a fused activation, are one vectorized pass of ours in
// FP32 (storage_kernels.cuh). The rest (our kernels, the 3-D pools, a convolution whose native descriptors cuDNN
// refuses) runs on the FP32 NCHW copies the session base makes, and the layer note says so.
//
// Layout switch (extra["layout"] = "nhwc"): the conv2d input is transposed to channels-last, the convolution
// runs on NHWC tensors with [K, R, S, C] weights (transposed once at prepare), and the output is transposed back.
// The layer's time includes both transposes (what using NHWC inside an NCHW network costs); the split between
// transposes and convolution is measured with events of its own (conv_layers.h) and reported in the layer note and
// metadata.
#include "kernels/cudnn/cudnn_session.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/nvtx.h"
#include "compute/resize.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"
#include "kernels/common/gpu_session.h"
#include "kernels/cuda/copy_kernels.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/merge.cuh"
#include "kernels/cuda/normalization_layer.h"
#include "kernels/cuda/parametric_activation.cuh"
#include "kernels/cuda/pooling.cuh"
#include "kernels/cuda/resize.cuh"
#include "kernels/cuda/tensor_kinds.h"
#include "kernels/cuda/tensor_math.h"
#include "kernels/cudnn/conv_layers.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/cudnn_support.h"
#include "kernels/cudnn/graph_pointwise.h"
#include "kernels/cudnn/layout_kernels.cuh"
#include "kernels/cudnn/native_layers.h"
#include "kernels/cudnn/pool_plan.h"
#include "kernels/cudnn/reduce_layers.h"
#include "kernels/cudnn/storage_ops.h"
#include "kernels/cudnn/tensor_layers.h"
#include "kernels/cudnn/volume_layers.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>
#include <variant>
#include <vector>

namespace convscope::cudnn {

namespace {

    struct LayerPlan {
        std::unique_ptr<Conv2dPlan> conv; // conv2d on FP32 NCHW tensors (conv_layers.h)
        std::unique_ptr<NativeConvPlan> nativeConv; // conv2d on the session's Tensor Core storage (native_layers.h)
        std::unique_ptr<ConvTranspose2dPlan> convT; // conv_transpose2d (conv_layers.h)
        // pooling
        std::unique_ptr<PoolDesc> pool;
        bool cudnnPool = false;
        std::optional<PoolEdge> edge;
        std::optional<cuda::PoolGeometry> dilatedMax; // maxpool2d with dilation: our kernel (cuDNN has none)
        // generic descriptors: input, output, per-channel parameters
        std::unique_ptr<TensorDesc> xd, yd, pd;
        std::unique_ptr<ActivationDesc> act; // activations
        std::unique_ptr<OpTensorDesc> op; // add, mul: cudnnOpTensor
        std::shared_ptr<GraphPointwisePlan> pointwise; // leaky ReLU through the graph API (null: our kernel)
        std::unique_ptr<VolumeLayerPlan> volume; // conv3d, conv_transpose3d, the 3-D pools (volume_layers.h)
        std::unique_ptr<ReduceLayerPlan> reduce; // softmax, log_softmax, reduce (reduce_layers.h)
    };

    class CudnnSession final : public gpu::GpuSessionBase {
    public:
        CudnnSession(const std::string& algorithm, const SessionOptions& options, std::shared_ptr<gpu::ArenaPool> pool)
            : GpuSessionBase("cudnn", algorithm, options, std::move(pool))
            , m_conv(convOptions(options))
            , m_convOnCopies(onFp32Data(m_conv))
            , m_pinned(algorithmFromName(algorithm))
            , m_fuseBias(!options.extra.count("fuse_bias") || options.extra.at("fuse_bias") != "0")
            , m_nativeConv(!options.extra.count("native_conv") || options.extra.at("native_conv") != "0")
        {
            if (algorithm != "auto" && !m_pinned)
                throw UnsupportedError("cudnn." + algorithm + ": unknown algorithm");
            threadHandles(); // fail here, with cuDNN's reason, rather than in the middle of prepare
        }

        std::string layerNote(size_t i) const override
        {
            std::string note = GpuSessionBase::layerNote(i);
            if (i < m_plans.size() && m_plans[i].conv)
                if (const auto split = m_plans[i].conv->nhwcSplit())
                    note += "; NHWC split (median of " + std::to_string(split->passes) + " passes): transpose in "
                        + formatMs(split->inMs) + ", convolution " + formatMs(split->convMs) + ", transpose out "
                        + formatMs(split->outMs);
            return note;
        }

    protected:
        // Option native_conv=0 leaves every convolution on the FP32 copies (TF32 math in fp16/bf16), as before the
        // convolutions ran natively: to show what running them natively saves.
        bool runsInStorage(size_t i) const override
        {
            if (!m_nativeConv && isConvolution(spec(i)))
                return false;
            if (!runsNatively(spec(i), shape(i), storage().dtype))
                return false;
            // A pinned algorithm cuDNN refuses on NDHWC storage but runs on NCDHW (implicit_gemm and fft_tiling on the
            // H100) keeps the conv3d on the FP32 copies, so the selection still runs the algorithm it names; the note
            // says where. (supports() has already refused one that runs neither way.)
            if (const auto* c = std::get_if<Conv3d>(&spec(i)); c && m_pinned)
                return conv3dPinnedRefusal(
                    threadHandles().cudnn, conv3dLayout(*c, shape(i), storage().dtype), m_conv, *m_pinned)
                    .empty();
            return true;
        }
        // Only cuBLAS's linear reads the base's weight in the storage type; the native convolutions convert theirs into
        // cuDNN's filter layout themselves (the NHWC permutation), so the others need no typed copy.
        bool readsTypedWeight(size_t i) const override { return std::holds_alternative<Linear>(spec(i)); }

        size_t layerScratchBytes(size_t i) const override
        {
            if (isNormLayer(spec(i))) // the split-row path's chunk statistics (kernels/cuda/normalization.cu)
                return cuda::normalizationScratchBytes(
                    cuda::normGeometryOf(spec(i), shape(i).in), deviceProperties().multiProcessorCount);
            if (const auto* c = std::get_if<Conv2d>(&spec(i)); c && native(i))
                return nativeConvScratchBytes(*c, shape(i), storage().dtype);
            // Each is 0 for the other's kinds.
            return convScratchBytes(spec(i), shape(i), m_conv.nhwc, nativeType(i))
                + volumeScratchBytes(spec(i), shape(i), nativeType(i)) + cuda::tensorKindScratchBytes(spec(i));
        }

        void prepareLayer(size_t i, cudaStream_t stream) override
        {
            if (m_plans.size() != layerCount()) {
                m_plans.clear();
                m_plans.resize(layerCount());
            }
            Handles& h = threadHandles();
            CONVSCOPE_CUDNN_CHECK(cudnnSetStream(h.cudnn, stream));
            LayerPlan& p = m_plans[i];
            p = LayerPlan {};
            const LayerShape& s = shape(i);
            const std::string baseNote
                = GpuSessionBase::layerNote(i); // "... on FP32 copies" for a layer that is not native
            std::visit(
                [&](const auto& l) {
                    using T = std::decay_t<decltype(l)>;
                    if constexpr (std::is_same_v<T, Conv2d>)
                        prepareConv(i, l, p, h, stream);
                    else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                        p.convT = std::make_unique<ConvTranspose2dPlan>(
                            h.cudnn, l, s, convOptionsFor(i), layerBuffers(i), nativeType(i), stream);
                        reserveWorkspace(p.convT->workspaceBytes());
                        setLayerNote(i, p.convT->note());
                    } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                        if (l.dilation[0] != 1 || l.dilation[1] != 1) {
                            const Padding2d& pad = s.resolvedPadding;
                            const Pair st = l.effectiveStride();
                            p.dilatedMax = cuda::PoolGeometry { int(s.in.n), int(s.in.c), int(s.in.h), int(s.in.w),
                                int(s.out.h), int(s.out.w), int(l.kernel_size[0]), int(l.kernel_size[1]), int(st[0]),
                                int(st[1]), int(pad.top), int(pad.bottom), int(pad.left), int(pad.right),
                                int(l.dilation[0]), int(l.dilation[1]), false, 0 };
                            setLayerNote(i,
                                "ConvScope's maxpool2d kernel (kernels/cuda): cuDNN's pooling has no "
                                "dilation");
                        } else {
                            preparePool(i, p, l.kernel_size, l.effectiveStride(), 0);
                        }
                    } else if constexpr (std::is_same_v<T, AvgPool2d>)
                        preparePool(i, p, l.kernel_size, l.effectiveStride(), l.count_include_pad ? 1 : 2);
                    else if constexpr (
                        std::is_same_v<T,
                            Conv3d> || std::is_same_v<T, ConvTranspose3d> || std::is_same_v<T, MaxPool3d> || std::is_same_v<T, AvgPool3d>) {
                        p.volume = planVolumeLayer(
                            spec(i), s, convOptionsFor(i), m_pinned, h.cudnn, layerBuffers(i), nativeType(i), stream);
                        reserveWorkspace(p.volume->workspaceBytes());
                        setLayerNote(i, p.volume->note());
                    } else if constexpr (std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, GlobalAvgPool3d>) {
                        // A volume is [N, C, D·H, W] here (tensor4), so one window of D·H × W covers it.
                        p.xd = tensor4(i, s.in);
                        p.yd = tensor4(i, s.out);
                        p.pool = std::make_unique<PoolDesc>();
                        p.pool->set(
                            CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, int(s.in.d * s.in.h), int(s.in.w), 0, 0, 1, 1);
                        p.cudnnPool = true;
                    } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                        if (!weight(i) || !bias(i) || !runningMean(i) || !runningVar(i))
                            throw InputError("layer " + std::to_string(i) + " (" + layer(i).name
                                + "): " + layerTypeName(l) + " parameters are not materialised");
                        p.xd = tensor4(i, s.in);
                        p.pd = std::make_unique<TensorDesc>();
                        p.pd->set(CUDNN_TENSOR_NCHW, 1, int(s.in.c), 1, 1);
                        setLayerNote(i, "cudnnBatchNormalizationForwardInference (spatial)");
                    } else if constexpr (
                        std::is_same_v<T,
                            ReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU>) {
                        p.xd = tensor4(i, s.in);
                        p.act = std::make_unique<ActivationDesc>();
                        if constexpr (std::is_same_v<T, ReLU>)
                            p.act->set(CUDNN_ACTIVATION_RELU, 0.0);
                        else if constexpr (std::is_same_v<T, Sigmoid>)
                            p.act->set(CUDNN_ACTIVATION_SIGMOID, 0.0);
                        else if constexpr (std::is_same_v<T, Tanh>)
                            p.act->set(CUDNN_ACTIVATION_TANH, 0.0);
                        else
                            p.act->set(CUDNN_ACTIVATION_ELU, l.alpha); // coef is ELU's alpha
                    } else if constexpr (std::is_same_v<T, ReLU6> || std::is_same_v<T, SiLU>) {
                        p.xd = tensor4(i, s.in);
                        p.act = std::make_unique<ActivationDesc>();
                        if constexpr (std::is_same_v<T, ReLU6>) {
                            p.act->set(CUDNN_ACTIVATION_CLIPPED_RELU, 6.0); // coef is the clip
                            setLayerNote(i, "cudnnActivationForward (clipped ReLU at 6)");
                        } else {
                            p.act->set(CUDNN_ACTIVATION_SWISH, 0.0);
                            CONVSCOPE_CUDNN_CHECK(cudnnSetActivationDescriptorSwishBeta(p.act->get(), 1.0));
                            setLayerNote(i, "cudnnActivationForward (swish, β = 1)");
                        }
                    } else if constexpr (std::is_same_v<T, LeakyReLU>) {
                        // The legacy activation call has no leaky ReLU; the graph API's ReLU has a lower clip slope.
                        std::string why;
                        p.pointwise = GraphPointwisePlan::leakyRelu(h.cudnn,
                            { s.in.n, s.in.c, s.in.d * s.in.h, s.in.w }, l.negative_slope, size_t(64) << 20, &why);
                        if (p.pointwise) {
                            reserveWorkspace(p.pointwise->workspace());
                            setLayerNote(i,
                                "cuDNN " + p.pointwise->name()
                                    + ": CUDNN_POINTWISE_RELU_FWD with a lower clip slope (the legacy API has no leaky "
                                      "ReLU)");
                        } else {
                            setLayerNote(i, "our CUDA kernel: cuDNN's activation API has no leaky_relu, and " + why);
                        }
                    } else if constexpr (std::is_same_v<T, Hardswish> || std::is_same_v<T, Hardsigmoid>) {
                        setLayerNote(i, "our CUDA kernel: cuDNN has no " + layerTypeName(l) + " (in either API)");
                    } else if constexpr (std::is_same_v<T, Hardtanh>) {
                        // CUDNN_ACTIVATION_CLIPPED_RELU clips at 0 below; hardtanh's lower bound is any number.
                        setLayerNote(i, "our CUDA kernel: cuDNN has no hardtanh (its clipped ReLU clips at 0)");
                    } else if constexpr (cuda::isTensorMathKind<T>) {
                        setLayerNote(i, "our CUDA kernel (elementwise_math.cu): cuDNN has no " + layerSummary(l));
                    } else if constexpr (std::is_same_v<T, PReLU>) {
                        setLayerNote(i, "our CUDA kernel: cuDNN has no prelu (no per-channel slope in either API)");
                    } else if constexpr (std::is_same_v<T, Add> || std::is_same_v<T, Mul>) {
                        // cudnnOpTensor: C = A op B, with B broadcast where its dimensions are 1 (mul's gate).
                        p.op = std::make_unique<OpTensorDesc>(
                            std::is_same_v<T, Add> ? CUDNN_OP_TENSOR_ADD : CUDNN_OP_TENSOR_MUL);
                        p.yd = tensor4(i, s.out);
                        const bool gate = std::is_same_v<T, Mul> && (s.ins[0] != s.out || s.ins[1] != s.out);
                        p.xd = tensor4(i, std::is_same_v<T, Mul> && s.ins[0] != s.out ? s.ins[0] : s.ins[1]);
                        setLayerNote(i,
                            std::is_same_v<T, Add> ? std::string("cudnnOpTensor (add)")
                                    + (s.ins.size() > 2 ? ", then cudnnAddTensor for each further input" : "")
                                                   : std::string("cudnnOpTensor (mul")
                                    + (gate ? ", the [N, C, 1, 1] gate broadcast)" : ")"));
                    } else if constexpr (std::is_same_v<T, Concat>) {
                        setLayerNote(i, "our CUDA kernel: cuDNN has no concatenation (a copy into each channel slice)");
                    } else if constexpr (std::is_same_v<T, Pad>) {
                        setLayerNote(i, "our CUDA kernel: cuDNN has no padding layer");
                    } else if constexpr (isNormKind<T>) {
                        setLayerNote(i,
                            cuda::normalizationNote(
                                cuda::normGeometryOf(l, s.in), deviceProperties().multiProcessorCount)
                                + " (kernels/cuda/normalization.cu: cuDNN has no " + layerKind(l).type + " call)");
                    } else if constexpr (std::is_same_v<T, Resize>) {
                        setLayerNote(i, "our CUDA kernel (kernels/cuda/resize.cu): cuDNN has no resize call");
                    } else if constexpr (
                        std::is_same_v<T, ChannelShuffle> || std::is_same_v<T, Slice> || std::is_same_v<T, Transpose>) {
                        setLayerNote(
                            i, std::string("our CUDA kernel: cuDNN has no ") + layerKind(l).type + " (a gather copy)");
                    } else if constexpr (isSoftmaxKind<T> || std::is_same_v<T, Reduce>) {
                        if constexpr (std::is_same_v<T, Reduce>)
                            p.reduce = ReduceLayerPlan::reduce(h.cudnn, l, s);
                        else
                            p.reduce = ReduceLayerPlan::softmax(l.dim, isLogSoftmax<T>, s.in, nativeType(i));
                        reserveWorkspace(p.reduce->workspaceBytes());
                        setLayerNote(i, p.reduce->note());
                    } else if constexpr (cuda::isGeneralTensorKind<T>) { // matmul, gather: tensor_layers.h
                        setLayerNote(i, prepareTensorLayer(l, s, options().math, scratch(i), stream));
                    } else if constexpr (std::is_same_v<T, Linear>) {
                        p.yd = std::make_unique<TensorDesc>(); // [rows, out_features, 1, 1]: any rank's last axis
                        p.yd->set(CUDNN_TENSOR_NCHW, int(linearRows(s.in).rows), int(l.out_features), 1, 1);
                        p.pd = std::make_unique<TensorDesc>();
                        p.pd->set(CUDNN_TENSOR_NCHW, 1, int(l.out_features), 1, 1); // s.out.c is not it at rank 3+
                        if (native(i))
                            setLayerNote(i, nativeLinearNote(storage().dtype, options().math));
                        else
                            setLayerNote(i,
                                std::string("cublasSgemm")
                                    + (options().math == MathMode::TF32 ? " (TF32 tensor ops)" : " (pedantic FP32)"));
                    }
                },
                spec(i));
            if (!storage().plainFp32() && !native(i) && !baseNote.empty()) {
                const std::string note = GpuSessionBase::layerNote(i);
                setLayerNote(i, note == baseNote || note.empty() ? baseNote : note + "; " + baseNote);
            }
        }

        void runLayer(size_t i, cudaStream_t st) override
        {
            Handles& h = threadHandles();
            CONVSCOPE_CUDNN_CHECK(cudnnSetStream(h.cudnn, st));
            LayerPlan& p = m_plans[i];
            const LayerShape& s = shape(i);
            // A native layer's tensors are in the storage type (maybe FP16/BF16): cuDNN takes them as xv / yv. The
            // FP32 pointers exist only for the others, whose kernels of ours take float.
            const bool nat = native(i);
            const float* x = nat ? nullptr : input(i);
            float* y = nat ? nullptr : output(i);
            const void* xv = nat ? inputData(i) : static_cast<const void*>(x);
            void* yv = nat ? outputData(i) : static_cast<void*>(y);
            auto in = [&](size_t k) { return nat ? inputData(i, k) : static_cast<const void*>(input(i, k)); };
            std::visit(
                [&](const auto& l) {
                    using T = std::decay_t<decltype(l)>;
                    if constexpr (std::is_same_v<T, Conv2d>) {
                        if (p.nativeConv)
                            runNativeConv(
                                *p.nativeConv, h.cudnn, layerBuffers(i), m_workspace.get(), m_workspace.bytes(), st);
                        else
                            p.conv->run(h.cudnn, layerBuffers(i), m_workspace.get(), m_workspace.bytes(), st);
                    } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                        p.convT->run(h.cudnn, layerBuffers(i), m_workspace.get(), m_workspace.bytes(), st);
                    } else if constexpr (
                        std::is_same_v<T,
                            MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, GlobalAvgPool3d>) {
                        if (p.cudnnPool)
                            CONVSCOPE_CUDNN_CHECK(cudnnPoolingForward(
                                h.cudnn, p.pool->get(), &kOne, p.xd->get(), xv, &kZero, p.yd->get(), yv));
                        if (p.edge)
                            poolEdges(*p.edge, x, y, st);
                        if (p.dilatedMax)
                            cuda::maxPool2d(*p.dilatedMax, x, y, st);
                    } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                        CONVSCOPE_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(h.cudnn, CUDNN_BATCHNORM_SPATIAL,
                            &kOne, &kZero, p.xd->get(), xv, p.xd->get(), yv, p.pd->get(), weight(i), bias(i),
                            runningMean(i), runningVar(i), l.eps));
                    } else if constexpr (isSoftmaxKind<T> || std::is_same_v<T, Reduce>) {
                        p.reduce->run(h.cudnn, xv, yv, m_workspace.get(), m_workspace.bytes());
                    } else if constexpr (std::is_same_v<T, Linear>) {
                        if (nat)
                            runNativeLinear(h.cublas, s, storage().dtype, options().math, weightData(i), inputData(i),
                                outputData(i), bias(i), st);
                        else
                            runLinear(i, p, h, st, s);
                    } else if constexpr (std::is_same_v<T, Flatten> || std::is_same_v<T, Reshape>) { // view, or copies
                        CONVSCOPE_CUDA_CHECK(
                            cudaMemcpyAsync(y, x, size_t(s.out.numel()) * 4, cudaMemcpyDeviceToDevice, st));
                    } else if constexpr (std::is_same_v<T, Identity> || std::is_same_v<T, Dropout>) {
                        // Views: never called (the session aliases the buffer).
                    } else if constexpr (std::is_same_v<T, Transpose>) {
                        cuda::transposeDims(x, s.in.dims(), wrappedDims(l, s.in.ndim()), 4, y, st);
                    } else if constexpr (
                        std::is_same_v<T,
                            ReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU> || std::is_same_v<T, ReLU6> || std::is_same_v<T, SiLU>) {
                        CONVSCOPE_CUDNN_CHECK(cudnnActivationForward(
                            h.cudnn, p.act->get(), &kOne, p.xd->get(), xv, &kZero, p.xd->get(), yv));
                    } else if constexpr (std::is_same_v<T, LeakyReLU>) {
                        if (p.pointwise)
                            p.pointwise->execute(h.cudnn, x, y, m_workspace.get());
                        else
                            cuda::activation(cuda::ActivationKind::LeakyReLU, static_cast<float>(l.negative_slope),
                                s.in.numel(), x, y, st);
                    } else if constexpr (std::is_same_v<T, Hardswish>) {
                        cuda::activation(cuda::ActivationKind::Hardswish, 0.0f, s.in.numel(), x, y, st);
                    } else if constexpr (std::is_same_v<T, Hardsigmoid>) {
                        cuda::activation(cuda::ActivationKind::Hardsigmoid, 0.0f, s.in.numel(), x, y, st);
                    } else if constexpr (std::is_same_v<T, Hardtanh>) {
                        cuda::hardtanh(
                            static_cast<float>(l.min_val), static_cast<float>(l.max_val), s.in.numel(), x, y, st);
                    } else if constexpr (cuda::isTensorMathKind<T>) {
                        cuda::runTensorMath(l, s, { x, inputCount(i) > 1 ? input(i, 1) : nullptr }, weight(i), y, st);
                    } else if constexpr (std::is_same_v<T, PReLU>) {
                        cuda::prelu(weight(i), l.num_parameters, s.in.n, s.in.c, s.in.d * s.in.h * s.in.w, x, y, st);
                    } else if constexpr (std::is_same_v<T, Add>) {
                        CONVSCOPE_CUDNN_CHECK(cudnnOpTensor(h.cudnn, p.op->get(), &kOne, p.yd->get(), in(0), &kOne,
                            p.yd->get(), in(1), &kZero, p.yd->get(), yv));
                        for (size_t k = 2; k < inputCount(i); ++k)
                            CONVSCOPE_CUDNN_CHECK(
                                cudnnAddTensor(h.cudnn, &kOne, p.yd->get(), in(k), &kOne, p.yd->get(), yv));
                    } else if constexpr (std::is_same_v<T, Mul>) {
                        // A is the full-size input, B the other (possibly the broadcast gate).
                        const bool gateFirst = s.ins[0] != s.out;
                        CONVSCOPE_CUDNN_CHECK(cudnnOpTensor(h.cudnn, p.op->get(), &kOne, p.yd->get(),
                            in(gateFirst ? 1 : 0), &kOne, p.xd->get(), in(gateFirst ? 0 : 1), &kZero, p.yd->get(), yv));
                    } else if constexpr (std::is_same_v<T, Concat>) {
                        std::vector<const float*> xs;
                        std::vector<long long> channels;
                        for (size_t k = 0; k < inputCount(i); ++k) {
                            xs.push_back(input(i, k));
                            channels.push_back(s.ins[k].c);
                        }
                        if (const int64_t dim = wrappedDim(l, s.out.ndim()); dim != 1)
                            cuda::concatAxis({ xs.begin(), xs.end() }, s.ins, s.out, dim, false, 4, y, st);
                        else
                            cuda::concatChannels(xs, channels, s.out.n, s.out.d * s.out.h * s.out.w, y, st);
                    } else if constexpr (std::is_same_v<T, Pad>) {
                        const cuda::PadMode mode = l.mode == Pad::Mode::Reflect ? cuda::PadMode::Reflect
                            : l.mode == Pad::Mode::Replicate                    ? cuda::PadMode::Replicate
                                                                                : cuda::PadMode::Constant;
                        cuda::pad2d(x, s.in.n * s.in.c, int(s.in.h), int(s.in.w), int(l.padding[0]), int(l.padding[2]),
                            int(s.out.h), int(s.out.w), mode, static_cast<float>(l.value), y, st);
                    } else if constexpr (std::is_same_v<T, Resize>) {
                        cuda::resizeNchw(resizePlan(l, s), s.in.n * s.in.c, x, y, st);
                    } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                        cuda::channelShuffle(x, s.in.n, s.in.c, l.groups, s.in.d * s.in.h * s.in.w, 4, y, st);
                    } else if constexpr (std::is_same_v<T, Slice>) {
                        const cuda::AxisRuns r = cuda::axisRuns(s.in, l.dim, false);
                        cuda::sliceAxis(x, r.outer, r.size, r.inner, l.start, l.end, 4, y, st);
                    } else if constexpr (
                        std::is_same_v<T,
                            Conv3d> || std::is_same_v<T, ConvTranspose3d> || std::is_same_v<T, MaxPool3d> || std::is_same_v<T, AvgPool3d>) {
                        p.volume->run(h.cudnn, layerBuffers(i), m_workspace.get(), m_workspace.bytes(), st);
                    } else if constexpr (isNormKind<T>) {
                        cuda::normalization(cuda::normGeometryOf(l, s.in), x, weight(i), bias(i), y, scratch(i),
                            deviceProperties().multiProcessorCount, st);
                    } else if constexpr (cuda::isGeneralTensorKind<T>) {
                        runTensorLayer(h.cublas, options().math, l, s, x, inputCount(i) > 1 ? input(i, 1) : nullptr,
                            weight(i), scratch(i), y, st);
                    } else {
                        static_assert(dependent_false<T>, "cudnn backend: runLayer has no branch for a layer kind");
                    }
                },
                spec(i));
        }

        std::map<std::string, std::string> extraMetadata() const override
        {
            std::map<std::string, std::string> m;
            switch (options().math) {
            case MathMode::FP32:
                m["math"] = "fp32 (cuDNN CUDNN_FMA_MATH, cuBLAS CUBLAS_PEDANTIC_MATH: no TF32)";
                break;
            case MathMode::TF32:
                m["math"] = "tf32 (FP32 NHWC tensors; cuDNN CUDNN_DATA_FLOAT, compute CUDNN_DATA_FLOAT, "
                            "CUDNN_DEFAULT_MATH; cuBLAS cublasGemmEx CUDA_R_32F, "
                            "CUBLAS_COMPUTE_32F_FAST_TF32)";
                break;
            case MathMode::FP16:
            case MathMode::BF16: {
                const bool f16 = options().math == MathMode::FP16;
                m["math"] = std::string(f16 ? "fp16" : "bf16") + " (" + (f16 ? "FP16" : "BF16")
                    + " NHWC tensors; cuDNN " + (f16 ? "CUDNN_DATA_HALF" : "CUDNN_DATA_BFLOAT16")
                    + ", compute CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH; cuBLAS cublasGemmEx "
                    + (f16 ? "CUDA_R_16F" : "CUDA_R_16BF")
                    + ", CUBLAS_COMPUTE_32F; FP32 bias and batch-norm parameters)";
                break;
            }
            }
            if (!storage().plainFp32()) {
                size_t nat = 0, copies = 0;
                for (size_t i = 0; i < layerCount(); ++i) {
                    const LayerSpec& l = spec(i);
                    if (std::holds_alternative<Flatten>(l) || std::holds_alternative<Identity>(l)
                        || std::holds_alternative<Dropout>(l))
                        continue; // views (a reshape is one in FP32 only: on copies here, it is counted)
                    (native(i) ? nat : copies) += 1;
                }
                m["native_layers"] = std::to_string(nat) + " native in " + storage().str() + ", "
                    + std::to_string(copies) + " on FP32 NCHW copies";
            }
            m["cudnn"] = cudnnVersionString();
            m["cudnn_compiled"] = std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "."
                + std::to_string(CUDNN_PATCHLEVEL);
            m["cublas"] = cublasVersionString();
            m["layout"] = !storage().plainFp32() ? "channels-last storage (native layers read and write it in place)"
                : m_conv.nhwc ? "nhwc (conv2d on channels-last tensors, transposes included in the layer time)"
                              : "nchw";
            m["workspace_limit"] = gpu::mib(m_conv.workspaceLimit);
            m["workspace_allocated"] = gpu::mib(m_workspace.bytes());
            std::string split;
            for (size_t i = 0; i < m_plans.size(); ++i) {
                const auto s = m_plans[i].conv ? m_plans[i].conv->nhwcSplit() : std::nullopt;
                if (s)
                    split += (split.empty() ? "" : "; ") + std::string("L") + std::to_string(i) + " in "
                        + formatMs(s->inMs) + " + conv " + formatMs(s->convMs) + " + out " + formatMs(s->outMs);
            }
            if (!split.empty())
                m["nhwc_split_median"] = split;
            return m;
        }

    private:
        // A volume [N, C, D, H, W] is described as [N, C, D·H, W]: the element-wise, per-channel and over-channel
        // calls (activations, op-tensor, batch norm, softmax, global pooling) see the same memory either way.
        // A layer that runs natively sees channels-last tensors of the storage type: NHWC of [N, C, D·H, W] is
        // NDHWC's memory too.
        std::unique_ptr<TensorDesc> tensor4(size_t i, const Shape& s) const
        {
            auto d = std::make_unique<TensorDesc>();
            if (native(i))
                d->set(CUDNN_TENSOR_NHWC, int(s.n), int(s.c), int(s.d * s.h), int(s.w), dataType());
            else
                d->set(CUDNN_TENSOR_NCHW, int(s.n), int(s.c), int(s.d * s.h), int(s.w));
            return d;
        }
        // Layer i reads and writes the session's non-FP32-NCHW storage itself (runsInStorage said so).
        bool native(size_t i) const { return !storage().plainFp32() && layerRunsInStorage(i); }
        cudnnDataType_t dataType() const { return cudnnType(storage().dtype); }

        std::string selection() const { return "cudnn." + algorithm(); }

        // The storage type of a layer that runs natively on the session's storage; nullopt for one on FP32 data.
        std::optional<DType> nativeType(size_t i) const
        {
            return native(i) ? std::optional<DType>(storage().dtype) : std::nullopt;
        }
        // A convolution on the storage runs in the session's mode; one on FP32 copies in onFp32Data's.
        const ConvOptions& convOptionsFor(size_t i) const { return native(i) ? m_conv : m_convOnCopies; }

        // What the convolutions of conv_layers.h, native_layers.h and volume_layers.h read and write: the storage
        // tensors of a native layer, else the FP32 tensors (or the base's FP32 copies).
        LayerBuffers layerBuffers(size_t i) const
        {
            const bool skip = inputCount(i) > 1 && std::holds_alternative<Conv2d>(spec(i)); // fused residual add's
            if (native(i))
                return { inputData(i), weight(i), bias(i), outputData(i), scratch(i),
                    skip ? inputData(i, 1) : nullptr };
            return { input(i), weight(i), bias(i), output(i), scratch(i), skip ? input(i, 1) : nullptr };
        }

        void reserveWorkspace(size_t bytes)
        {
            // One workspace serves every layer (they run one after another on one stream); it only grows, during
            // prepare, before the warm-up pass.
            if (bytes > m_workspace.bytes()) {
                m_workspace.reset();
                m_workspace = gpu::DeviceBuffer(bytes, "cudnn workspace");
            }
        }

        void prepareConv(size_t i, const Conv2d& spec, LayerPlan& p, Handles& h, cudaStream_t stream)
        {
            const std::string who = selection() + ": layer " + std::to_string(i) + " (" + layer(i).name + ")";
            if (native(i)) {
                p.nativeConv = planNativeConv(h.cudnn, spec, shape(i), storage().dtype, m_conv, m_pinned, m_fuseBias,
                    layerBuffers(i), stream, who);
                reserveWorkspace(p.nativeConv->choice.workspace);
                setLayerNote(i, p.nativeConv->note);
                return;
            }
            p.conv = std::make_unique<Conv2dPlan>(
                h.cudnn, spec, shape(i), m_convOnCopies, m_pinned, m_fuseBias, layerBuffers(i), stream, who);
            reserveWorkspace(p.conv->workspaceBytes());
            setLayerNote(i, p.conv->note());
        }

        void preparePool(size_t i, LayerPlan& p, const Pair& kernel, const Pair& stride, int mode)
        {
            Pool2dPlan plan = planPool2d(shape(i), kernel, stride, mode, native(i), dataType());
            p.xd = tensor4(i, shape(i).in);
            p.cudnnPool = plan.pool != nullptr;
            p.pool = std::move(plan.pool);
            p.yd = std::move(plan.yd);
            p.edge = plan.edge;
            setLayerNote(i, plan.note);
        }

        void runLinear(size_t i, LayerPlan& p, Handles& h, cudaStream_t st, const LayerShape& s)
        {
            CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h.cublas, st));
            // Explicit either way: FP32 never silently becomes TF32 through a default.
            CONVSCOPE_CUBLAS_CHECK(cublasSetMathMode(
                h.cublas, options().math == MathMode::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
            const LinearRows r = linearRows(s.in); // the last axis of any rank: rows × in_features
            const int n = int(r.rows), in = int(r.inFeatures), out = int(std::get<Linear>(spec(i)).out_features);
            // Row-major y[n, out] = x[n, in] · W[out, in]ᵀ is, column-major, yᵀ[out, n] = W · xᵀ with W read as
            // the transposed [in, out] column-major matrix.
            CONVSCOPE_CUBLAS_CHECK(cublasSgemm(h.cublas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &kOne, weight(i), in,
                input(i), in, &kZero, output(i), out));
            if (bias(i))
                CONVSCOPE_CUDNN_CHECK(
                    cudnnAddTensor(h.cudnn, &kOne, p.pd->get(), bias(i), &kOne, p.yd->get(), output(i)));
        }

        ConvOptions m_conv;
        ConvOptions m_convOnCopies; // for the layers that run on FP32 data (onFp32Data)
        std::optional<cudnnConvolutionFwdAlgo_t> m_pinned;
        bool m_fuseBias = false;
        bool m_nativeConv = true; // option native_conv (default 1)
        std::vector<LayerPlan> m_plans;
        gpu::DeviceBuffer m_workspace;
    };
} // namespace

std::unique_ptr<BackendSession> makeSession(
    const std::string& algorithm, const SessionOptions& options, std::shared_ptr<gpu::ArenaPool> pool)
{
    return std::make_unique<CudnnSession>(algorithm, options, std::move(pool));
}

} // namespace convscope::cudnn
