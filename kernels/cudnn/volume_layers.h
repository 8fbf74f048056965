// The cudnn session's 3-D window layers (conv3d, conv_transpose3d, maxpool3d, avgpool3d): planned once at prepare
// (descriptors, algorithm, workspace, the pad or crop step, volume_plan.h), then only enqueued per pass. In a Tensor
// Core session the two convolutions run natively on its NDHWC storage (volume_plan.h); the pools on FP32 copies. Kept
// apart from cudnn_session.cpp, which dispatches every kind; batch norm, global pooling and the element-wise layers
// need nothing 3-D of their own there (a volume is described as [N, C, D·H, W]).
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/volume_plan.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>

namespace convscope::cudnn {

class VolumeLayerPlan {
public:
    virtual ~VolumeLayerPlan() = default;
    // Enqueues the layer on the handle's stream; `workspace` holds at least workspaceBytes().
    virtual void run(
        cudnnHandle_t h, const LayerBuffers& b, void* workspace, size_t workspaceBytes, cudaStream_t stream) const = 0;
    virtual size_t workspaceBytes() const { return 0; }
    virtual std::string note() const = 0;
};

// Scratch a 3-D layer needs in the session's arena (the pad step's padded input, the transposed convolution's full
// output; native: in the storage type, then the converted weight and bias); 0 for other layers. `native`: the
// storage type of a convolution that runs natively on the session's channels-last storage.
size_t volumeScratchBytes(const LayerSpec& spec, const LayerShape& shape, std::optional<DType> native);

// Plans a 3-D window layer: null for any other kind. `auto` when pinned is nullopt. Untimed; may run cuDNN's Find on
// the layer's buffers (their contents are overwritten). `native` (conv3d, conv_transpose3d only): `b` holds the
// session's channels-last tensors of that type, and the weight is converted on `stream`.
std::unique_ptr<VolumeLayerPlan> planVolumeLayer(const LayerSpec& spec, const LayerShape& shape, const ConvOptions& o,
    std::optional<cudnnConvolutionFwdAlgo_t> pinned, cudnnHandle_t h, const LayerBuffers& b,
    std::optional<DType> native, cudaStream_t stream);

} // namespace convscope::cudnn
