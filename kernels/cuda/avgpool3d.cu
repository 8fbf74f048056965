// avgpool3d with PyTorch's divisor rule (avg_pool3d), as avgpool2d.cu has it for images, along three axes:
//   zstart = z·sd − front;  zend = min(zstart + kd, D + back);  (rows and columns likewise)
//   pool   = (zend − zstart)·(yend − ystart)·(xend − xstart)   — the window, padding included, clipped to the padded
//                                                               input (ceil_mode can push a last window past it)
//   clip the window to the real input; sum there (padding adds zeros)
//   divide by divisor_override, else pool when count_include_pad, else the clipped volume; an empty window is 0.
//
// One thread per output element, consecutive threads on consecutive output columns (memory-bound; the caches serve
// the window overlap).
#include "kernels/cuda/pooling3d.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/volume_index.cuh"

namespace convscope::cuda {

namespace {
    __global__ void avgPool3dKernel(
        Pool3dGeometry g, const float* __restrict__ x, float* __restrict__ y, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const VolumeIndex at = volumeIndex(idx, g.od, g.oh, g.ow);
            const int ox = at.x, oy = at.y, oz = at.z;
            const unsigned plane = at.plane;
            const float* xp = x + size_t(plane) * g.d * g.h * g.w;
            int zs = oz * g.sd - g.padFront, ys = oy * g.sh - g.padTop, xs = ox * g.sw - g.padLeft;
            int ze = min(zs + g.kd, g.d + g.padBack), ye = min(ys + g.kh, g.h + g.padBottom),
                xe = min(xs + g.kw, g.w + g.padRight);
            const int pool = (ze - zs) * (ye - ys) * (xe - xs);
            zs = max(zs, 0), ys = max(ys, 0), xs = max(xs, 0);
            ze = min(ze, g.d), ye = min(ye, g.h), xe = min(xe, g.w);
            if (zs >= ze || ys >= ye || xs >= xe) {
                y[idx] = 0.0f;
                continue;
            }
            float sum = 0.0f;
            for (int iz = zs; iz < ze; ++iz)
                for (int iy = ys; iy < ye; ++iy)
                    for (int ix = xs; ix < xe; ++ix)
                        sum += __ldg(xp + (unsigned(iz) * g.h + iy) * g.w + ix);
            const int divisor = g.divisorOverride ? g.divisorOverride
                : g.countIncludePad               ? pool
                                                  : (ze - zs) * (ye - ys) * (xe - xs);
            y[idx] = sum / static_cast<float>(divisor);
        }
    }
} // namespace

void avgPool3d(const Pool3dGeometry& g, const float* x, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.c * g.od * g.oh * g.ow;
    if (total == 0)
        return;
    const long long blocks = (total + 255) / 256;
    avgPool3dKernel<<<unsigned(blocks < (1LL << 30) ? blocks : (1LL << 30)), 256, 0, st>>>(g, x, y, unsigned(total));
    CONVSCOPE_CUDA_CHECK_LAUNCH("avgPool3dKernel");
}

} // namespace convscope::cuda
