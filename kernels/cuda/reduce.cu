// reduce over any axes (reduce.cuh): output k is the reduction of the inputs sharing its kept coordinates. The plan
// (compute/reduce.h) lists the kept axes first and the reduced ones last, each with its input stride, so one kernel
// reads NCHW and channels-last tensors alike, and writes each output at its own stride.
//   few outputs of many inputs each (fewer outputs than two per SM, 65536 inputs or more, a session scratch given):
//     a split reduction, slices of each output's inputs in parallel blocks, then their partial results in order;
//   many inputs per output (≥ 256): one block of 256 threads per output, each thread a strided share of the inputs,
//     merged by shuffles and shared memory;
//   few: one thread per output, the inputs in order.
// Accumulation in FP32 (sums, squares, extremes), one rounding to the storage type per output. max and min propagate
// NaN, as torch.amax / amin do.
#include "kernels/cuda/reduce.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"

#include <algorithm>

namespace convscope::cuda {

namespace {
    constexpr int kThreads = 256;

    __device__ __forceinline__ long long offsetOf(const ReducePlan& p, int first, int last, long long k)
    {
        long long off = 0;
        for (int a = last - 1; a >= first; --a) {
            off += (k % p.dims[a]) * p.strides[a];
            k /= p.dims[a];
        }
        return off;
    }

    __device__ __forceinline__ long long outOffsetOf(const ReducePlan& p, long long k)
    {
        long long off = 0;
        for (int a = p.keptAxes - 1; a >= 0; --a) {
            off += (k % p.dims[a]) * p.outStrides[a];
            k /= p.dims[a];
        }
        return off;
    }

    template <Reduce::Op Op> __device__ __forceinline__ float initial()
    {
        if constexpr (Op == Reduce::Op::Max)
            return -INFINITY;
        else if constexpr (Op == Reduce::Op::Min)
            return INFINITY;
        else
            return 0.0f;
    }

    template <Reduce::Op Op> __device__ __forceinline__ float combine(float a, float b)
    {
        if constexpr (Op == Reduce::Op::Max)
            return (a != a || b != b) ? __int_as_float(0x7fffffff) : fmaxf(a, b);
        else if constexpr (Op == Reduce::Op::Min)
            return (a != a || b != b) ? __int_as_float(0x7fffffff) : fminf(a, b);
        else
            return a + b;
    }

    template <Reduce::Op Op> __device__ __forceinline__ float term(float x)
    {
        if constexpr (Op == Reduce::Op::L2)
            return x * x;
        else
            return x;
    }

    template <Reduce::Op Op> __device__ __forceinline__ float finish(float v, long long count)
    {
        if constexpr (Op == Reduce::Op::Mean)
            return v / float(count);
        else if constexpr (Op == Reduce::Op::L2)
            return sqrtf(v);
        else
            return v;
    }

    template <typename T, Reduce::Op Op>
    __global__ void reduceThreadPerOutput(ReducePlan p, const T* __restrict__ x, T* __restrict__ y)
    {
        const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        if (k >= p.kept)
            return;
        const T* base = x + offsetOf(p, 0, p.keptAxes, k);
        float acc = initial<Op>();
        for (long long r = 0; r < p.reduced; ++r)
            acc = combine<Op>(acc, term<Op>(gpu::toFloat(base[offsetOf(p, p.keptAxes, p.rank, r)])));
        y[outOffsetOf(p, k)] = gpu::fromFloat<T>(finish<Op>(acc, p.reduced));
    }

    // The block's 256 values combined; the total is thread 0's.
    template <Reduce::Op Op> __device__ __forceinline__ float blockCombine(float acc)
    {
        __shared__ float parts[kThreads / 32];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            acc = combine<Op>(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, o));
        if (threadIdx.x % 32 == 0)
            parts[threadIdx.x / 32] = acc;
        __syncthreads();
        float v = parts[0];
        for (int w = 1; w < kThreads / 32; ++w)
            v = combine<Op>(v, parts[w]);
        return v;
    }

    // The terms of output k's inputs [first, last), this thread's strided share of them.
    template <typename T, Reduce::Op Op>
    __device__ __forceinline__ float shareOf(const ReducePlan& p, const T* base, long long first, long long last)
    {
        float acc = initial<Op>();
        if (p.rank - p.keptAxes == 1) { // one reduced axis: a plain stride
            const long long stride = p.strides[p.keptAxes];
            for (long long r = first + threadIdx.x; r < last; r += kThreads)
                acc = combine<Op>(acc, term<Op>(gpu::toFloat(base[r * stride])));
        } else {
            for (long long r = first + threadIdx.x; r < last; r += kThreads)
                acc = combine<Op>(acc, term<Op>(gpu::toFloat(base[offsetOf(p, p.keptAxes, p.rank, r)])));
        }
        return acc;
    }

    template <typename T, Reduce::Op Op>
    __global__ void reduceBlockPerOutput(ReducePlan p, const T* __restrict__ x, T* __restrict__ y)
    {
        const long long k = blockIdx.x;
        const float v = blockCombine<Op>(shareOf<T, Op>(p, x + offsetOf(p, 0, p.keptAxes, k), 0, p.reduced));
        if (threadIdx.x == 0)
            y[outOffsetOf(p, k)] = gpu::fromFloat<T>(finish<Op>(v, p.reduced));
    }

    // Split reduction, for few outputs of many inputs each (a global mean): `parts` blocks per output each write the
    // combination of one slice of its inputs to `partial`, then one block per output combines its parts in order
    // (deterministic) and finishes.
    template <typename T, Reduce::Op Op>
    __global__ void reduceSlices(ReducePlan p, int parts, const T* __restrict__ x, float* __restrict__ partial)
    {
        const long long k = blockIdx.x / parts, part = blockIdx.x % parts;
        const long long first = p.reduced * part / parts, last = p.reduced * (part + 1) / parts;
        const float v = blockCombine<Op>(shareOf<T, Op>(p, x + offsetOf(p, 0, p.keptAxes, k), first, last));
        if (threadIdx.x == 0)
            partial[blockIdx.x] = v;
    }

    template <typename T, Reduce::Op Op>
    __global__ void reduceParts(ReducePlan p, int parts, const float* __restrict__ partial, T* __restrict__ y)
    {
        const long long k = blockIdx.x;
        float acc = initial<Op>();
        for (int j = threadIdx.x; j < parts; j += kThreads)
            acc = combine<Op>(acc, partial[k * parts + j]);
        const float v = blockCombine<Op>(acc);
        if (threadIdx.x == 0)
            y[outOffsetOf(p, k)] = gpu::fromFloat<T>(finish<Op>(v, p.reduced));
    }

    // Slices per output: about two blocks per SM in all, each of at least 4096 inputs; 1 (no split) otherwise.
    int splitParts(const ReducePlan& p, int sms)
    {
        if (p.reduced < (1LL << 16) || p.kept >= 2LL * sms)
            return 1;
        const long long parts = std::min({ (2LL * sms + p.kept - 1) / p.kept, p.reduced / 4096, 1024LL });
        return int(std::max(1LL, parts));
    }

    template <typename T, Reduce::Op Op>
    void launch(const ReducePlan& p, const T* x, T* y, float* scratch, int sms, cudaStream_t st)
    {
        const int parts = scratch ? splitParts(p, sms) : 1;
        if (parts > 1) {
            reduceSlices<T, Op><<<static_cast<unsigned>(p.kept * parts), kThreads, 0, st>>>(p, parts, x, scratch);
            reduceParts<T, Op><<<static_cast<unsigned>(p.kept), kThreads, 0, st>>>(p, parts, scratch, y);
        } else if (p.reduced >= kThreads) {
            reduceBlockPerOutput<T, Op><<<static_cast<unsigned>(p.kept), kThreads, 0, st>>>(p, x, y);
        } else {
            reduceThreadPerOutput<T, Op>
                <<<static_cast<unsigned>((p.kept + kThreads - 1) / kThreads), kThreads, 0, st>>>(p, x, y);
        }
    }
} // namespace

size_t reduceScratchBytes(const ReducePlan& p, int sms)
{
    const int parts = splitParts(p, sms);
    return parts > 1 ? size_t(p.kept) * size_t(parts) * sizeof(float) : 0;
}

void reduceTensor(
    const ReducePlan& p, Reduce::Op op, DType type, const void* x, void* y, void* scratch, int sms, cudaStream_t st)
{
    if (p.kept <= 0 || p.reduced <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        const T* xs = static_cast<const T*>(x);
        T* ys = static_cast<T*>(y);
        float* f = static_cast<float*>(scratch);
        switch (op) {
        case Reduce::Op::Mean:
            return launch<T, Reduce::Op::Mean>(p, xs, ys, f, sms, st);
        case Reduce::Op::Sum:
            return launch<T, Reduce::Op::Sum>(p, xs, ys, f, sms, st);
        case Reduce::Op::Max:
            return launch<T, Reduce::Op::Max>(p, xs, ys, f, sms, st);
        case Reduce::Op::Min:
            return launch<T, Reduce::Op::Min>(p, xs, ys, f, sms, st);
        case Reduce::Op::L2:
            return launch<T, Reduce::Op::L2>(p, xs, ys, f, sms, st);
        }
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("reduce");
}

} // namespace convscope::cuda
