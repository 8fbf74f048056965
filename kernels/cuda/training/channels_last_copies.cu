#include "kernels/cuda/training/channels_last_copies.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"

#include <algorithm>

namespace convscope::cuda::train {

namespace {
    constexpr int kTile = 32; // a tile is 32 channels × 32 positions
    constexpr int kRows = 8; // 32 × 8 threads, each moving 4 elements of a tile

    // blockIdx.x: a run of 32 positions, .y: 32 channels, .z: the image. Read along the positions (NCHW rows), write
    // along the channels (channels-last rows).
    template <typename H>
    __global__ void packKernel(
        const float* __restrict__ x, int64_t c, int64_t positions, H* __restrict__ xh, float* __restrict__ rounded)
    {
        __shared__ float tile[kTile][kTile + 1];
        const int64_t image = blockIdx.z, c0 = int64_t(blockIdx.y) * kTile, p0 = int64_t(blockIdx.x) * kTile;
        for (int j = threadIdx.y; j < kTile; j += kRows) {
            const int64_t ch = c0 + j, pos = p0 + threadIdx.x;
            if (ch < c && pos < positions) {
                const int64_t at = (image * c + ch) * positions + pos;
                const float v = gpu::toFloat(gpu::fromFloat<H>(x[at]));
                tile[j][threadIdx.x] = v;
                if (rounded)
                    rounded[at] = v;
            }
        }
        __syncthreads();
        for (int j = threadIdx.y; j < kTile; j += kRows) {
            const int64_t pos = p0 + j, ch = c0 + threadIdx.x;
            if (ch < c && pos < positions)
                xh[(image * positions + pos) * c + ch] = gpu::fromFloat<H>(tile[threadIdx.x][j]);
        }
    }

    template <typename H>
    __global__ void unpackKernel(const H* __restrict__ yh, int64_t c, int64_t positions, float* __restrict__ y)
    {
        __shared__ float tile[kTile][kTile + 1];
        const int64_t image = blockIdx.z, c0 = int64_t(blockIdx.y) * kTile, p0 = int64_t(blockIdx.x) * kTile;
        for (int j = threadIdx.y; j < kTile; j += kRows) {
            const int64_t pos = p0 + j, ch = c0 + threadIdx.x;
            if (ch < c && pos < positions)
                tile[threadIdx.x][j] = gpu::toFloat(yh[(image * positions + pos) * c + ch]);
        }
        __syncthreads();
        for (int j = threadIdx.y; j < kTile; j += kRows) {
            const int64_t ch = c0 + j, pos = p0 + threadIdx.x;
            if (ch < c && pos < positions)
                y[(image * c + ch) * positions + pos] = tile[j][threadIdx.x];
        }
    }

    // One thread a destination element.
    template <typename H>
    __global__ void flipKernel(const float* __restrict__ w, int k, int c, int r, int s, H* __restrict__ wt)
    {
        const int64_t total = int64_t(k) * c * r * s;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
             i += int64_t(gridDim.x) * blockDim.x) {
            const int ss = int(i % s), rr = int((i / s) % r);
            const int64_t kc = i / (int64_t(r) * s);
            const int kk = int(kc % k), cc = int(kc / k); // wt is [c][k][r][s]
            wt[i] = gpu::fromFloat<H>(w[((int64_t(kk) * c + cc) * r + (r - 1 - rr)) * s + (s - 1 - ss)]);
        }
    }

    dim3 tilesOf(int64_t n, int64_t c, int64_t positions)
    {
        return dim3(unsigned((positions + kTile - 1) / kTile), unsigned((c + kTile - 1) / kTile), unsigned(n));
    }

    void requireGrid(int64_t n, int64_t c, const char* what)
    {
        if (n > 65535 || (c + kTile - 1) / kTile > 65535)
            throw UnsupportedError(std::string(what) + ": more than 65535 images or 2 million channels");
    }
} // namespace

void packChannelsLast(
    const float* x, int64_t n, int64_t c, int64_t positions, DType type, void* xh, float* rounded, cudaStream_t st)
{
    if (n * c * positions == 0)
        return;
    requireGrid(n, c, "train: a channels-last copy");
    gpu::withStorageType(type, [&](auto h) {
        using H = decltype(h);
        packKernel<H>
            <<<tilesOf(n, c, positions), dim3(kTile, kRows), 0, st>>>(x, c, positions, static_cast<H*>(xh), rounded);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train: a channels-last copy");
}

void unpackChannelsLast(const void* yh, int64_t n, int64_t c, int64_t positions, DType type, float* y, cudaStream_t st)
{
    if (n * c * positions == 0)
        return;
    requireGrid(n, c, "train: a channels-last output");
    gpu::withStorageType(type, [&](auto h) {
        using H = decltype(h);
        unpackKernel<H>
            <<<tilesOf(n, c, positions), dim3(kTile, kRows), 0, st>>>(static_cast<const H*>(yh), c, positions, y);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train: a channels-last output");
}

void flippedTransposedWeight(const float* w, int k, int c, int r, int s, DType type, void* wt, cudaStream_t st)
{
    const int64_t total = int64_t(k) * c * r * s;
    if (total == 0)
        return;
    gpu::withStorageType(type, [&](auto h) {
        using H = decltype(h);
        flipKernel<H><<<unsigned(std::min<int64_t>((total + 255) / 256, 4096)), 256, 0, st>>>(
            w, k, c, r, s, static_cast<H*>(wt));
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train: the backward-data's flipped weight");
}

} // namespace convscope::cuda::train
