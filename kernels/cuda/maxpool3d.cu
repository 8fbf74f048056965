// maxpool3d: y[n, c, z, y, x] = max over the window taps (z·sd − front + a·dd, y·sh − top + b·dh,
// x·sw − left + e·dw) that fall inside the input; padding never wins (−∞, as in PyTorch), and a NaN is kept once
// taken (`v > best || isnan(v)`, PyTorch's rule), as in maxpool2d.cu.
//
// One thread per output element, consecutive threads on consecutive output columns: memory-bound, the caches serve
// the overlap of neighbouring windows. ceil_mode and the back/bottom/right padding only change the output size.
#include "kernels/cuda/pooling3d.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/volume_index.cuh"

namespace convscope::cuda {

namespace {
    __global__ void maxPool3dKernel(
        Pool3dGeometry g, const float* __restrict__ x, float* __restrict__ y, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const VolumeIndex at = volumeIndex(idx, g.od, g.oh, g.ow);
            const int ox = at.x, oy = at.y, oz = at.z;
            const unsigned plane = at.plane;
            const float* xp = x + size_t(plane) * g.d * g.h * g.w;
            const int z0 = oz * g.sd - g.padFront, y0 = oy * g.sh - g.padTop, x0 = ox * g.sw - g.padLeft;
            float best = -INFINITY;
            for (int a = 0; a < g.kd; ++a) {
                const int iz = z0 + a * g.dd;
                if (iz < 0 || iz >= g.d)
                    continue;
                for (int b = 0; b < g.kh; ++b) {
                    const int iy = y0 + b * g.dh;
                    if (iy < 0 || iy >= g.h)
                        continue;
                    for (int e = 0; e < g.kw; ++e) {
                        const int ix = x0 + e * g.dw;
                        if (ix < 0 || ix >= g.w)
                            continue;
                        const float v = __ldg(xp + (unsigned(iz) * g.h + iy) * g.w + ix);
                        if (v > best || isnan(v))
                            best = v;
                    }
                }
            }
            y[idx] = best;
        }
    }
} // namespace

void maxPool3d(const Pool3dGeometry& g, const float* x, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.c * g.od * g.oh * g.ow;
    if (total == 0)
        return;
    const long long blocks = (total + 255) / 256;
    maxPool3dKernel<<<unsigned(blocks < (1LL << 30) ? blocks : (1LL << 30)), 256, 0, st>>>(g, x, y, unsigned(total));
    CONVSCOPE_CUDA_CHECK_LAUNCH("maxPool3dKernel");
}

} // namespace convscope::cuda
