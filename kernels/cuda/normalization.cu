// layer_norm, group_norm and instance_norm (normalization.cuh).
// Paths, by the row's length:
//   registers: rows of a whole number of 16-byte packs, at most 32768 elements, with enough rows to fill the GPU
//          (or rows of at most 2048): the row's threads hold it in registers (row_registers.cuh), so it is read once
//          and written once. The mean is the row's sum over n, the variance the sum of (x − mean)² over n: two passes
//          over the registers, exact to FP32 rounding however far the data are from zero.
//   warp:  other rows of at most 2048 elements: one warp per row, 8 rows a block.
//   block: longer rows, when there are enough of them to fill the GPU: one block of 512 threads per row.
//   split: few long rows (group_norm with one group on a large image, instance_norm on a small batch): the rows are
//          cut into chunks of 16384 elements, one block per chunk computes its partial statistics into the scratch,
//          then one block per chunk merges its row's partials and writes the chunk.
// Outside the register path the statistics are Welford's running mean and sum of squared deviations, per thread in
// FP32 over a strided share of the row (four values at a time where the row is in 16-byte packs: their own mean and
// squared deviations, merged by Chan's rule, one division per four values), merged by Chan's rule across the warp
// (shuffles) and the block (shared memory); a second read (from L1/L2 for the short rows) writes
// y = (x − mean) · rstd · w + b.
// In a storage format (channels-last FP32, FP16 or BF16) the same rows are read through the channels-last index of each
// element, widened to FP32, with the warp and block paths; every sum in FP32, one rounding per stored value.
#include "kernels/cuda/normalization.cuh"
#include "kernels/cuda/row_registers.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"

#include <algorithm>

namespace convscope::cuda {

namespace {
    constexpr unsigned kFull = 0xFFFFFFFFu;
    constexpr int kWarpRowsMax = 2048, kRowsPerBlock = 8, kBlock = 512;
    constexpr long long kChunk = 16384;

    struct Moments {
        float n, mean, m2;
    };

    __device__ __forceinline__ void push(Moments& m, float x)
    {
        m.n += 1.0f;
        const float d = x - m.mean;
        m.mean += d / m.n;
        m.m2 += d * (x - m.mean);
    }

    __device__ __forceinline__ Moments merge(const Moments& a, const Moments& b)
    {
        const float n = a.n + b.n;
        if (n == 0.0f)
            return a;
        const float delta = b.mean - a.mean, f = b.n / n;
        return { n, a.mean + delta * f, a.m2 + b.m2 + delta * delta * a.n * f };
    }

    // Four values at once: their own mean and squared deviations, merged (one division instead of four).
    __device__ __forceinline__ void push4(Moments& m, const float4& q)
    {
        const float mean = (q.x + q.y + q.z + q.w) * 0.25f;
        const float a = q.x - mean, b = q.y - mean, c = q.z - mean, d = q.w - mean;
        m = merge(m, Moments { 4.0f, mean, a * a + b * b + c * c + d * d });
    }

    // The moments of x[first, end) `step` apart; with `vec`, first and end are multiples of 4 (x 16-byte aligned) and
    // the values are taken four at a time from first, 4 · step apart.
    __device__ __forceinline__ Moments stridedMoments(
        const float* x, unsigned first, unsigned end, unsigned step, bool vec)
    {
        Moments m { 0.0f, 0.0f, 0.0f };
        if (vec)
            for (unsigned j = first + 4 * (threadIdx.x % step); j < end; j += 4 * step)
                push4(m, __ldg(reinterpret_cast<const float4*>(x + j)));
        else
            for (unsigned j = first + threadIdx.x % step; j < end; j += step)
                push(m, x[j]);
        return m;
    }

    // The warp's moments, merged; every lane gets lane 0's result.
    __device__ __forceinline__ Moments warpMerge(Moments m)
    {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const Moments other { __shfl_down_sync(kFull, m.n, o), __shfl_down_sync(kFull, m.mean, o),
                __shfl_down_sync(kFull, m.m2, o) };
            m = merge(m, other);
        }
        return { __shfl_sync(kFull, m.n, 0), __shfl_sync(kFull, m.mean, 0), __shfl_sync(kFull, m.m2, 0) };
    }

    // The block's moments (blockDim.x a multiple of 32, at most 1024), returned to every thread.
    __device__ Moments blockMerge(Moments m)
    {
        __shared__ Moments warps[32];
        __shared__ Moments total;
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, count = blockDim.x / 32;
        m = warpMerge(m);
        if (lane == 0)
            warps[warp] = m;
        __syncthreads();
        if (warp == 0) {
            Moments w = lane < count ? warps[lane] : Moments { 0.0f, 0.0f, 0.0f };
            w = warpMerge(w);
            if (lane == 0)
                total = w;
        }
        __syncthreads();
        return total;
    }

    struct Row {
        const float* x;
        float* y;
        const float* w; // the row's parameters: w[p], p = j / inner
        const float* b;
        unsigned inner;
    };

    __device__ __forceinline__ Row rowOf(
        const NormGeometry& g, long long r, const float* x, const float* w, const float* b, float* y)
    {
        const long long base = (r % g.groups) * (g.rowLength / g.inner);
        return { x + r * g.rowLength, y + r * g.rowLength, w + base, b + base, unsigned(g.inner) };
    }

    // Writes elements [begin, end) of the row, `step` apart from `first`.
    __device__ __forceinline__ void apply(
        const Row& row, float mean, float rstd, unsigned first, unsigned end, unsigned step)
    {
        if (row.inner == 1) {
            for (unsigned j = first; j < end; j += step)
                row.y[j] = (row.x[j] - mean) * rstd * row.w[j] + row.b[j];
        } else {
            for (unsigned j = first; j < end; j += step) {
                const unsigned p = j / row.inner;
                row.y[j] = (row.x[j] - mean) * rstd * row.w[p] + row.b[p];
            }
        }
    }

    __global__ void normWarpKernel(NormGeometry g, bool vec, const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ b, float* __restrict__ y)
    {
        const long long r = static_cast<long long>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
        if (r >= g.rows) // a whole warp leaves together: the shuffles below see full warps
            return;
        const unsigned lane = threadIdx.x % 32, len = unsigned(g.rowLength);
        const Row row = rowOf(g, r, x, w, b, y);
        Moments m = stridedMoments(row.x, 0, len, 32, vec);
        m = warpMerge(m);
        apply(row, m.mean, rsqrtf(fmaxf(m.m2 / m.n, 0.0f) + g.eps), lane, len, 32);
    }

    __global__ void normBlockKernel(NormGeometry g, bool vec, const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ b, float* __restrict__ y)
    {
        const Row row = rowOf(g, blockIdx.x, x, w, b, y);
        const unsigned len = unsigned(g.rowLength);
        Moments m = stridedMoments(row.x, 0, len, blockDim.x, vec);
        m = blockMerge(m);
        apply(row, m.mean, rsqrtf(fmaxf(m.m2 / m.n, 0.0f) + g.eps), threadIdx.x, len, blockDim.x);
    }

    // The row in registers (row_registers.cuh): one read, one write.
    template <int P>
    __global__ void __launch_bounds__(1024) normRegisterRows(NormGeometry g, int tpr, const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y)
    {
        __shared__ float scratch[32];
        const RowPlace at = rowPlace(tpr);
        const bool live = at.row < g.rows;
        const long long packs = g.rowLength / 4;
        const Row row = rowOf(g, live ? at.row : 0, x, w, b, y);
        float v[P][4];
        loadRow<float, P>(row.x, packs, at.t, tpr, live, 0.0f, v);
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < P; ++j)
            sum += (v[j][0] + v[j][1]) + (v[j][2] + v[j][3]);
        const float n = float(g.rowLength);
        const float mean = rowReduce<SumOp>(sum, tpr, scratch) / n;
        float sq = 0.0f;
#pragma unroll
        for (int j = 0; j < P; ++j)
            if (at.t + static_cast<long long>(j) * tpr < packs) // the packs past the row's end are not the row's
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const float d = v[j][e] - mean;
                    sq += d * d;
                }
        const float rstd = rsqrtf(rowReduce<SumOp>(sq, tpr, scratch) / n + g.eps);
#pragma unroll
        for (int j = 0; j < P; ++j) {
            const unsigned first = unsigned(at.t + j * tpr) * 4;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const unsigned p = row.inner == 1 ? first + e : (first + e) / row.inner;
                if (live && first + e < unsigned(g.rowLength))
                    v[j][e] = (v[j][e] - mean) * rstd * __ldg(row.w + p) + __ldg(row.b + p);
            }
        }
        storeRow<float, P>(row.y, packs, at.t, tpr, live, v);
    }

    // Split rows: block (chunk, row) writes its chunk's moments to partial[row · chunks + chunk].
    __global__ void normChunkStatsKernel(
        NormGeometry g, bool vec, const float* __restrict__ x, Moments* __restrict__ partial)
    {
        const long long r = blockIdx.y;
        const unsigned start = unsigned(blockIdx.x * kChunk),
                       end = unsigned(min(g.rowLength, (blockIdx.x + 1) * kChunk));
        Moments m = stridedMoments(x + r * g.rowLength, start, end, blockDim.x, vec);
        m = blockMerge(m);
        if (threadIdx.x == 0)
            partial[r * gridDim.x + blockIdx.x] = m;
    }

    __global__ void normChunkApplyKernel(NormGeometry g, const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ b, const Moments* __restrict__ partial, float* __restrict__ y)
    {
        __shared__ Moments rowMoments;
        const long long r = blockIdx.y;
        if (threadIdx.x < 32) { // warp 0 merges the row's chunks, in the same order in every block of the row
            Moments m { 0.0f, 0.0f, 0.0f };
            for (unsigned c = threadIdx.x; c < gridDim.x; c += 32)
                m = merge(m, partial[r * gridDim.x + c]);
            m = warpMerge(m);
            if (threadIdx.x == 0)
                rowMoments = m;
        }
        __syncthreads();
        const Moments m = rowMoments;
        const unsigned start = unsigned(blockIdx.x * kChunk),
                       end = unsigned(min(g.rowLength, (blockIdx.x + 1) * kChunk));
        apply(rowOf(g, r, x, w, b, y), m.mean, rsqrtf(fmaxf(m.m2 / m.n, 0.0f) + g.eps), start + threadIdx.x, end,
            blockDim.x);
    }

    // ---- Storage format: element L of the NCHW order (n, c, position) at its place in [n, positions, channels].
    struct ChannelsLast {
        unsigned channels, positions;
        __device__ __forceinline__ unsigned operator()(unsigned l) const
        {
            const unsigned plane = channels * positions;
            const unsigned n = l / plane, rest = l - n * plane, c = rest / positions, p = rest - c * positions;
            return (n * positions + p) * channels + c;
        }
    };

    // The row r's elements [first, len) `step` apart, through `at`: the moments, then y.
    template <typename T>
    __device__ __forceinline__ Moments storedMoments(
        const NormGeometry& g, ChannelsLast at, const T* x, unsigned base, unsigned first, unsigned step)
    {
        Moments m { 0.0f, 0.0f, 0.0f };
        for (unsigned j = first; j < unsigned(g.rowLength); j += step)
            push(m, gpu::toFloat(x[at(base + j)]));
        return m;
    }

    template <typename T>
    __device__ __forceinline__ void storedApply(const NormGeometry& g, ChannelsLast at, long long r, const T* x,
        const float* w, const float* b, T* y, const Moments& m, unsigned first, unsigned step)
    {
        const unsigned base = unsigned(r * g.rowLength), inner = unsigned(g.inner);
        const long long pbase = (r % g.groups) * (g.rowLength / g.inner);
        const float rstd = rsqrtf(fmaxf(m.m2 / m.n, 0.0f) + g.eps);
        for (unsigned j = first; j < unsigned(g.rowLength); j += step) {
            const unsigned i = at(base + j);
            const long long p = pbase + (inner == 1 ? j : j / inner);
            y[i] = gpu::fromFloat<T>((gpu::toFloat(x[i]) - m.mean) * rstd * w[p] + b[p]);
        }
    }

    template <typename T>
    __global__ void normStoredWarpKernel(NormGeometry g, ChannelsLast at, const T* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ b, T* __restrict__ y)
    {
        const long long r = static_cast<long long>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
        if (r >= g.rows)
            return;
        const unsigned lane = threadIdx.x % 32;
        const Moments m = warpMerge(storedMoments(g, at, x, unsigned(r * g.rowLength), lane, 32));
        storedApply(g, at, r, x, w, b, y, m, lane, 32);
    }

    template <typename T>
    __global__ void normStoredBlockKernel(NormGeometry g, ChannelsLast at, const T* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ b, T* __restrict__ y)
    {
        const long long r = blockIdx.x;
        const Moments m = blockMerge(storedMoments(g, at, x, unsigned(r * g.rowLength), threadIdx.x, blockDim.x));
        storedApply(g, at, r, x, w, b, y, m, threadIdx.x, blockDim.x);
    }

    enum class Path { Registers, Warp, Block, Split };

    long long chunksOf(const NormGeometry& g) { return (g.rowLength + kChunk - 1) / kChunk; }

    // The register path's split of a row, or tpr = 0 where the row is not in whole packs or does not fit.
    RowSplit registerSplitOf(const NormGeometry& g)
    {
        return g.rowLength % 4 == 0 ? rowSplitOf<float>(g.rowLength / 4) : RowSplit {};
    }

    Path pathOf(const NormGeometry& g, int sms)
    {
        const RowSplit split = registerSplitOf(g);
        if (split.tpr != 0 && (g.rowLength <= kWarpRowsMax || g.rows >= 2LL * std::max(sms, 1)))
            return Path::Registers;
        if (g.rowLength <= kWarpRowsMax)
            return Path::Warp;
        if (g.rows >= 4LL * std::max(sms, 1) || chunksOf(g) == 1 || g.rows > 65535)
            return Path::Block;
        return Path::Split;
    }
} // namespace

size_t normalizationScratchBytes(const NormGeometry& g, int sms)
{
    return pathOf(g, sms) == Path::Split ? size_t(g.rows * chunksOf(g)) * sizeof(Moments) : 0;
}

void normalizationStored(const NormGeometry& g, long long channels, long long positions, DType type, const void* x,
    const float* weight, const float* bias, void* y, cudaStream_t st)
{
    if (g.rows <= 0 || g.rowLength <= 0)
        return;
    const ChannelsLast at { unsigned(channels), unsigned(positions) };
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        const T* xs = static_cast<const T*>(x);
        T* ys = static_cast<T*>(y);
        if (g.rowLength <= kWarpRowsMax)
            normStoredWarpKernel<T>
                <<<unsigned((g.rows + kRowsPerBlock - 1) / kRowsPerBlock), 32 * kRowsPerBlock, 0, st>>>(
                    g, at, xs, weight, bias, ys);
        else
            normStoredBlockKernel<T><<<unsigned(g.rows), kBlock, 0, st>>>(g, at, xs, weight, bias, ys);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("normalization (storage format)");
}

std::string normalizationNote(const NormGeometry& g, int sms)
{
    const std::string rows = std::to_string(g.rows) + " rows of " + std::to_string(g.rowLength);
    switch (pathOf(g, sms)) {
    case Path::Registers:
        return "our CUDA kernel: each row (" + rows + ") held in the registers of "
            + std::to_string(registerSplitOf(g).tpr) + " threads, read once, FP32 sums";
    case Path::Warp:
        return "our CUDA kernel: one warp per row (" + rows + "), Welford sums in FP32 merged by shuffles";
    case Path::Block:
        return "our CUDA kernel: one block of " + std::to_string(kBlock) + " threads per row (" + rows
            + "), Welford sums in FP32 merged by shuffles and shared memory";
    case Path::Split:
        return "our CUDA kernel: " + rows + " split into " + std::to_string(chunksOf(g))
            + " chunks each, per-chunk Welford sums in FP32 merged by Chan's rule";
    }
    return {};
}

void normalization(const NormGeometry& g, const float* x, const float* weight, const float* bias, float* y,
    void* scratch, int sms, cudaStream_t st)
{
    if (g.rows <= 0 || g.rowLength <= 0)
        return;
    const bool vec = g.rowLength % 4 == 0 && aligned16(x);
    Path path = pathOf(g, sms);
    if (path == Path::Registers && !(vec && aligned16(y)))
        path = g.rowLength <= kWarpRowsMax ? Path::Warp : Path::Block;
    switch (path) {
    case Path::Registers: {
        const RowSplit split = registerSplitOf(g);
        const int threads = std::max(split.tpr, 256);
        const long long rowsPerBlock = threads / split.tpr;
        withRowPacks(split.packsPerThread, [&]<int P>() {
            normRegisterRows<P><<<unsigned((g.rows + rowsPerBlock - 1) / rowsPerBlock), threads, 0, st>>>(
                g, split.tpr, x, weight, bias, y);
        });
        break;
    }
    case Path::Warp:
        normWarpKernel<<<unsigned((g.rows + kRowsPerBlock - 1) / kRowsPerBlock), 32 * kRowsPerBlock, 0, st>>>(
            g, vec, x, weight, bias, y);
        break;
    case Path::Block:
        normBlockKernel<<<unsigned(g.rows), kBlock, 0, st>>>(g, vec, x, weight, bias, y);
        break;
    case Path::Split: {
        const dim3 grid(unsigned(chunksOf(g)), unsigned(g.rows));
        auto* partial = static_cast<Moments*>(scratch);
        normChunkStatsKernel<<<grid, kBlock, 0, st>>>(g, vec, x, partial);
        CONVSCOPE_CUDA_CHECK_LAUNCH("normalization (chunk statistics)");
        normChunkApplyKernel<<<grid, kBlock, 0, st>>>(g, x, weight, bias, partial, y);
        break;
    }
    }
    CONVSCOPE_CUDA_CHECK_LAUNCH("normalization");
}

} // namespace convscope::cuda
