// channel_shuffle, slice, transpose and concat on the GPU (kernels/cuda/copy_kernels.cuh): one thread per output
// element, reading the element it comes from, in grid-stride loops so any size runs with a capped grid; a transpose
// that moves the input's innermost axis goes through shared-memory tiles instead.
#include "kernels/cuda/copy_kernels.cuh"

#include "compute/error.h"
#include "compute/permutation.h"
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

    struct Permutation {
        int rank;
        long long outDims[6];
        long long strides[6]; // the input's stride of each output axis
    };

    template <typename E>
    __global__ void transposeKernel(const E* __restrict__ x, Permutation p, long long total, E* __restrict__ y)
    {
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            long long rest = i, from = 0;
            for (int a = p.rank - 1; a >= 0; --a) {
                from += (rest % p.outDims[a]) * p.strides[a];
                rest /= p.outDims[a];
            }
            y[i] = x[from];
        }
    }

    // The tiled transpose: the output's last axis L and the input's innermost P trade places through a 64 × 65
    // shared-memory tile (the extra column keeps the column reads free of bank conflicts), so that the reads along P
    // and the writes along L are both coalesced. Each of the 32 × 8 threads moves 16 elements of a tile: with 32 × 32
    // tiles (4 each) too few loads were in flight to cover the memory's latency (46% of the copy bandwidth on the
    // H200). One tile per block iteration; the other axes index the tiles.
    struct TiledPermutation {
        int rank, inner; // inner: P, the output axis of input stride 1 (L is rank - 1)
        long long outDims[6], strides[6], outStrides[6];
    };
    constexpr int kTile = 64, kTileRows = 8, kWarp = 32;

    template <typename E>
    __global__ void transposeTiledKernel(const E* __restrict__ x, TiledPermutation p, long long tilesP,
        long long tilesL, long long units, E* __restrict__ y)
    {
        __shared__ E tile[kTile][kTile + 1];
        const int L = p.rank - 1;
        const long long sizeP = p.outDims[p.inner], sizeL = p.outDims[L], strideL = p.strides[L],
                        outStrideP = p.outStrides[p.inner];
        for (long long u = blockIdx.x; u < units; u += gridDim.x) {
            const long long tl = u % tilesL, tp = (u / tilesL) % tilesP;
            long long rest = u / (tilesL * tilesP), src = 0, dst = 0;
            for (int a = L - 1; a >= 0; --a) {
                if (a == p.inner)
                    continue;
                src += (rest % p.outDims[a]) * p.strides[a];
                dst += (rest % p.outDims[a]) * p.outStrides[a];
                rest /= p.outDims[a];
            }
            const long long p0 = tp * kTile, l0 = tl * kTile;
#pragma unroll
            for (int j = threadIdx.y; j < kTile; j += kTileRows)
#pragma unroll
                for (int h = 0; h < kTile; h += kWarp) {
                    const long long l = l0 + j, i = p0 + h + threadIdx.x;
                    if (l < sizeL && i < sizeP)
                        tile[j][h + threadIdx.x] = x[src + l * strideL + i];
                }
            __syncthreads();
#pragma unroll
            for (int i = threadIdx.y; i < kTile; i += kTileRows)
#pragma unroll
                for (int h = 0; h < kTile; h += kWarp) {
                    const long long row = p0 + i, l = l0 + h + threadIdx.x;
                    if (row < sizeP && l < sizeL)
                        y[dst + row * outStrideP + l] = tile[h + threadIdx.x][i];
                }
            __syncthreads();
        }
    }

    // One block of `run` elements per outer index: y[o·total + offset + j] = x[o·run + j].
    template <typename E>
    __global__ void concatKernel(
        const E* __restrict__ x, long long outer, long long run, long long total, long long offset, E* __restrict__ y)
    {
        const long long count = outer * run;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
            const long long o = i / run;
            y[o * total + offset + (i - o * run)] = x[i];
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

void transposeDims(const void* x, const std::vector<int64_t>& inDims, const std::vector<int64_t>& perm,
    int elementBytes, void* y, cudaStream_t st)
{
    checkElement(elementBytes);
    if (inDims.empty() || inDims.size() > 6 || perm.size() != inDims.size())
        throw Error("internal error: transpose of " + std::to_string(inDims.size()) + " dims by a permutation of "
            + std::to_string(perm.size()));
    const SimplePermutation sp = simplifyPermutation(inDims, perm);
    const int rank = int(sp.out.size());
    long long total = 1;
    for (int64_t d : sp.out)
        total *= d;
    if (total == 0)
        return;
    const auto launch = [&](auto element) {
        using E = decltype(element);
        const E* in = static_cast<const E*>(x);
        E* out = static_cast<E*>(y);
        if (sp.stride.back() == 1) { // the input's innermost axis stays last: each thread copies along a row
            Permutation p {};
            p.rank = rank;
            for (int a = 0; a < rank; ++a) {
                p.outDims[a] = sp.out[size_t(a)];
                p.strides[a] = sp.stride[size_t(a)];
            }
            transposeKernel<<<blocksFor(total), kThreads, 0, st>>>(in, p, total, out);
            return;
        }
        TiledPermutation p {};
        p.rank = rank;
        p.inner = int(sp.innermost());
        long long outStride = 1;
        for (int a = rank - 1; a >= 0; --a) {
            p.outDims[a] = sp.out[size_t(a)];
            p.strides[a] = sp.stride[size_t(a)];
            p.outStrides[a] = outStride;
            outStride *= sp.out[size_t(a)];
        }
        const long long tilesP = (p.outDims[p.inner] + kTile - 1) / kTile;
        const long long tilesL = (p.outDims[rank - 1] + kTile - 1) / kTile;
        const long long units = total / (p.outDims[p.inner] * p.outDims[rank - 1]) * tilesP * tilesL;
        const unsigned blocks = unsigned(std::min<long long>(units, 1LL << 20));
        transposeTiledKernel<<<blocks, dim3(kWarp, kTileRows), 0, st>>>(in, p, tilesP, tilesL, units, out);
    };
    if (elementBytes == 4)
        launch(uint32_t {});
    else
        launch(uint16_t {});
    CONVSCOPE_CUDA_CHECK_LAUNCH("transpose");
}

void concatAxis(const std::vector<const void*>& xs, const std::vector<Shape>& ins, const Shape& out, int64_t dim,
    bool channelsLast, int elementBytes, void* y, cudaStream_t st)
{
    checkElement(elementBytes);
    const AxisRuns r = axisRuns(out, dim, channelsLast);
    const long long outer = r.outer, inner = r.inner, total = r.size * r.inner;
    long long offset = 0;
    for (size_t k = 0; k < xs.size() && k < ins.size(); ++k) {
        const long long run = axisRuns(ins[k], dim, channelsLast).size * inner;
        if (outer * run > 0) {
            if (elementBytes == 4)
                concatKernel<<<blocksFor(outer * run), kThreads, 0, st>>>(
                    static_cast<const uint32_t*>(xs[k]), outer, run, total, offset, static_cast<uint32_t*>(y));
            else
                concatKernel<<<blocksFor(outer * run), kThreads, 0, st>>>(
                    static_cast<const uint16_t*>(xs[k]), outer, run, total, offset, static_cast<uint16_t*>(y));
            CONVSCOPE_CUDA_CHECK_LAUNCH("concat");
        }
        offset += run;
    }
}

} // namespace convscope::cuda
