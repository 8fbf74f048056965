// A row held in registers, for the memory-bound kernels that read every element of a row more than once (softmax:
// the maximum, the sum, the outputs; layer_norm: the mean, the variance, the outputs). Read once from memory into
// registers, each of those passes runs on the registers, so the tensor is read once and written once: the bandwidth
// floor. Reading the row again from L1/L2 (the earlier kernels) left them at 40–55% of the copy bandwidth on an H200;
// their per-element online updates (a division or an exponential and a branch on every value) were latency-bound too.
//
// The row's `tpr` threads (32 to 1024, a power of two) hold its 16-byte packs (storage_pack.cuh) round-robin: thread
// t holds packs t, t + tpr, …, so each load of the warp is 512 contiguous bytes. P packs a thread at most, a template
// parameter so that they stay in registers. With tpr ≤ 32 a warp holds 32 / tpr rows; with more, a block holds one row.
#pragma once

#include "kernels/cuda/storage_pack.cuh"

#include <cuda_runtime.h>

namespace convscope::cuda {

// The packs a thread holds per row in these kernels: at most 32 values in registers.
template <typename T> inline constexpr int kMaxRowPacks = 32 / kPack<T>;

// The threads per row and packs per thread for a row of `packs` 16-byte packs, or tpr = 0 when it does not fit in
// registers (more than 1024 · kMaxRowPacks packs).
struct RowSplit {
    int tpr = 0, packsPerThread = 0;
};
template <typename T> inline RowSplit rowSplitOf(long long packs)
{
    for (int tpr = 32; tpr <= 1024; tpr *= 2) {
        const long long per = (packs + tpr - 1) / tpr;
        if (per <= kMaxRowPacks<T>) {
            int p = 1;
            while (p < per)
                p *= 2;
            return { tpr, p };
        }
    }
    return {};
}

// Calls f.template operator()<P>() for P = the split's packs per thread (1, 2, 4 or 8).
template <typename F> void withRowPacks(int packsPerThread, F&& f)
{
    switch (packsPerThread) {
    case 1:
        f.template operator()<1>();
        break;
    case 2:
        f.template operator()<2>();
        break;
    case 4:
        f.template operator()<4>();
        break;
    default:
        f.template operator()<8>();
        break;
    }
}

struct SumOp {
    static constexpr float identity = 0.0f;
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
    static constexpr float identity = -INFINITY;
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// `v` combined over the row's tpr threads, returned to each of them. Every lane of every warp must call it (rows past
// the end included), and with tpr > 32 every thread of the block; `scratch` holds 32 floats of shared memory (one per
// warp of a block of at most 1024 threads).
template <class Op> __device__ __forceinline__ float rowReduce(float v, int tpr, float* scratch)
{
    const Op op;
    for (int o = (tpr < 32 ? tpr : 32) / 2; o > 0; o >>= 1)
        v = op(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
    if (tpr <= 32)
        return v;
    // The block's rows (blockDim / tpr of them) each own `warps` consecutive entries of the scratch.
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = tpr / 32, first = (threadIdx.x / tpr) * warps;
    __syncthreads(); // the scratch's previous use is over
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[first + lane] : Op::identity;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = op(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
    return v;
}

// Where this thread's row and packs are: row `row` (may be past the end), the thread's rank t within it.
struct RowPlace {
    long long row;
    int t;
};
__device__ __forceinline__ RowPlace rowPlace(int tpr)
{
    const int rowsPerBlock = blockDim.x / tpr;
    return { static_cast<long long>(blockIdx.x) * rowsPerBlock + threadIdx.x / tpr, int(threadIdx.x % tpr) };
}

// The row's packs into v (P packs of kPack<T> values); packs past `packs` (or a row past the end) read as `fill`.
template <typename T, int P>
__device__ __forceinline__ void loadRow(
    const T* row, long long packs, int t, int tpr, bool live, float fill, float (&v)[P][kPack<T>])
{
#pragma unroll
    for (int j = 0; j < P; ++j) {
        const long long k = t + static_cast<long long>(j) * tpr;
        if (live && k < packs)
            loadPack<T>(row + k * kPack<T>, v[j]);
        else
#pragma unroll
            for (int e = 0; e < kPack<T>; ++e)
                v[j][e] = fill;
    }
}

template <typename T, int P>
__device__ __forceinline__ void storeRow(
    T* row, long long packs, int t, int tpr, bool live, const float (&v)[P][kPack<T>])
{
    if (!live)
        return;
#pragma unroll
    for (int j = 0; j < P; ++j) {
        const long long k = t + static_cast<long long>(j) * tpr;
        if (k < packs)
            storePack<T>(row + k * kPack<T>, v[j]);
    }
}

} // namespace convscope::cuda
