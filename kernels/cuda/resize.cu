// Resize kernels (resize.cuh): each thread computes the taps of its output's D, H and W (resize_math.h, in double as
// the CPU does) and sums up to 4 × 4 × 4 weighted inputs in FP32.
#include "kernels/cuda/resize.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/elementwise.cuh"

namespace convscope::cuda {

namespace {
    constexpr int kThreads = 256;

    // out = Σ wz·wy·wx · x[(z·H + y)·W + x]·stride, the element at offset 0 of the input's plane being `base`.
    template <typename T>
    __device__ float resizeSum(const ResizePlan& p, long long z, long long y, long long x, const T* base, long long h,
        long long w, long long stride)
    {
        int64_t iz[kResizeMaxTaps], iy[kResizeMaxTaps], ix[kResizeMaxTaps];
        float wz[kResizeMaxTaps], wy[kResizeMaxTaps], wx[kResizeMaxTaps];
        const int nz = resizeTaps(p, p.axis[0], z, iz, wz);
        const int ny = resizeTaps(p, p.axis[1], y, iy, wy);
        const int nx = resizeTaps(p, p.axis[2], x, ix, wx);
        float acc = 0;
        for (int a = 0; a < nz; ++a)
            for (int b = 0; b < ny; ++b) {
                const T* row = base + (iz[a] * h + iy[b]) * w * stride;
                float part = 0;
                for (int c = 0; c < nx; ++c)
                    part += wx[c] * gpu::toFloat(row[ix[c] * stride]);
                acc += wz[a] * wy[b] * part;
            }
        return acc;
    }

    __global__ void resizeNchwKernel(ResizePlan p, long long total, const float* __restrict__ x, float* __restrict__ y)
    {
        const long long od = p.axis[0].out, oh = p.axis[1].out, ow = p.axis[2].out;
        const long long d = p.axis[0].in, h = p.axis[1].in, w = p.axis[2].in;
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
             i += (long long)gridDim.x * blockDim.x) {
            const long long ox = i % ow, oy = (i / ow) % oh, oz = (i / (ow * oh)) % od, plane = i / (ow * oh * od);
            y[i] = resizeSum(p, oz, oy, ox, x + plane * d * h * w, h, w, 1);
        }
    }

    template <typename T>
    __global__ void resizeLastKernel(
        ResizePlan p, long long total, long long channels, const T* __restrict__ x, T* __restrict__ y)
    {
        const long long od = p.axis[0].out, oh = p.axis[1].out, ow = p.axis[2].out;
        const long long d = p.axis[0].in, h = p.axis[1].in, w = p.axis[2].in;
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
             i += (long long)gridDim.x * blockDim.x) {
            const long long c = i % channels, pos = i / channels;
            const long long ox = pos % ow, oy = (pos / ow) % oh, oz = (pos / (ow * oh)) % od, n = pos / (ow * oh * od);
            y[i] = gpu::fromFloat<T>(resizeSum(p, oz, oy, ox, x + n * d * h * w * channels + c, h, w, channels));
        }
    }
} // namespace

void resizeNchw(const ResizePlan& plan, long long planes, const float* x, float* y, cudaStream_t st)
{
    const long long total = planes * plan.axis[0].out * plan.axis[1].out * plan.axis[2].out;
    if (total <= 0)
        return;
    resizeNchwKernel<<<elementwiseBlocks(total, kThreads), kThreads, 0, st>>>(plan, total, x, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("resize");
}

void resizeChannelsLast(
    const ResizePlan& plan, long long n, long long channels, DType type, const void* x, void* y, cudaStream_t st)
{
    const long long total = n * channels * plan.axis[0].out * plan.axis[1].out * plan.axis[2].out;
    if (total <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        resizeLastKernel<T><<<elementwiseBlocks(total, kThreads), kThreads, 0, st>>>(
            plan, total, channels, static_cast<const T*>(x), static_cast<T*>(y));
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("resize");
}

} // namespace convscope::cuda
