// softmax's and log_softmax's backward (softmax_backward.cuh): PyTorch's _softmax_backward_data,
// gx = y·(gy − ⟨gy, y⟩), and _log_softmax_backward_data, gx = gy − e^y·Σ gy, along the axis of a tensor viewed as
// [outer, size, inner] (the channels of an image: [n, c, plane]).
//
// Algorithm: one thread per (image, position) — the column softmax normalised — walks its c channels twice: the dot
// product ⟨gy, y⟩ (in double, as the CPU's reference), then gx. Consecutive threads take consecutive positions of one
// image, so each channel's loads coalesce across the warp. A classifier's softmax (plane 1) has few columns and many
// channels; it is a small layer, and the loop is still correct there.
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/softmax_backward.cuh"

#include <algorithm>

namespace convscope::cuda::train {

namespace {
    constexpr int kThreads = 256;

    template <bool Log>
    __global__ void softmaxBackwardKernel(int c, long long plane, const float* __restrict__ y,
        const float* __restrict__ gy, float* __restrict__ gx, long long columns)
    {
        for (long long col = blockIdx.x * (long long)blockDim.x + threadIdx.x; col < columns;
             col += (long long)gridDim.x * blockDim.x) {
            const long long img = col / plane, pos = col - img * plane;
            const long long base = img * c * plane + pos;
            double dot = 0; // ⟨gy, y⟩, or Σ gy for log_softmax
            for (int k = 0; k < c; ++k)
                dot += Log ? double(gy[base + k * plane]) : double(gy[base + k * plane]) * double(y[base + k * plane]);
            for (int k = 0; k < c; ++k) {
                const long long i = base + k * plane;
                gx[i] = Log ? float(double(gy[i]) - exp(double(y[i])) * dot)
                            : float(double(y[i]) * (double(gy[i]) - dot));
            }
        }
    }
} // namespace

void softmaxBackward(
    int n, int c, long long plane, const float* y, const float* gy, float* gx, cudaStream_t st, bool log)
{
    const long long columns = (long long)n * plane;
    const long long blocks = std::max<long long>(1, std::min<long long>((columns + kThreads - 1) / kThreads, 1 << 20));
    if (log)
        softmaxBackwardKernel<true><<<unsigned(blocks), kThreads, 0, st>>>(c, plane, y, gy, gx, columns);
    else
        softmaxBackwardKernel<false><<<unsigned(blocks), kThreads, 0, st>>>(c, plane, y, gy, gx, columns);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::softmaxBackward");
}

} // namespace convscope::cuda::train
