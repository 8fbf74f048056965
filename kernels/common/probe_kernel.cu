// An empty kernel whose only purpose is to ask the runtime whether this build carries machine code or PTX
// the present GPU can run (cudaFuncGetAttributes fails with cudaErrorNoKernelImageForDevice otherwise).
#include "kernels/common/probe_kernel.h"

namespace convscope::gpu {

namespace {
    __global__ void probeKernel() { }
}

cudaError_t probeKernelImage()
{
    cudaFuncAttributes attr {};
    return cudaFuncGetAttributes(&attr, probeKernel);
}

} // namespace convscope::gpu
