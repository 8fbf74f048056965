// The cudnn session's 2-D convolution layers on FP32 NCHW tensors — every conv2d of a plain FP32 session (or one
// that pins the NHWC switch), a Tensor Core session's conv2d with asymmetric padding, and every conv_transpose2d —
// planned once at prepare (layout, descriptors, algorithm, workspace, conv_plan.h), then only enqueued per pass.
// Beside native_layers.h (conv2d on a Tensor Core session's own storage) and volume_layers.h (the 3-D kinds);
// cudnn_session.cpp dispatches every kind.
//
//   conv2d            the pad step for asymmetric padding; with extra["layout"] = "nhwc" the input transposed to
//                     channels-last (fused with the pad step when both apply), the weights once here to [K, R, S, C]
//                     and the output back to NCHW, the split between transposes and convolution measured with
//                     events of its own; cuDNN's legacy call (with the bias, and a ReLU, fused where cuDNN allows)
//                     or the graph API plan cudnn.auto chose, then any other fused activation in place.
//   conv_transpose2d  cuDNN's backward-data convolution, then the crop step where cuDNN cannot write the layer's
//                     window itself (it adds the bias on the way). In a Tensor Core session it runs natively on the
//                     storage (NHWC tensors of the storage type, [C_in, R, S, C_out/g] weights converted once here,
//                     FP32 compute type), the crop and the FP32 bias on channels-last data (volume_kernels.cuh,
//                     storage_kernels.cuh).
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/cudnn_support.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace convscope::cudnn {

// Scratch a conv2d on FP32 data (the prepared input, the NHWC output and weights) or a conv_transpose2d (the full
// transposed output; native: in the storage type, and the converted weight) needs in the session's arena; 0 for other
// layers. `native`: the storage type of a layer that runs natively on it.
size_t convScratchBytes(const LayerSpec& spec, const LayerShape& shape, bool nhwc, std::optional<DType> native);

class Conv2dPlan {
public:
    // Untimed: transposes the weights for NHWC on `stream` and chooses the algorithm (pinned, or auto: Find and the
    // graph API's engines timed on the buffers, whose contents are overwritten). `who` names the layer in messages.
    Conv2dPlan(cudnnHandle_t h, const Conv2d& spec, const LayerShape& shape, const ConvOptions& o,
        std::optional<cudnnConvolutionFwdAlgo_t> pinned, bool fuseBias, const LayerBuffers& b, cudaStream_t stream,
        const std::string& who);

    // Enqueues the layer on the handle's stream; `workspace` holds at least workspaceBytes().
    void run(cudnnHandle_t h, const LayerBuffers& b, void* workspace, size_t workspaceBytes, cudaStream_t st);
    size_t workspaceBytes() const { return m_choice.workspace; }
    const std::string& note() const { return m_note; }

    // With the NHWC switch, the medians of the transposes and the convolution over the passes completed so far.
    struct NhwcSplit {
        size_t passes;
        double inMs, convMs, outMs;
    };
    std::optional<NhwcSplit> nhwcSplit() const;

private:
    void harvest() const; // moves the last completed pass's split into the samples (at most once per pass)

    ConvLayout m_layout;
    ConvDescriptors m_d;
    AlgoChoice m_choice;
    float* m_prepared = nullptr; // padded and/or NHWC input
    float* m_nhwcOut = nullptr;
    float* m_nhwcWeight = nullptr;
    std::unique_ptr<ActivationDesc> m_act; // identity (or relu) for a bias fused into the convolution call
    std::unique_ptr<ActivationDesc> m_epilogue; // a fused activation cuDNN's fused call cannot take
    bool m_fusedBias = false;
    // A fused residual add (compute/fusion.h): the z operand of cuDNN's fused call where it runs (NCHW), else one
    // cudnnAddTensor before the activation; in the NHWC layout (the skip is NCHW) after the transpose back, on
    // m_nchwOut's descriptor, with the activation after it.
    bool m_residual = false, m_lateSkip = false;
    TensorDesc m_nchwOut;
    std::string m_note;
    // NHWC split timing: events before the input transpose, after it, after the convolution, after the output
    // transpose; samples of each part from completed passes.
    std::vector<gpu::CudaEvent> m_marks;
    mutable bool m_marksRecorded = false;
    mutable std::vector<double> m_inMs, m_convMs, m_outMs;
};

class ConvTranspose2dPlan {
public:
    // Untimed: Find over the backward-data algorithms on the layer's buffers (their contents are overwritten).
    // `native`: the session's storage type, for a layer that runs natively on it (converts the weight on `stream`).
    ConvTranspose2dPlan(cudnnHandle_t h, const ConvTranspose2d& spec, const LayerShape& shape, const ConvOptions& o,
        const LayerBuffers& b, std::optional<DType> native, cudaStream_t stream);

    void run(cudnnHandle_t h, const LayerBuffers& b, void* workspace, size_t workspaceBytes, cudaStream_t st) const;
    size_t workspaceBytes() const { return m_bwd.workspace; }
    const std::string& note() const { return m_note; }

private:
    ConvTransposeLayout m_layout;
    ConvTransposeDescriptors m_d;
    BwdDataChoice m_bwd;
    void* m_full = nullptr; // the full transposed output, when cropping (scratch)
    const void* m_weight = nullptr; // PyTorch's FP32 weight, or native: [C_in, R, S, C_out/g] in scratch
    std::string m_note;
};

} // namespace convscope::cudnn
