// Resize (compute/layer_spec.h's Resize) on the GPU, a block per output row, its taps computed by
// compute/resize_math.h as on the CPU: NCHW / NCDHW FP32 for the cuda backend's FP32 sessions, channels-last in the
// storage type (FP32, FP16, BF16, FP32 math) for its storage-format sessions. Shared by both GPU modules: cuDNN has
// no resize call, so the cudnn session runs these (its layer note says so).
#pragma once

#include "compute/resize_math.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// x: `planes` (N·C) planes of D × H × W (the plan's axis[].in), y: planes of the plan's outputs.
void resizeNchw(const ResizePlan& plan, long long planes, const float* x, float* y, cudaStream_t st);
// x: [n, D, H, W, channels] in `type`, y: [n, D', H', W', channels].
void resizeChannelsLast(
    const ResizePlan& plan, long long n, long long channels, DType type, const void* x, void* y, cudaStream_t st);

} // namespace convscope::cuda
