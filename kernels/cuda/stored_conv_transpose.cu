// Storage-format conv_transpose2d / conv_transpose3d (stored_conv.cuh): the gather kernels of
// stored_conv_kernel.cuh with the transposed tap mapping. Weights prepared by storedConvPrepare (stored_conv.cu).
#include "kernels/cuda/stored_conv.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/stored_conv_kernel.cuh"

namespace convscope::cuda {

void convTransposeChannelsLast(
    const Conv3dGeometry& g, DType type, const void* x, const float* w, const float* bias, void* y, cudaStream_t st)
{
    stored_conv::launch<true>(g, -1, 0.0f, type, x, w, bias, nullptr, y, st);
    CONVSCOPE_CUDA_CHECK_LAUNCH("stored conv_transpose");
}

} // namespace convscope::cuda
