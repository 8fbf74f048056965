// The stride phases' tap gather and output spread (transposed_phase_kernels.cuh): grid-stride loops, one element a
// thread an iteration, the writes (gather) or reads (spread) consecutive.
#include "kernels/cuda/transposed_phase_kernels.cuh"

#include "kernels/common/cuda_check.h"

#include <algorithm>

namespace convscope::cuda {

namespace {
    __global__ void gatherKernel(int groups, int cg, int kg, int kd, int r, int s, PhaseAxis depth, PhaseAxis row,
        PhaseAxis col, const float* __restrict__ src, float* __restrict__ dst)
    {
        const long long total = (long long)groups * kg * cg * depth.taps * row.taps * col.taps;
        for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
             e += (long long)gridDim.x * blockDim.x)
            dst[e] = src[gatheredTapSource(e, cg, kg, kd, r, s, depth, row, col)];
    }

    __global__ void spreadKernel(PhaseOutput o, PhaseAxis d, PhaseAxis h, PhaseAxis w, const float* __restrict__ staged,
        const float* __restrict__ bias, float* __restrict__ y)
    {
        const long long volume = (long long)d.count * h.count * w.count, total = o.planes * volume;
        for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
             e += (long long)gridDim.x * blockDim.x) {
            const long long plane = e / volume;
            const int at = int(e - plane * volume), a = at / (h.count * w.count), u = (at / w.count) % h.count,
                      v = at % w.count;
            const float value = staged ? staged[e] : (bias ? bias[plane % o.channels] : 0.0f);
            y[((plane * o.od + d.first + (long long)o.sd * a) * o.oh + h.first + (long long)o.sh * u) * o.ow + w.first
                + (long long)o.sw * v]
                = value;
        }
    }

    unsigned blocksFor(long long count) { return unsigned(std::clamp<long long>((count + 255) / 256, 1, 8192)); }
} // namespace

void gatherPhaseTaps(int groups, int cg, int kg, int kd, int r, int s, const PhaseAxis& depth, const PhaseAxis& row,
    const PhaseAxis& col, const float* src, float* dst, cudaStream_t st)
{
    const long long count = (long long)groups * kg * cg * depth.taps * row.taps * col.taps;
    gatherKernel<<<blocksFor(count), 256, 0, st>>>(groups, cg, kg, kd, r, s, depth, row, col, src, dst);
    CONVSCOPE_CUDA_CHECK_LAUNCH("gatherPhaseTaps");
}

void spreadPhase(const PhaseOutput& out, const PhaseAxis& depth, const PhaseAxis& row, const PhaseAxis& col,
    const float* staged, const float* bias, float* y, cudaStream_t st)
{
    const long long count = out.planes * depth.count * row.count * col.count;
    spreadKernel<<<blocksFor(count), 256, 0, st>>>(out, depth, row, col, staged, bias, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("spreadPhase");
}

} // namespace convscope::cuda
