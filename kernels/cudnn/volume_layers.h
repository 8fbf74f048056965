// The cudnn session's 3-D window layers (conv3d, conv_transpose3d, maxpool3d, avgpool3d): planned once at prepare
// (descriptors, algorithm, workspace, the pad or crop step, volume_plan.h), then only enqueued per pass. Kept apart
// from cudnn_session.cpp, which dispatches every kind; batch norm, global pooling and the element-wise layers need
// nothing 3-D of their own there (a volume is described as [N, C, D·H, W]).
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
// output); 0 for other layers.
size_t volumeScratchBytes(const LayerSpec& spec, const LayerShape& shape);

// Plans a 3-D window layer: null for any other kind. `auto` when pinned is nullopt. Untimed; may run cuDNN's Find on
// the layer's buffers (their contents are overwritten).
std::unique_ptr<VolumeLayerPlan> planVolumeLayer(const LayerSpec& spec, const LayerShape& shape, const ConvOptions& o,
    std::optional<cudnnConvolutionFwdAlgo_t> pinned, cudnnHandle_t h, const LayerBuffers& b, cudaStream_t stream);

} // namespace convscope::cudnn
