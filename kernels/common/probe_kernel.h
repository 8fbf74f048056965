// Whether this module's device code has an image for the current GPU (a build for sm_90 on an sm_80 card has none).
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::gpu {
// cudaSuccess when this module's kernels can run on the current device.
cudaError_t probeKernelImage();
} // namespace convscope::gpu
