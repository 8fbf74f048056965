// The pad and crop steps of cuDNN's volume convolutions (volume_kernels.cuh). Both are copies: one thread per
// element of the tensor written, consecutive threads on consecutive columns so reads and writes coalesce along W.
#include "kernels/cudnn/volume_kernels.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/volume_index.cuh"

namespace convscope::cudnn {

namespace {
    __global__ void padVolumeKernel(Pad3d g, const float* __restrict__ x, float* __restrict__ y, unsigned total)
    {
        const int pd = g.d + g.front + g.back, ph = g.h + g.top + g.bottom, pw = g.w + g.left + g.right;
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const cuda::VolumeIndex at = cuda::volumeIndex(idx, pd, ph, pw);
            const int ix = at.x - g.left, iy = at.y - g.top, iz = at.z - g.front;
            const unsigned plane = at.plane;
            const bool in = ix >= 0 && ix < g.w && iy >= 0 && iy < g.h && iz >= 0 && iz < g.d;
            y[idx] = in ? __ldg(x + ((size_t(plane) * g.d + iz) * g.h + iy) * g.w + ix) : 0.0f;
        }
    }

    __global__ void cropVolumeKernel(
        Crop3d g, const float* __restrict__ full, const float* __restrict__ bias, float* __restrict__ y, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const cuda::VolumeIndex at = cuda::volumeIndex(idx, g.od, g.oh, g.ow);
            const int fx = at.x + g.offW, fy = at.y + g.offH, fz = at.z + g.offD;
            const unsigned plane = at.plane; // n·C + c
            const float b = bias ? __ldg(bias + plane % g.c) : 0.0f;
            const bool in = fx < g.fw && fy < g.fh && fz < g.fd;
            y[idx] = (in ? __ldg(full + ((size_t(plane) * g.fd + fz) * g.fh + fy) * g.fw + fx) : 0.0f) + b;
        }
    }

    unsigned blocksFor(long long total)
    {
        const long long b = (total + 255) / 256;
        return unsigned(b < (1LL << 30) ? b : (1LL << 30));
    }
} // namespace

void padVolume(const Pad3d& g, const float* x, float* y, cudaStream_t stream)
{
    const long long total = static_cast<long long>(g.n) * g.c * (g.d + g.front + g.back) * (g.h + g.top + g.bottom)
        * (g.w + g.left + g.right);
    if (total == 0)
        return;
    padVolumeKernel<<<blocksFor(total), 256, 0, stream>>>(g, x, y, unsigned(total));
    CONVSCOPE_CUDA_CHECK_LAUNCH("padVolumeKernel");
}

void cropVolumeAddBias(const Crop3d& g, const float* full, const float* bias, float* y, cudaStream_t stream)
{
    const long long total = static_cast<long long>(g.n) * g.c * g.od * g.oh * g.ow;
    if (total == 0)
        return;
    cropVolumeKernel<<<blocksFor(total), 256, 0, stream>>>(g, full, bias, y, unsigned(total));
    CONVSCOPE_CUDA_CHECK_LAUNCH("cropVolumeKernel");
}

} // namespace convscope::cudnn
