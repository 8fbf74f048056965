#include "kernels/cudnn/volume_layers.h"

#include "compute/error.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/storage_convert.cuh"
#include "kernels/cuda/pooling3d.cuh"
#include "kernels/cudnn/storage_kernels.cuh"
#include "kernels/cudnn/volume_kernels.cuh"

#include <cstdio>

namespace convscope::cudnn {

namespace {

    // Where a native plan keeps what it converts once: the weight (and the bias, for cuDNN's fused call) in the
    // storage type, after the FP32 path's own scratch (the padded input, the full transposed output).
    struct NativeParams {
        const void* weight = nullptr;
        const void* bias = nullptr;
    };
    NativeParams convertParams(
        const LayerBuffers& b, size_t offset, const Shape& weightShape, DType type, int biasCount, cudaStream_t st)
    {
        auto* sp = static_cast<char*>(b.scratch) + offset;
        // The weight's channels-last form is cuDNN's NHWC filter: [K, C/g, kd, kh, kw] → [K, kd, kh, kw, C/g].
        gpu::toStorage(b.weight, sp, weightShape, StorageFormat { type, true }, st);
        NativeParams p { sp, b.bias };
        if (b.bias && biasCount > 0 && type != DType::F32) {
            void* bias = sp + gpu::DeviceArena::alignUp(size_t(weightShape.numel()) * dtypeBytes(type));
            gpu::convertValues(b.bias, bias, biasCount, type, st);
            p.bias = bias;
        }
        return p;
    }

    Shape conv3dWeightShape(const ConvGeometry<3>& l)
    {
        return Shape::ncdhw(l.cout, l.cin / l.groups, l.kernel[0], l.kernel[1], l.kernel[2]);
    }
    Shape convTranspose3dWeightShape(const ConvGeometry<3>& l)
    {
        return Shape::ncdhw(l.cin, l.cout / l.groups, l.kernel[0], l.kernel[1], l.kernel[2]);
    }
    size_t conv3dPaddedBytes(const Conv3dLayout& l)
    {
        return gpu::DeviceArena::alignUp(l.paddedFloats() * dtypeBytes(l.storage));
    }
    size_t convTranspose3dFullBytes(const ConvTranspose3dLayout& l)
    {
        return gpu::DeviceArena::alignUp(l.fullFloats() * dtypeBytes(l.storage));
    }

    class Conv3dPlan final : public VolumeLayerPlan {
    public:
        Conv3dPlan(const Conv3d& spec, const LayerShape& s, const ConvOptions& o,
            std::optional<cudnnConvolutionFwdAlgo_t> pinned, cudnnHandle_t h, const LayerBuffers& b,
            std::optional<DType> native, cudaStream_t st)
            : m_layout(conv3dLayout(spec, s, native))
        {
            const Conv3dLayout& l = m_layout;
            m_weight = b.weight;
            m_bias = b.bias;
            if (l.native) {
                const NativeParams p
                    = convertParams(b, conv3dPaddedBytes(l), conv3dWeightShape(l), l.storage, l.cout, st);
                m_weight = p.weight;
                m_bias = p.bias;
            }
            describe(l, mathTypeFor(o.math), m_d);
            const void* x = l.padStep ? b.scratch : b.x;
            if (l.padStep)
                padStep(b, st);
            m_choice = chooseConv3d(h, l, m_d, o, pinned, x, m_weight, b.y, st);
            // cudnnConvolutionBiasActivationForward takes the identity activation only with implicit_precomp_gemm
            // (conv_plan.h); other algorithms add the bias in a second pass, as PyTorch does.
            m_fusedBias = b.bias && m_choice.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
            if (m_fusedBias) {
                m_identity.set(CUDNN_ACTIVATION_IDENTITY, 0.0);
                // Tried once here: should this cuDNN refuse the fused call on 5-D tensors, the bias takes its own pass.
                m_fusedBias = fusedCallRuns(h, x, b);
            }
            m_note = (pinned ? "cuDNN " + algorithmName(m_choice.algo)
                             : "cudnn.auto → " + algorithmName(m_choice.algo)
                                 + (m_choice.cached ? std::string(" (cached choice)")
                                                    : " (fastest of " + std::to_string(m_choice.timed)
                                             + " timed: " + formatMs(m_choice.ms) + ")"))
                + ", Nd descriptors, math " + mathTypeName(m_choice.math)
                + (l.native ? "; " + nativeConvNote(l.storage, "NDHWC", "[K, kd, kh, kw, C/g]") : std::string())
                + (l.padStep ? std::string(", explicit pad step for asymmetric padding")
                            + (l.native ? std::string(" (a channels-last copy of ours in ") + dtypeName(l.storage) + ")"
                                        : std::string())
                             : std::string())
                + (b.bias ? (m_fusedBias ? std::string(", bias fused (cudnnConvolutionBiasActivationForward")
                               + (l.native ? std::string(", bias in ") + dtypeName(l.storage) : std::string()) + ")"
                           : l.native ? std::string(", FP32 bias in one pass of ours (FP32 math)")
                                      : std::string(", bias by cudnnAddTensor"))
                          : std::string());
        }

        void run(cudnnHandle_t h, const LayerBuffers& b, void* ws, size_t wsBytes, cudaStream_t st) const override
        {
            const Conv3dLayout& l = m_layout;
            const void* x = b.x;
            if (l.padStep) {
                padStep(b, st);
                x = b.scratch;
            }
            if (m_fusedBias) {
                CONVSCOPE_CUDNN_CHECK(fusedStatus(h, x, b, ws, wsBytes));
                return;
            }
            CONVSCOPE_CUDNN_CHECK(cudnnConvolutionForward(h, &kOne, m_d.x.get(), x, m_d.w.get(), m_weight,
                m_d.conv.get(), m_choice.algo, ws, wsBytes, &kZero, m_d.y.get(), b.y));
            if (!b.bias)
                return;
            if (l.native)
                biasActivation(b.y, b.bias, int64_t(l.n) * l.cout * l.out[0] * l.out[1] * l.out[2], l.cout, l.storage,
                    EpilogueAct::None, 0.0f, st);
            else
                CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h, &kOne, m_d.bias.get(), b.bias, &kOne, m_d.y.get(), b.y));
        }
        size_t workspaceBytes() const override { return m_choice.workspace; }
        std::string note() const override { return m_note; }

    private:
        cudnnStatus_t fusedStatus(cudnnHandle_t h, const void* x, const LayerBuffers& b, void* ws, size_t wsBytes) const
        {
            return cudnnConvolutionBiasActivationForward(h, &kOne, m_d.x.get(), x, m_d.w.get(), m_weight,
                m_d.conv.get(), m_choice.algo, ws, wsBytes, &kZero, m_d.y.get(), b.y, m_d.bias.get(), m_bias,
                m_identity.get(), m_d.y.get(), b.y);
        }
        bool fusedCallRuns(cudnnHandle_t h, const void* x, const LayerBuffers& b)
        {
            // Its workspace: as much as the unfused call needs, allocated just for this probe.
            gpu::DeviceBuffer ws;
            if (m_choice.workspace)
                ws = gpu::DeviceBuffer(m_choice.workspace, "conv3d fused-bias probe workspace");
            return fusedStatus(h, x, b, ws.get(), m_choice.workspace) == CUDNN_STATUS_SUCCESS;
        }

        void padStep(const LayerBuffers& b, cudaStream_t st) const
        {
            const Conv3dLayout& l = m_layout;
            const Pad3d g { l.n, l.cin, l.in[0], l.in[1], l.in[2], int(l.pad.front), int(l.pad.back), int(l.pad.top),
                int(l.pad.bottom), int(l.pad.left), int(l.pad.right) };
            if (l.native)
                padVolumeChannelsLast(g, l.storage, b.x, b.scratch, st);
            else
                padVolume(g, b.xf(), static_cast<float*>(b.scratch), st);
        }

        Conv3dLayout m_layout;
        mutable Conv3dDescriptors m_d;
        Conv3dChoice m_choice;
        const void* m_weight = nullptr; // PyTorch's FP32 weight, or native: [K, kd, kh, kw, C/g] in scratch
        const void* m_bias = nullptr; // what the fused call reads: FP32, or native: in the storage type
        bool m_fusedBias = false;
        ActivationDesc m_identity;
        std::string m_note;
    };

    class ConvTranspose3dPlan final : public VolumeLayerPlan {
    public:
        ConvTranspose3dPlan(const ConvTranspose3d& spec, const LayerShape& s, const ConvOptions& o, cudnnHandle_t h,
            const LayerBuffers& b, std::optional<DType> native, cudaStream_t st)
            : m_layout(convTranspose3dLayout(spec, s, native))
        {
            const ConvTranspose3dLayout& l = m_layout;
            m_weight = b.weight;
            if (l.native)
                m_weight
                    = convertParams(b, convTranspose3dFullBytes(l), convTranspose3dWeightShape(l), l.storage, 0, st)
                          .weight;
            describe(l, mathTypeFor(o.math), m_d);
            m_choice = chooseBwdData3d(h, l, m_d, o, m_weight, b.x, b.scratch);
            m_note = "cudnnConvolutionBackwardData " + bwdDataAlgorithmName(m_choice.algo)
                + (m_choice.cached ? " (cached choice)" : "") + ", math " + mathTypeName(m_choice.math)
                + (l.native ? "; " + nativeConvNote(l.storage, "NDHWC", "[C_in, kd, kh, kw, C_out/g]") : std::string())
                + "; into the full transposed output, then a crop step" + (b.bias ? " with the bias" : "")
                + (l.native ? " (a channels-last pass of ours, FP32 math)" : "");
        }

        void run(cudnnHandle_t h, const LayerBuffers& b, void* ws, size_t wsBytes, cudaStream_t st) const override
        {
            CONVSCOPE_CUDNN_CHECK(cudnnConvolutionBackwardData(h, &kOne, m_d.w.get(), m_weight, m_d.dy.get(), b.x,
                m_d.conv.get(), m_choice.algo, ws, wsBytes, &kZero, m_d.dx.get(), b.scratch));
            const ConvTranspose3dLayout& l = m_layout;
            const Crop3d g { l.n, l.cout, l.fd, l.fh, l.fw, l.offD, l.offH, l.offW, l.out[0], l.out[1], l.out[2] };
            if (l.native)
                cropVolumeChannelsLastAddBias(g, l.storage, b.scratch, b.bias, b.y, st);
            else
                cropVolumeAddBias(g, static_cast<const float*>(b.scratch), b.bias, b.yf(), st);
        }
        size_t workspaceBytes() const override { return m_choice.workspace; }
        std::string note() const override { return m_note; }

    private:
        ConvTranspose3dLayout m_layout;
        mutable ConvTranspose3dDescriptors m_d;
        BwdDataChoice m_choice;
        const void* m_weight = nullptr; // PyTorch's FP32 weight, or native: [C_in, kd, kh, kw, C_out/g] in scratch
        std::string m_note;
    };

    // cuDNN's Nd pooling where it is exactly PyTorch's, else our kernel (pool3dRefusal says why).
    class Pool3dPlan final : public VolumeLayerPlan {
    public:
        Pool3dPlan(const LayerShape& s, const Triple& kernel, const Triple& stride, const Triple& dilation,
            cudnnPoolingMode_t mode, std::string refusal, int divisorOverride)
            : m_ours(!refusal.empty())
            , m_mode(mode)
        {
            const Padding3d& p = s.resolvedPadding3d;
            m_geometry = { int(s.in.n), int(s.in.c), int(s.in.d), int(s.in.h), int(s.in.w), int(s.out.d), int(s.out.h),
                int(s.out.w), int(kernel[0]), int(kernel[1]), int(kernel[2]), int(stride[0]), int(stride[1]),
                int(stride[2]), int(p.front), int(p.back), int(p.top), int(p.bottom), int(p.left), int(p.right),
                int(dilation[0]), int(dilation[1]), int(dilation[2]),
                mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, divisorOverride };
            if (m_ours) {
                m_note = "our CUDA kernel: cuDNN's pooling cannot take " + refusal;
                return;
            }
            m_x.set5d(int(s.in.n), int(s.in.c), int(s.in.d), int(s.in.h), int(s.in.w));
            m_y.set5d(int(s.out.n), int(s.out.c), int(s.out.d), int(s.out.h), int(s.out.w));
            const int window[3] = { int(kernel[0]), int(kernel[1]), int(kernel[2]) };
            const int pads[3] = { int(p.front), int(p.top), int(p.left) };
            const int strides[3] = { int(stride[0]), int(stride[1]), int(stride[2]) };
            // NaN propagates through max pooling, as in PyTorch.
            CONVSCOPE_CUDNN_CHECK(
                cudnnSetPoolingNdDescriptor(m_pool.get(), mode, CUDNN_PROPAGATE_NAN, 3, window, pads, strides));
            m_note = "cudnnPoolingForward (Nd)";
        }

        void run(cudnnHandle_t h, const LayerBuffers& b, void*, size_t, cudaStream_t st) const override
        {
            if (!m_ours) {
                CONVSCOPE_CUDNN_CHECK(
                    cudnnPoolingForward(h, m_pool.get(), &kOne, m_x.get(), b.x, &kZero, m_y.get(), b.y));
                return;
            }
            if (m_mode == CUDNN_POOLING_MAX)
                cuda::maxPool3d(m_geometry, b.xf(), b.yf(), st);
            else
                cuda::avgPool3d(m_geometry, b.xf(), b.yf(), st);
        }
        std::string note() const override { return m_note; }

    private:
        bool m_ours;
        cudnnPoolingMode_t m_mode;
        cuda::Pool3dGeometry m_geometry {};
        PoolDesc m_pool;
        TensorDesc m_x, m_y;
        std::string m_note;
    };
} // namespace

size_t volumeScratchBytes(const LayerSpec& spec, const LayerShape& shape, std::optional<DType> native)
{
    // A native plan converts its weight (conv3d: and its bias) after the FP32 path's scratch (convertParams).
    auto params = [&](const Shape& weight, int64_t bias) {
        if (!native)
            return size_t(0);
        const size_t bytes = dtypeBytes(*native);
        return gpu::DeviceArena::alignUp(size_t(weight.numel()) * bytes) + size_t(bias) * bytes;
    };
    if (const auto* c = std::get_if<Conv3d>(&spec)) {
        const Conv3dLayout l = conv3dLayout(*c, shape, native);
        return conv3dPaddedBytes(l) + params(conv3dWeightShape(l), l.cout);
    }
    if (const auto* t = std::get_if<ConvTranspose3d>(&spec)) {
        const ConvTranspose3dLayout l = convTranspose3dLayout(*t, shape, native);
        return convTranspose3dFullBytes(l) + params(convTranspose3dWeightShape(l), 0);
    }
    return 0;
}

std::unique_ptr<VolumeLayerPlan> planVolumeLayer(const LayerSpec& spec, const LayerShape& s, const ConvOptions& o,
    std::optional<cudnnConvolutionFwdAlgo_t> pinned, cudnnHandle_t h, const LayerBuffers& b,
    std::optional<DType> native, cudaStream_t stream)
{
    if (const auto* c = std::get_if<Conv3d>(&spec))
        return std::make_unique<Conv3dPlan>(*c, s, o, pinned, h, b, native, stream);
    if (const auto* t = std::get_if<ConvTranspose3d>(&spec))
        return std::make_unique<ConvTranspose3dPlan>(*t, s, o, h, b, native, stream);
    if (const auto* m = std::get_if<MaxPool3d>(&spec))
        return std::make_unique<Pool3dPlan>(
            s, m->kernel_size, m->effectiveStride(), m->dilation, CUDNN_POOLING_MAX, pool3dRefusal(*m, s), 0);
    if (const auto* a = std::get_if<AvgPool3d>(&spec))
        return std::make_unique<Pool3dPlan>(s, a->kernel_size, a->effectiveStride(), Triple { 1, 1, 1 },
            a->count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                 : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
            pool3dRefusal(*a, s), a->divisor_override ? int(*a->divisor_override) : 0);
    return nullptr;
}

} // namespace convscope::cudnn
