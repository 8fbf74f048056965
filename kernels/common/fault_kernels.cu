// The two kernels fault injection launches (fault_injection.h): one with an impossible block size, which the
// runtime refuses at launch (cudaErrorInvalidValue on CUDA 13, cudaErrorInvalidConfiguration before; not sticky), and
// one that stores through a null pointer, which faults on the device (cudaErrorIllegalAddress, sticky: the context is
// unusable afterwards).
#include <cuda_runtime_api.h>

namespace convscope::gpu {

namespace {
    __global__ void faultNothing() { }

    __global__ void faultStoreThroughNull(float* target) { *static_cast<volatile float*>(target) = 1.0f; }
} // namespace

void launchInvalidConfiguration(cudaStream_t stream)
{
    // 4096 threads per block: above every GPU's limit of 1024.
    faultNothing<<<1, 4096, 0, stream>>>();
}

void launchIllegalAddress(cudaStream_t stream) { faultStoreThroughNull<<<1, 1, 0, stream>>>(nullptr); }

} // namespace convscope::gpu
