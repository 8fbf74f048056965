// pad's backward (pad_backward.cuh) as a gather: one thread per input element sums the output gradient over the
// element's preimage — along each axis at most three runs of output indices (backward_index.h's padPreimage: the
// element itself shifted by the padding, its mirror images for reflect, the whole border for replicate's edge
// elements), their product in 2-D. Summed in double in a fixed order, as the CPU's compute/training/
// pool_merge_backward.cpp does with its scatter: deterministic, no atomics.
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/backward_index.h"
#include "kernels/cuda/training/pad_backward.cuh"

#include <algorithm>

namespace convscope::cuda::train {

namespace {
    constexpr int kThreads = 256;

    __global__ void padBackwardKernel(const float* __restrict__ gy, int h, int w, int top, int left, int oh, int ow,
        PadAxisMode mode, float* __restrict__ gx, long long total)
    {
        for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
             idx += (long long)gridDim.x * blockDim.x) {
            const long long plane = idx / ((long long)h * w);
            const int pos = int(idx - plane * h * w), ih = pos / w, iw = pos - ih * w;
            int hlo[3], hhi[3], wlo[3], whi[3];
            const int hn = padPreimage(ih, top, h, oh, mode, hlo, hhi);
            const int wn = padPreimage(iw, left, w, ow, mode, wlo, whi);
            const float* g = gy + plane * oh * ow;
            double sum = 0;
            for (int a = 0; a < hn; ++a)
                for (int y = hlo[a]; y < hhi[a]; ++y)
                    for (int b = 0; b < wn; ++b)
                        for (int x = wlo[b]; x < whi[b]; ++x)
                            sum += g[(long long)y * ow + x];
            gx[idx] = float(sum);
        }
    }
} // namespace

void pad2dBackward(const float* gy, long long planes, int h, int w, int top, int left, int oh, int ow, PadMode mode,
    float* gx, cudaStream_t st)
{
    const long long total = planes * h * w;
    const long long blocks = std::max<long long>(1, std::min<long long>((total + kThreads - 1) / kThreads, 1 << 20));
    padBackwardKernel<<<unsigned(blocks), kThreads, 0, st>>>(
        gy, h, w, top, left, oh, ow, static_cast<PadAxisMode>(static_cast<int>(mode)), gx, total);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::pad2dBackward");
}

} // namespace convscope::cuda::train
