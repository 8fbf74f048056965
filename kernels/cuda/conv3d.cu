// conv3d, direct: y[n, k, z, y, x] = bias[k] + Σ over the input channels of k's group and the kd·kh·kw taps of
// x[n, c, z·sd − front + a·dd, y·sh − top + b·dh, x·sw − left + e·dw] · w[k, c, a, b, e], taps outside the input
// reading zero (PyTorch's Conv3d, NCDHW).
//
// One thread per output element, consecutive threads on consecutive output columns, every operand straight from
// global memory through the read-only cache. It is cuda.direct's kernel for volumes and the device-side reference
// of the implicit GEMM (conv3d_implicit_gemm.cu): nothing is staged or reordered, so its sums are the seven loops
// of cpu.direct in the same order (input channel, then depth, row and column of the tap).
#include "kernels/cuda/conv3d.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/volume_index.cuh"

namespace convscope::cuda {

namespace {
    __global__ void conv3dDirectKernel(Conv3dGeometry g, const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y, unsigned total)
    {
        const int cg = g.c / g.groups, kg = g.k / g.groups;
        const unsigned hw = unsigned(g.h) * g.w, dhw = hw * g.d;
        const int taps = g.kd * g.kh * g.kw;
        // 32-bit indices: supports() caps every tensor at 2^31 elements.
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const VolumeIndex at = volumeIndex(idx, g.od, g.oh, g.ow);
            const int ox = at.x, oy = at.y, oz = at.z;
            const int co = int(at.plane % unsigned(g.k));
            const unsigned nn = at.plane / unsigned(g.k);
            const int group = co / kg;
            const int z0 = oz * g.sd - g.pd, y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
            float acc = bias ? __ldg(bias + co) : 0.0f;
            for (int ci = 0; ci < cg; ++ci) {
                const float* xc = x + (size_t(nn) * g.c + size_t(group) * cg + ci) * dhw;
                const float* wc = w + (size_t(co) * cg + ci) * taps;
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
                            acc += __ldg(xc + unsigned(iz) * hw + unsigned(iy) * g.w + ix)
                                * __ldg(wc + (a * g.kh + b) * g.kw + e);
                        }
                    }
                }
            }
            y[idx] = acc;
        }
    }
} // namespace

void conv3dDirect(const Conv3dGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.k * g.od * g.oh * g.ow;
    if (total == 0)
        return;
    const long long blocks = (total + 255) / 256;
    conv3dDirectKernel<<<unsigned(blocks < (1LL << 30) ? blocks : (1LL << 30)), 256, 0, st>>>(
        g, x, w, bias, y, unsigned(total));
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv3dDirectKernel");
}

} // namespace convscope::cuda
