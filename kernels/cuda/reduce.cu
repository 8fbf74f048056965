// reduce over any axes (reduce.cuh): output k is the reduction of the inputs sharing its kept coordinates. The plan
// (compute/reduce.h) lists the kept axes first and the reduced ones last, each with its input stride, so one kernel
// reads NCHW and channels-last tensors alike, and writes each output at its own stride.
//   many inputs per output (≥ 256): one block of 256 threads per output, each thread a strided share of the inputs,
//     merged by shuffles and shared memory;
//   few: one thread per output, the inputs in order.
// Accumulation in FP32 (sums, squares, extremes), one rounding to the storage type per output. max and min propagate
// NaN, as torch.amax / amin do.
#include "kernels/cuda/reduce.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"

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

    template <typename T, Reduce::Op Op>
    __global__ void reduceBlockPerOutput(ReducePlan p, const T* __restrict__ x, T* __restrict__ y)
    {
        __shared__ float parts[kThreads / 32];
        const long long k = blockIdx.x;
        const T* base = x + offsetOf(p, 0, p.keptAxes, k);
        float acc = initial<Op>();
        if (p.rank - p.keptAxes == 1) { // one reduced axis: a plain stride
            const long long stride = p.strides[p.keptAxes];
            for (long long r = threadIdx.x; r < p.reduced; r += kThreads)
                acc = combine<Op>(acc, term<Op>(gpu::toFloat(base[r * stride])));
        } else {
            for (long long r = threadIdx.x; r < p.reduced; r += kThreads)
                acc = combine<Op>(acc, term<Op>(gpu::toFloat(base[offsetOf(p, p.keptAxes, p.rank, r)])));
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            acc = combine<Op>(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, o));
        if (threadIdx.x % 32 == 0)
            parts[threadIdx.x / 32] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            float v = parts[0];
            for (int w = 1; w < kThreads / 32; ++w)
                v = combine<Op>(v, parts[w]);
            y[outOffsetOf(p, k)] = gpu::fromFloat<T>(finish<Op>(v, p.reduced));
        }
    }

    template <typename T, Reduce::Op Op> void launch(const ReducePlan& p, const T* x, T* y, cudaStream_t st)
    {
        if (p.reduced >= kThreads)
            reduceBlockPerOutput<T, Op><<<static_cast<unsigned>(p.kept), kThreads, 0, st>>>(p, x, y);
        else
            reduceThreadPerOutput<T, Op>
                <<<static_cast<unsigned>((p.kept + kThreads - 1) / kThreads), kThreads, 0, st>>>(p, x, y);
    }
} // namespace

void reduceTensor(const ReducePlan& p, Reduce::Op op, DType type, const void* x, void* y, cudaStream_t st)
{
    if (p.kept <= 0 || p.reduced <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        const T* xs = static_cast<const T*>(x);
        T* ys = static_cast<T*>(y);
        switch (op) {
        case Reduce::Op::Mean:
            return launch<T, Reduce::Op::Mean>(p, xs, ys, st);
        case Reduce::Op::Sum:
            return launch<T, Reduce::Op::Sum>(p, xs, ys, st);
        case Reduce::Op::Max:
            return launch<T, Reduce::Op::Max>(p, xs, ys, st);
        case Reduce::Op::Min:
            return launch<T, Reduce::Op::Min>(p, xs, ys, st);
        case Reduce::Op::L2:
            return launch<T, Reduce::Op::L2>(p, xs, ys, st);
        }
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("reduce");
}

} // namespace convscope::cuda
