#include "kernels/cudnn/volume_layers.h"

#include "compute/error.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cuda/pooling3d.cuh"
#include "kernels/cudnn/volume_kernels.cuh"

#include <cstdio>

namespace convscope::cudnn {

namespace {

    class Conv3dPlan final : public VolumeLayerPlan {
    public:
        Conv3dPlan(const Conv3d& spec, const LayerShape& s, const ConvOptions& o,
            std::optional<cudnnConvolutionFwdAlgo_t> pinned, cudnnHandle_t h, const LayerBuffers& b, cudaStream_t st)
            : m_layout(conv3dLayout(spec, s))
        {
            describe(m_layout, mathTypeFor(o.math), m_d);
            const float* x = m_layout.padStep ? static_cast<const float*>(b.scratch) : b.x;
            if (m_layout.padStep)
                padVolume(pad(), b.x, static_cast<float*>(b.scratch), st);
            m_choice = chooseConv3d(h, m_layout, m_d, o, pinned, x, b.weight, b.y, st);
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
                + ", Nd descriptors" + (m_layout.padStep ? ", explicit pad step for asymmetric padding" : "")
                + (b.bias ? (m_fusedBias ? ", bias fused" : ", bias by cudnnAddTensor") : "");
        }

        void run(cudnnHandle_t h, const LayerBuffers& b, void* ws, size_t wsBytes, cudaStream_t st) const override
        {
            const float* x = b.x;
            if (m_layout.padStep) {
                padVolume(pad(), b.x, static_cast<float*>(b.scratch), st);
                x = static_cast<const float*>(b.scratch);
            }
            if (m_fusedBias) {
                CONVSCOPE_CUDNN_CHECK(fusedStatus(h, x, b, ws, wsBytes));
                return;
            }
            CONVSCOPE_CUDNN_CHECK(cudnnConvolutionForward(h, &kOne, m_d.x.get(), x, m_d.w.get(), b.weight,
                m_d.conv.get(), m_choice.algo, ws, wsBytes, &kZero, m_d.y.get(), b.y));
            if (b.bias)
                CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h, &kOne, m_d.bias.get(), b.bias, &kOne, m_d.y.get(), b.y));
        }
        size_t workspaceBytes() const override { return m_choice.workspace; }
        std::string note() const override { return m_note; }

    private:
        cudnnStatus_t fusedStatus(
            cudnnHandle_t h, const float* x, const LayerBuffers& b, void* ws, size_t wsBytes) const
        {
            return cudnnConvolutionBiasActivationForward(h, &kOne, m_d.x.get(), x, m_d.w.get(), b.weight,
                m_d.conv.get(), m_choice.algo, ws, wsBytes, &kZero, m_d.y.get(), b.y, m_d.bias.get(), b.bias,
                m_identity.get(), m_d.y.get(), b.y);
        }
        bool fusedCallRuns(cudnnHandle_t h, const float* x, const LayerBuffers& b)
        {
            // Its workspace: as much as the unfused call needs, allocated just for this probe.
            gpu::DeviceBuffer ws;
            if (m_choice.workspace)
                ws = gpu::DeviceBuffer(m_choice.workspace, "conv3d fused-bias probe workspace");
            return fusedStatus(h, x, b, ws.get(), m_choice.workspace) == CUDNN_STATUS_SUCCESS;
        }

        Pad3d pad() const
        {
            const Conv3dLayout& l = m_layout;
            return { l.n, l.cin, l.in[0], l.in[1], l.in[2], int(l.pad.front), int(l.pad.back), int(l.pad.top),
                int(l.pad.bottom), int(l.pad.left), int(l.pad.right) };
        }

        Conv3dLayout m_layout;
        mutable Conv3dDescriptors m_d;
        Conv3dChoice m_choice;
        bool m_fusedBias = false;
        ActivationDesc m_identity;
        std::string m_note;
    };

    class ConvTranspose3dPlan final : public VolumeLayerPlan {
    public:
        ConvTranspose3dPlan(const ConvTranspose3d& spec, const LayerShape& s, const ConvOptions& o, cudnnHandle_t h,
            const LayerBuffers& b)
            : m_layout(convTranspose3dLayout(spec, s))
        {
            describe(m_layout, mathTypeFor(o.math), m_d);
            m_choice = chooseBwdData3d(h, m_layout, m_d, o, b.weight, b.x, b.scratch);
            m_note = "cudnnConvolutionBackwardData " + bwdDataAlgorithmName(m_choice.algo)
                + (m_choice.cached ? " (cached choice)" : "")
                + " into the full transposed output, then a crop step with the bias";
        }

        void run(cudnnHandle_t h, const LayerBuffers& b, void* ws, size_t wsBytes, cudaStream_t st) const override
        {
            CONVSCOPE_CUDNN_CHECK(cudnnConvolutionBackwardData(h, &kOne, m_d.w.get(), b.weight, m_d.dy.get(), b.x,
                m_d.conv.get(), m_choice.algo, ws, wsBytes, &kZero, m_d.dx.get(), b.scratch));
            const ConvTranspose3dLayout& l = m_layout;
            cropVolumeAddBias({ l.n, l.cout, l.fd, l.fh, l.fw, l.offD, l.offH, l.offW, l.out[0], l.out[1], l.out[2] },
                static_cast<const float*>(b.scratch), b.bias, b.y, st);
        }
        size_t workspaceBytes() const override { return m_choice.workspace; }
        std::string note() const override { return m_note; }

    private:
        ConvTranspose3dLayout m_layout;
        mutable ConvTranspose3dDescriptors m_d;
        BwdDataChoice m_choice;
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
                cuda::maxPool3d(m_geometry, b.x, b.y, st);
            else
                cuda::avgPool3d(m_geometry, b.x, b.y, st);
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

size_t volumeScratchBytes(const LayerSpec& spec, const LayerShape& shape)
{
    if (const auto* c = std::get_if<Conv3d>(&spec))
        return conv3dLayout(*c, shape).paddedFloats() * sizeof(float);
    if (const auto* t = std::get_if<ConvTranspose3d>(&spec))
        return convTranspose3dLayout(*t, shape).fullFloats() * sizeof(float);
    return 0;
}

std::unique_ptr<VolumeLayerPlan> planVolumeLayer(const LayerSpec& spec, const LayerShape& s, const ConvOptions& o,
    std::optional<cudnnConvolutionFwdAlgo_t> pinned, cudnnHandle_t h, const LayerBuffers& b, cudaStream_t stream)
{
    if (const auto* c = std::get_if<Conv3d>(&spec))
        return std::make_unique<Conv3dPlan>(*c, s, o, pinned, h, b, stream);
    if (const auto* t = std::get_if<ConvTranspose3d>(&spec))
        return std::make_unique<ConvTranspose3dPlan>(*t, s, o, h, b);
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
