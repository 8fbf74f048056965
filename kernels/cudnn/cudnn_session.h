// A cudnn backend session: the shared GPU session flow (kernels/common/gpu_session.h) with every layer done by
// cuDNN (cuBLAS for linear), plus the small steps cuDNN cannot express (layout_kernels.cuh).
#pragma once

#include "compute/backend.h"
#include "kernels/common/device_buffer.h"

#include <memory>
#include <string>

namespace convscope::cudnn {

std::unique_ptr<BackendSession> makeSession(
    const std::string& algorithm, const SessionOptions& options, std::shared_ptr<gpu::ArenaPool> pool);

// The algorithm explorer for conv2d layer `layer` of `net` (see Backend::explore): a JSON document.
std::string exploreConvolution(
    const Network& net, const ShapeReport& shapes, size_t layer, const SessionOptions& options);

} // namespace convscope::cudnn
