// gelu, softplus, mish, unary on the device: storage_pack.cuh's grid-stride map (16-byte packs, FP32 math), the op
// chosen by a template parameter so the inner loop has no branch on it. Memory-bound like the activations
// (activation.cu says how the bytes move); the math is compute/elementwise_math.h's, in float, with CUDA's erff,
// tanhf, log1pf and expf (within a few ulp of the CPU's).
#include "kernels/cuda/elementwise_math.cuh"

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include <cuda_runtime.h>

namespace convscope::cuda {

namespace {
    template <MathFn F> struct MathMap {
        float a, b;
        template <int N> __device__ void operator()(float (&v)[N], unsigned) const
        {
#pragma unroll
            for (int k = 0; k < N; ++k)
                v[k] = applyMath<float>(F, a, b, v[k]);
        }
    };

    template <typename T> void dispatch(const MathOp& op, long long count, const T* x, T* y, cudaStream_t st)
    {
        const float a = float(op.a), b = float(op.b);
        switch (op.fn) {
        case MathFn::GeluErf:
            return launchMap(count, MathMap<MathFn::GeluErf> { a, b }, x, y, st);
        case MathFn::GeluTanh:
            return launchMap(count, MathMap<MathFn::GeluTanh> { a, b }, x, y, st);
        case MathFn::Softplus:
            return launchMap(count, MathMap<MathFn::Softplus> { a, b }, x, y, st);
        case MathFn::Mish:
            return launchMap(count, MathMap<MathFn::Mish> { a, b }, x, y, st);
        case MathFn::Exp:
            return launchMap(count, MathMap<MathFn::Exp> { a, b }, x, y, st);
        case MathFn::Log:
            return launchMap(count, MathMap<MathFn::Log> { a, b }, x, y, st);
        case MathFn::Sqrt:
            return launchMap(count, MathMap<MathFn::Sqrt> { a, b }, x, y, st);
        case MathFn::Reciprocal:
            return launchMap(count, MathMap<MathFn::Reciprocal> { a, b }, x, y, st);
        case MathFn::Neg:
            return launchMap(count, MathMap<MathFn::Neg> { a, b }, x, y, st);
        case MathFn::Abs:
            return launchMap(count, MathMap<MathFn::Abs> { a, b }, x, y, st);
        case MathFn::Erf:
            return launchMap(count, MathMap<MathFn::Erf> { a, b }, x, y, st);
        }
    }
} // namespace

void elementwiseMath(const MathOp& op, long long count, const float* x, float* y, cudaStream_t st)
{
    dispatch(op, count, x, y, st);
}

void elementwiseMathStored(const MathOp& op, long long count, DType type, const void* x, void* y, cudaStream_t st)
{
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        dispatch(op, count, static_cast<const T*>(x), static_cast<T*>(y), st);
    });
}

} // namespace convscope::cuda
