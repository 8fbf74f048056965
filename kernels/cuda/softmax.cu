// softmax and log_softmax along any axis, numerically stable: with m the maximum along the axis,
// y = e^(x − m) / Σ e^(x − m) or y = x − m − log Σ e^(x − m). Subtracting m keeps every exponent ≤ 0, so nothing
// overflows however large the logits are. The tensor is [outer, size, inner] around the axis (compute/reduce.h).
//
// Where the axis fits in registers (row_registers.cuh) the tensor is read once and written once, the bandwidth floor:
//   inner = 1, the row a whole number of 16-byte packs, at most 32768 FP32 values: the row's threads hold it in
//     registers; its maximum and the sum of e^(x − m) are reduced over them, and the outputs written from them.
//   inner ≥ 32, size ≤ 1024: a block of 4 to 32 warps holds 32 neighbouring columns, lane = column, each warp its
//     share of the axis in registers; the warps' maxima and sums are merged through shared memory.
// Otherwise one read for the maximum and the sum together (the online form: when a larger value comes, the sum so far
// is scaled by e^(m_old − m_new)), a second read for the outputs:
//   inner = 1, size ≤ 1024: one warp per row, partial (m, s) pairs merged by shuffles.
//   inner = 1, size > 1024: one block of 256 threads per row, the pairs merged through shared memory.
//   inner > 1: one thread per (outer, inner) column, consecutive threads on consecutive inner positions so each of
//     the `size` loads coalesces across the warp; with fewer than 16384 columns along an axis of 64 or more, a block
//     of 8 warps per 32 columns shares each column.
// Templated on the storage type (FP32, FP16, BF16): loads widened to FP32, the maximum, exponentials and sums in
// FP32, one rounding per stored value.
#include "kernels/cuda/row_registers.cuh"
#include "kernels/cuda/softmax.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include "kernels/common/cuda_check.h"

#include <algorithm>

namespace convscope::cuda {

namespace {
    struct MaxSum {
        float m, s;
    };

    __device__ __forceinline__ void addValue(MaxSum& a, float x)
    {
        if (x > a.m) {
            a.s = a.s * expf(a.m - x) + 1.0f;
            a.m = x;
        } else {
            a.s += expf(x - a.m);
        }
    }

    __device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b)
    {
        const float m = fmaxf(a.m, b.m);
        // A part that saw nothing (s = 0, m = −inf) adds nothing; e^(−inf − −inf) would be NaN.
        const float sa = a.s == 0.0f ? 0.0f : a.s * expf(a.m - m);
        const float sb = b.s == 0.0f ? 0.0f : b.s * expf(b.m - m);
        return { m, sa + sb };
    }

    __device__ __forceinline__ MaxSum warpMerge(MaxSum v)
    {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const MaxSum other { __shfl_xor_sync(0xFFFFFFFFu, v.m, o), __shfl_xor_sync(0xFFFFFFFFu, v.s, o) };
            v = merge(v, other);
        }
        return v;
    }

    // shift = log Σ e^(x − m): log_softmax is (x − m) − shift, PyTorch's order.
    template <bool Log> __device__ __forceinline__ float outputOf(float x, MaxSum r, float shift)
    {
        if constexpr (Log)
            return (x - r.m) - shift;
        else
            return expf(x - r.m) / r.s;
    }

    template <typename T, bool Log>
    __global__ void softmaxWarpRows(long long rows, int size, const T* __restrict__ x, T* __restrict__ y)
    {
        const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
        const int lane = threadIdx.x % 32;
        if (row >= rows)
            return;
        const T* xr = x + row * size;
        T* yr = y + row * size;
        MaxSum r { -INFINITY, 0.0f };
        for (int i = lane; i < size; i += 32)
            addValue(r, gpu::toFloat(xr[i]));
        r = warpMerge(r);
        const float shift = logf(r.s);
        for (int i = lane; i < size; i += 32)
            yr[i] = gpu::fromFloat<T>(outputOf<Log>(gpu::toFloat(xr[i]), r, shift));
    }

    constexpr int kBlockRowThreads = 256;

    template <typename T, bool Log>
    __global__ void softmaxBlockRows(long long size, const T* __restrict__ x, T* __restrict__ y)
    {
        __shared__ MaxSum parts[kBlockRowThreads / 32];
        const long long row = blockIdx.x;
        const T* xr = x + row * size;
        T* yr = y + row * size;
        MaxSum r { -INFINITY, 0.0f };
        for (long long i = threadIdx.x; i < size; i += kBlockRowThreads)
            addValue(r, gpu::toFloat(xr[i]));
        r = warpMerge(r);
        if (threadIdx.x % 32 == 0)
            parts[threadIdx.x / 32] = r;
        __syncthreads();
        r = parts[0];
        for (int k = 1; k < kBlockRowThreads / 32; ++k)
            r = merge(r, parts[k]);
        const float shift = logf(r.s);
        for (long long i = threadIdx.x; i < size; i += kBlockRowThreads)
            yr[i] = gpu::fromFloat<T>(outputOf<Log>(gpu::toFloat(xr[i]), r, shift));
    }

    template <typename T, bool Log>
    __global__ void softmaxColumns(
        long long outer, long long size, long long inner, const T* __restrict__ x, T* __restrict__ y)
    {
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        if (idx >= outer * inner)
            return;
        const long long o = idx / inner, p = idx % inner;
        const T* xp = x + o * size * inner + p;
        T* yp = y + o * size * inner + p;
        MaxSum r { -INFINITY, 0.0f };
        for (long long i = 0; i < size; ++i)
            addValue(r, gpu::toFloat(xp[i * inner]));
        const float shift = logf(r.s);
        for (long long i = 0; i < size; ++i)
            yp[i * inner] = gpu::fromFloat<T>(outputOf<Log>(gpu::toFloat(xp[i * inner]), r, shift));
    }

    // Few columns along a long axis (softmax over the batch of a [4096, 16] tensor: 16 threads above): a block of 8
    // warps per 32 neighbouring columns, lane = column, the warps striding along the axis; their (m, s) pairs merged
    // through shared memory.
    template <typename T, bool Log>
    __global__ void softmaxColumnsSplit(
        long long groups, long long size, long long inner, const T* __restrict__ x, T* __restrict__ y)
    {
        __shared__ MaxSum parts[8][32];
        const long long o = blockIdx.x / groups, p = (blockIdx.x % groups) * 32 + threadIdx.x % 32;
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        const bool active = p < inner;
        const T* xp = x + o * size * inner + p;
        T* yp = y + o * size * inner + p;
        MaxSum r { -INFINITY, 0.0f };
        if (active)
            for (long long i = warp; i < size; i += 8)
                addValue(r, gpu::toFloat(xp[i * inner]));
        parts[warp][lane] = r;
        __syncthreads();
        r = parts[0][lane];
        for (int w = 1; w < 8; ++w)
            r = merge(r, parts[w][lane]);
        const float shift = logf(r.s);
        if (active)
            for (long long i = warp; i < size; i += 8)
                yp[i * inner] = gpu::fromFloat<T>(outputOf<Log>(gpu::toFloat(xp[i * inner]), r, shift));
    }

    // The row in registers (row_registers.cuh): one read, one write.
    template <typename T, bool Log, int P>
    __global__ void __launch_bounds__(1024)
        softmaxRegisterRows(long long rows, long long packs, int tpr, const T* __restrict__ x, T* __restrict__ y)
    {
        __shared__ float scratch[32];
        constexpr int K = kPack<T>;
        const RowPlace at = rowPlace(tpr);
        const bool live = at.row < rows;
        const long long base = live ? at.row * packs * K : 0;
        float v[P][K];
        loadRow<T, P>(x + base, packs, at.t, tpr, live, -INFINITY, v);
        float m = -INFINITY;
#pragma unroll
        for (int j = 0; j < P; ++j)
#pragma unroll
            for (int e = 0; e < K; ++e)
                m = fmaxf(m, v[j][e]);
        m = rowReduce<MaxOp>(m, tpr, scratch);
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < P; ++j)
#pragma unroll
            for (int e = 0; e < K; ++e) {
                const float ex = expf(v[j][e] - m); // the packs past the row's end: e^(−inf) = 0
                s += ex;
                if constexpr (Log)
                    v[j][e] -= m;
                else
                    v[j][e] = ex;
            }
        s = rowReduce<SumOp>(s, tpr, scratch);
        const float shift = logf(s);
#pragma unroll
        for (int j = 0; j < P; ++j)
#pragma unroll
            for (int e = 0; e < K; ++e)
                v[j][e] = Log ? v[j][e] - shift : v[j][e] / s;
        storeRow<T, P>(y + base, packs, at.t, tpr, live, v);
    }

    // 32 neighbouring columns a block, lane = column; warp w of the block's W holds the axis's elements w, w + W, …
    // (Q of them) in registers. The warps' partial maxima and sums meet in shared memory, each thread reading its
    // column's W. The fewest warps that hold the axis: more blocks an SM, so that one block's reads overlap another's
    // writes (a block of 32 warps filled an SM alone, its read and write phases in turn).
    template <typename T, bool Log, int Q>
    __global__ void __launch_bounds__(1024) softmaxRegisterColumns(
        long long groups, long long size, long long inner, const T* __restrict__ x, T* __restrict__ y)
    {
        __shared__ float parts[32][33];
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
        const long long o = blockIdx.x / groups, p = (blockIdx.x % groups) * 32 + lane;
        const bool active = p < inner;
        const long long base = o * size * inner + (active ? p : 0);
        float v[Q];
        float m = -INFINITY;
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const long long i = warp + static_cast<long long>(warps) * q;
            v[q] = active && i < size ? gpu::toFloat(x[base + i * inner]) : -INFINITY;
            m = fmaxf(m, v[q]);
        }
        parts[warp][lane] = m;
        __syncthreads();
        m = -INFINITY;
        for (int w = 0; w < warps; ++w)
            m = fmaxf(m, parts[w][lane]);
        float s = 0.0f;
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const float ex = expf(v[q] - m);
            s += ex;
            v[q] = Log ? v[q] - m : ex;
        }
        __syncthreads(); // every thread has read the maxima
        parts[warp][lane] = s;
        __syncthreads();
        s = 0.0f;
        for (int w = 0; w < warps; ++w)
            s += parts[w][lane];
        const float shift = logf(s);
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const long long i = warp + static_cast<long long>(warps) * q;
            if (active && i < size)
                y[base + i * inner] = gpu::fromFloat<T>(Log ? v[q] - shift : v[q] / s);
        }
    }

    // The register paths, when the axis fits: true when one of them was launched.
    template <typename T, bool Log>
    bool launchRegisters(long long outer, long long size, long long inner, const T* x, T* y, cudaStream_t st)
    {
        if (inner == 1) {
            if (size % kPack<T> != 0 || !aligned16(x) || !aligned16(y))
                return false;
            const RowSplit split = rowSplitOf<T>(size / kPack<T>);
            if (split.tpr == 0)
                return false;
            const int threads = split.tpr < 256 ? 256 : split.tpr;
            const long long rowsPerBlock = threads / split.tpr;
            withRowPacks(split.packsPerThread, [&]<int P>() {
                softmaxRegisterRows<T, Log, P>
                    <<<static_cast<unsigned>((outer + rowsPerBlock - 1) / rowsPerBlock), threads, 0, st>>>(
                        outer, size / kPack<T>, split.tpr, x, y);
            });
            return true;
        }
        if (inner < 32 || size > 32 * 32 || outer * ((inner + 31) / 32) > 0x7FFFFFFFLL)
            return false;
        const long long groups = (inner + 31) / 32;
        const unsigned blocks = static_cast<unsigned>(outer * groups);
        const int warps = int(std::max<long long>(4, (size + 31) / 32)); // each warp 32 values at most
        const unsigned threads = unsigned(32 * (warps <= 4 ? 4 : warps <= 8 ? 8 : warps <= 16 ? 16 : 32));
        const long long q = (size + threads / 32 - 1) / (threads / 32);
        if (q <= 8)
            softmaxRegisterColumns<T, Log, 8><<<blocks, threads, 0, st>>>(groups, size, inner, x, y);
        else if (q <= 16)
            softmaxRegisterColumns<T, Log, 16><<<blocks, threads, 0, st>>>(groups, size, inner, x, y);
        else
            softmaxRegisterColumns<T, Log, 32><<<blocks, threads, 0, st>>>(groups, size, inner, x, y);
        return true;
    }

    template <typename T, bool Log>
    void launch(long long outer, long long size, long long inner, const T* x, T* y, cudaStream_t st)
    {
        if (launchRegisters<T, Log>(outer, size, inner, x, y, st))
            return;
        if (inner == 1 && size <= 1024) {
            constexpr int warpsPerBlock = 8;
            softmaxWarpRows<T, Log>
                <<<static_cast<unsigned>((outer + warpsPerBlock - 1) / warpsPerBlock), warpsPerBlock * 32, 0, st>>>(
                    outer, int(size), x, y);
        } else if (inner == 1) {
            softmaxBlockRows<T, Log><<<static_cast<unsigned>(outer), kBlockRowThreads, 0, st>>>(size, x, y);
        } else if (outer * inner < 16384 && size >= 64) {
            const long long groups = (inner + 31) / 32;
            softmaxColumnsSplit<T, Log>
                <<<static_cast<unsigned>(outer * groups), 256, 0, st>>>(groups, size, inner, x, y);
        } else {
            const long long work = outer * inner;
            softmaxColumns<T, Log><<<static_cast<unsigned>((work + 255) / 256), 256, 0, st>>>(outer, size, inner, x, y);
        }
    }
} // namespace

void softmaxAxis(
    long long outer, long long size, long long inner, bool log, DType type, const void* x, void* y, cudaStream_t st)
{
    if (outer <= 0 || size <= 0 || inner <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        if (log)
            launch<T, true>(outer, size, inner, static_cast<const T*>(x), static_cast<T*>(y), st);
        else
            launch<T, false>(outer, size, inner, static_cast<const T*>(x), static_cast<T*>(y), st);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("softmax");
}

} // namespace convscope::cuda
