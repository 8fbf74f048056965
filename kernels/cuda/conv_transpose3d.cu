// conv_transpose3d (PyTorch's ConvTranspose3d, NCDHW), gathered: every input voxel scatters x · w[c, k, a, b, e]
// to full-output position (iz·sd + a·dd, iy·sh + b·dh, ix·sw + e·dw); the layer's output is that full output with
// front/top/left planes cropped (padding) and back/bottom/right ones cropped or added (padding, output_padding),
// which shape inference turned into the output size. Instead of scattering (atomics, nondeterministic sums), each
// thread owns one output voxel (z, y, x) and gathers: along depth, tap a contributes when z + front − a·dd is a
// whole multiple of sd inside the input, and likewise along rows and columns. Weights are [C, K/groups, kd, kh, kw].
//
// One thread per output element, consecutive threads on consecutive output columns. cuda.implicit_gemm and the
// other GEMM algorithms run this kernel too on volumes (the layer note says so): the decoder's transposed layers are
// not where the lecture's measurement looks, and the gather has no atomics to make the sums order-dependent.
#include "kernels/cuda/conv3d.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/volume_index.cuh"

namespace convscope::cuda {

namespace {
    // The input index a tap reads along one axis, or −1 when it falls between inputs or outside them.
    __device__ __forceinline__ int sourceOf(int full, int tapOffset, int stride, int size)
    {
        const int t = full - tapOffset;
        if (t < 0)
            return -1;
        const int i = t / stride;
        return (i * stride == t && i < size) ? i : -1;
    }

    __global__ void convTranspose3dKernel(Conv3dGeometry g, const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y, unsigned total)
    {
        const int cg = g.c / g.groups, kg = g.k / g.groups;
        const unsigned hw = unsigned(g.h) * g.w, dhw = hw * g.d;
        const int taps = g.kd * g.kh * g.kw;
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const VolumeIndex at = volumeIndex(idx, g.od, g.oh, g.ow);
            const int ox = at.x, oy = at.y, oz = at.z;
            const int co = int(at.plane % unsigned(g.k));
            const unsigned nn = at.plane / unsigned(g.k);
            const int group = co / kg, kLocal = co - group * kg;
            const int fz = oz + g.pd, fy = oy + g.ph, fx = ox + g.pw; // position in the uncropped output
            float acc = bias ? __ldg(bias + co) : 0.0f;
            for (int a = 0; a < g.kd; ++a) {
                const int iz = sourceOf(fz, a * g.dd, g.sd, g.d);
                if (iz < 0)
                    continue;
                for (int b = 0; b < g.kh; ++b) {
                    const int iy = sourceOf(fy, b * g.dh, g.sh, g.h);
                    if (iy < 0)
                        continue;
                    for (int e = 0; e < g.kw; ++e) {
                        const int ix = sourceOf(fx, e * g.dw, g.sw, g.w);
                        if (ix < 0)
                            continue;
                        const unsigned at = unsigned(iz) * hw + unsigned(iy) * g.w + ix;
                        const int tap = (a * g.kh + b) * g.kw + e;
                        for (int ci = 0; ci < cg; ++ci) {
                            const int c = group * cg + ci;
                            acc += __ldg(x + (size_t(nn) * g.c + c) * dhw + at)
                                * __ldg(w + (size_t(c) * kg + kLocal) * taps + tap);
                        }
                    }
                }
            }
            y[idx] = acc;
        }
    }
} // namespace

void convTranspose3dGather(
    const Conv3dGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.k * g.od * g.oh * g.ow;
    if (total == 0)
        return;
    const long long blocks = (total + 255) / 256;
    convTranspose3dKernel<<<unsigned(blocks < (1LL << 30) ? blocks : (1LL << 30)), 256, 0, st>>>(
        g, x, w, bias, y, unsigned(total));
    CONVSCOPE_CUDA_CHECK_LAUNCH("convTranspose3dKernel");
}

} // namespace convscope::cuda
