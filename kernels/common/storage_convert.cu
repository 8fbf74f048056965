#include "kernels/common/storage_convert.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"

#include <algorithm>

namespace convscope::gpu {

namespace {
    // Positions per image (D·H·W) and channels: the two axes channels-last swaps.
    struct Planes {
        int64_t n, c, s;
    };
    Planes planesOf(const Shape& shape)
    {
        return { shape.n, shape.c, shape.numel() / std::max<int64_t>(1, shape.n * shape.c) };
    }

    unsigned blocksFor(int64_t n) { return unsigned(std::min<int64_t>((n + 255) / 256, 65535LL * 32)); }

    // dst[(n·S + s)·C + c] ← src[(n·C + c)·S + s] when toLast, the reverse otherwise, with a type change in the copy.
    template <typename In, typename Out>
    __global__ void permuteConvert(const In* __restrict__ src, Out* __restrict__ dst, Planes p, bool toLast)
    {
        const int64_t total = p.n * p.c * p.s;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
             i += int64_t(gridDim.x) * blockDim.x) {
            // i indexes the destination, so the writes are coalesced.
            int64_t from;
            if (toLast) {
                const int64_t c = i % p.c, s = (i / p.c) % p.s, n = i / (p.c * p.s);
                from = (n * p.c + c) * p.s + s;
            } else {
                const int64_t s = i % p.s, c = (i / p.s) % p.c, n = i / (p.s * p.c);
                from = (n * p.s + s) * p.c + c;
            }
            dst[i] = fromFloat<Out>(toFloat(src[from]));
        }
    }

    template <typename In, typename Out>
    __global__ void convert(const In* __restrict__ src, Out* __restrict__ dst, int64_t n)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
            dst[i] = fromFloat<Out>(toFloat(src[i]));
    }

    template <typename In, typename Out>
    void launch(const In* src, Out* dst, const Shape& shape, bool channelsLast, bool toLast, cudaStream_t stream)
    {
        const int64_t n = shape.numel();
        if (n == 0)
            return;
        const Planes p = planesOf(shape);
        if (channelsLast && p.s > 1 && p.c > 1)
            permuteConvert<<<blocksFor(n), 256, 0, stream>>>(src, dst, p, toLast);
        else
            convert<<<blocksFor(n), 256, 0, stream>>>(src, dst, n);
        CONVSCOPE_CUDA_CHECK_LAUNCH("storage conversion");
    }
} // namespace

void toStorage(const float* src, void* dst, const Shape& shape, StorageFormat format, cudaStream_t stream)
{
    withStorageType(format.dtype, [&](auto t) {
        using T = decltype(t);
        launch(src, static_cast<T*>(dst), shape, format.channelsLast, true, stream);
    });
}

void fromStorage(const void* src, float* dst, const Shape& shape, StorageFormat format, cudaStream_t stream)
{
    withStorageType(format.dtype, [&](auto t) {
        using T = decltype(t);
        launch(static_cast<const T*>(src), dst, shape, format.channelsLast, false, stream);
    });
}

void convertValues(const float* src, void* dst, int64_t n, DType type, cudaStream_t stream)
{
    if (n == 0)
        return;
    withStorageType(type, [&](auto t) {
        using T = decltype(t);
        convert<<<blocksFor(n), 256, 0, stream>>>(src, static_cast<T*>(dst), n);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("weight conversion");
}

void channelsLastToNchw(const void* src, void* dst, const Shape& shape, DType type, cudaStream_t stream)
{
    withStorageType(type, [&](auto t) {
        using T = decltype(t);
        launch(static_cast<const T*>(src), static_cast<T*>(dst), shape, true, false, stream);
    });
}

} // namespace convscope::gpu
