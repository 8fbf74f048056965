#pragma once

#include <cuda_runtime_api.h>

namespace convscope::gpu {
// cudaSuccess when this module's kernels can run on the current device.
cudaError_t probeKernelImage();
} // namespace convscope::gpu
