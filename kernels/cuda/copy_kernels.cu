// channel_shuffle and slice on the GPU (kernels/cuda/copy_kernels.cuh): one thread per output element, reading the
// element it comes from; grid-stride loops, so any size runs with a capped grid.
#include "kernels/cuda/copy_kernels.cuh"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace convscope::cuda {

namespace {
    constexpr int kThreads = 256;

    unsigned blocksFor(long long total)
    {
        return static_cast<unsigned>(
            std::max<long long>(1, std::min<long long>((total + kThreads - 1) / kThreads, 65535LL * 8)));
    }

    template <typename E>
    __global__ void shuffleKernel(const E* __restrict__ x, long long outer, long long channels, long long groups,
        long long plane, E* __restrict__ y)
    {
        const long long total = outer * channels * plane;
        const long long per = channels / groups;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            const long long p = i % plane;
            const long long t = i / plane;
            const long long o = t % channels;
            const long long n = t / channels;
            const long long source = (o % groups) * per + o / groups;
            y[i] = x[(n * channels + source) * plane + p];
        }
    }

    template <typename E>
    __global__ void sliceKernel(const E* __restrict__ x, long long outer, long long size, long long inner,
        long long start, long long kept, E* __restrict__ y)
    {
        const long long run = kept * inner;
        const long long total = outer * run;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            const long long o = i / run;
            y[i] = x[o * size * inner + start * inner + (i - o * run)];
        }
    }

    void checkElement(int elementBytes)
    {
        if (elementBytes != 2 && elementBytes != 4)
            throw Error(
                "internal error: copy kernels take elements of 2 or 4 bytes, not " + std::to_string(elementBytes));
    }
} // namespace

AxisRuns axisRuns(const Shape& s, int64_t dim, bool channelsLast)
{
    std::vector<int64_t> d = s.dims();
    if (channelsLast && d.size() > 2) { // [n, c, spatial...] → [n, spatial..., c]
        std::rotate(d.begin() + 1, d.begin() + 2, d.end());
        dim = dim == 0 ? 0 : dim == 1 ? int64_t(d.size()) - 1 : dim - 1;
    }
    AxisRuns r;
    for (int64_t i = 0; i < dim; ++i)
        r.outer *= d[size_t(i)];
    r.size = d[size_t(dim)];
    for (size_t i = size_t(dim) + 1; i < d.size(); ++i)
        r.inner *= d[i];
    return r;
}

void channelShuffle(const void* x, long long outer, long long channels, long long groups, long long plane,
    int elementBytes, void* y, cudaStream_t st)
{
    checkElement(elementBytes);
    const long long total = outer * channels * plane;
    if (total == 0)
        return;
    if (elementBytes == 4)
        shuffleKernel<<<blocksFor(total), kThreads, 0, st>>>(
            static_cast<const uint32_t*>(x), outer, channels, groups, plane, static_cast<uint32_t*>(y));
    else
        shuffleKernel<<<blocksFor(total), kThreads, 0, st>>>(
            static_cast<const uint16_t*>(x), outer, channels, groups, plane, static_cast<uint16_t*>(y));
    CONVSCOPE_CUDA_CHECK_LAUNCH("channel_shuffle");
}

void sliceAxis(const void* x, long long outer, long long size, long long inner, long long start, long long end,
    int elementBytes, void* y, cudaStream_t st)
{
    checkElement(elementBytes);
    const long long total = outer * (end - start) * inner;
    if (total == 0)
        return;
    if (elementBytes == 4)
        sliceKernel<<<blocksFor(total), kThreads, 0, st>>>(
            static_cast<const uint32_t*>(x), outer, size, inner, start, end - start, static_cast<uint32_t*>(y));
    else
        sliceKernel<<<blocksFor(total), kThreads, 0, st>>>(
            static_cast<const uint16_t*>(x), outer, size, inner, start, end - start, static_cast<uint16_t*>(y));
    CONVSCOPE_CUDA_CHECK_LAUNCH("slice");
}

} // namespace convscope::cuda
