// softmax over dim 1, numerically stable: y_i = exp(x_i − max) / Σ_j exp(x_j − max). Subtracting the row's
// maximum keeps every exponent ≤ 0, so nothing overflows however large the logits are, and the result is the
// same real number.
//
// Two layouts, two kernels:
//   flat input [n, F] (the classifier head): one warp per row. Three passes over the row — max, sum of
//   exponentials, write — each a strided loop over the lanes plus a shuffle reduction; the row stays in L1/L2
//   between passes. A warp, not a block, because rows are short (10 to a few thousand) and warps need no
//   shared memory or barriers.
//   4-D input [n, C, H, W]: softmax over the channels at each pixel. One thread per (n, pixel): the channel
//   values are H·W apart, so consecutive threads (consecutive pixels) read consecutive addresses — coalesced —
//   and each thread does its own three passes over C.
// In a session's storage format (stored_layers.cuh) the tensor is channels-last, so dim 1 is the innermost axis at
// every position, as it is for a flat input: the row kernel, templated on the storage type (loads widened to FP32,
// the max, the exponentials and the sum in FP32, one rounding per stored value), runs N·H·W rows of C.
#include "kernels/cuda/softmax.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include <cfloat>

namespace convscope::cuda {

namespace {
    template <typename T>
    __global__ void softmaxRowsKernel(long long rows, int features, const T* __restrict__ x, T* __restrict__ y)
    {
        const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
        const int lane = threadIdx.x % 32;
        if (warp >= rows)
            return;
        const T* xr = x + warp * features;
        T* yr = y + warp * features;
        float m = -INFINITY;
        for (int i = lane; i < features; i += 32)
            m = fmaxf(m, gpu::toFloat(xr[i]));
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
        float sum = 0.0f;
        for (int i = lane; i < features; i += 32)
            sum += expf(gpu::toFloat(xr[i]) - m);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
        const float inv = 1.0f / sum;
        for (int i = lane; i < features; i += 32)
            yr[i] = gpu::fromFloat<T>(expf(gpu::toFloat(xr[i]) - m) * inv);
    }

    __global__ void softmaxChannelsKernel(
        int n, int c, int planeSize, const float* __restrict__ x, float* __restrict__ y)
    {
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        if (idx >= static_cast<long long>(n) * planeSize)
            return;
        const long long img = idx / planeSize, pix = idx % planeSize;
        const float* xp = x + img * c * planeSize + pix;
        float* yp = y + img * c * planeSize + pix;
        float m = -INFINITY;
        for (int i = 0; i < c; ++i)
            m = fmaxf(m, xp[static_cast<long long>(i) * planeSize]);
        float sum = 0.0f;
        for (int i = 0; i < c; ++i)
            sum += expf(xp[static_cast<long long>(i) * planeSize] - m);
        const float inv = 1.0f / sum;
        for (int i = 0; i < c; ++i)
            yp[static_cast<long long>(i) * planeSize] = expf(xp[static_cast<long long>(i) * planeSize] - m) * inv;
    }
} // namespace

void softmax(int n, int c, int planeSize, const float* x, float* y, cudaStream_t st)
{
    if (planeSize == 1) {
        const int warpsPerBlock = 8;
        softmaxRowsKernel<float><<<(n + warpsPerBlock - 1) / warpsPerBlock, warpsPerBlock * 32, 0, st>>>(n, c, x, y);
    } else {
        const long long work = static_cast<long long>(n) * planeSize;
        softmaxChannelsKernel<<<static_cast<unsigned>((work + 255) / 256), 256, 0, st>>>(n, c, planeSize, x, y);
    }
}

void softmaxRows(long long rows, int features, DType type, const void* x, void* y, cudaStream_t st)
{
    if (rows <= 0)
        return;
    constexpr int warpsPerBlock = 8;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        softmaxRowsKernel<T>
            <<<static_cast<unsigned>((rows + warpsPerBlock - 1) / warpsPerBlock), warpsPerBlock * 32, 0, st>>>(
                rows, features, static_cast<const T*>(x), static_cast<T*>(y));
    });
}

} // namespace convscope::cuda
