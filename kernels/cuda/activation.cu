// Activations: relu, leaky_relu, sigmoid, tanh, elu, relu6, hardswish, hardsigmoid, silu, y = f(x) element by
// element.
//
// Purely memory-bound (8 bytes moved per element in FP32, 4 in FP16/BF16, a handful of instructions), so the whole
// job is moving bytes at the device's bandwidth: 16-byte loads and stores (storage_pack.cuh's mapKernel: 4 FP32 or
// 8 FP16/BF16 values; every arena tensor is 256-byte aligned, so whenever the count is a whole number of packs the
// whole tensor is pack-addressable), a grid-stride loop over a grid
// sized to a few waves of the device (no tail of tiny blocks), and the op chosen by a template parameter so the
// inner loop has no branch on the kind. The math follows PyTorch: sigmoid 1/(1+e^−x), elu x>0 ? x : α·expm1(x),
// hardswish x·relu6(x+3)/6, silu x/(1+e^−x). One kernel for every storage type (stored_layers.cuh): FP16 and BF16 widen
// to FP32 for the op and round once on the store.
#include "kernels/cuda/activation_op.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include "kernels/common/cuda_check.h"

#include <cuda_runtime.h>

namespace convscope::cuda {

int elementwiseBlocks(long long work, int threads)
{
    static int sms = [] {
        int device = 0, count = 0;
        if (cudaGetDevice(&device) != cudaSuccess
            || cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
            (void)cudaGetLastError();
            return 132;
        }
        return count;
    }();
    const long long wanted = (work + threads - 1) / threads;
    const long long cap = static_cast<long long>(sms) * 8; // 8 blocks of 256 per SM: full occupancy, a few waves
    return static_cast<int>(wanted < cap ? (wanted > 0 ? wanted : 1) : cap);
}

namespace {
    template <ActivationKind K> struct Act {
        float param;
        template <int N> __device__ void operator()(float (&v)[N], unsigned) const
        {
#pragma unroll
            for (int k = 0; k < N; ++k)
                v[k] = applyActivation<K>(v[k], param);
        }
    };

    template <typename T>
    void dispatch(ActivationKind kind, float param, long long count, const T* x, T* y, cudaStream_t st)
    {
        switch (kind) {
        case ActivationKind::ReLU:
            return launchMap(count, Act<ActivationKind::ReLU> { param }, x, y, st);
        case ActivationKind::LeakyReLU:
            return launchMap(count, Act<ActivationKind::LeakyReLU> { param }, x, y, st);
        case ActivationKind::Sigmoid:
            return launchMap(count, Act<ActivationKind::Sigmoid> { param }, x, y, st);
        case ActivationKind::Tanh:
            return launchMap(count, Act<ActivationKind::Tanh> { param }, x, y, st);
        case ActivationKind::ELU:
            return launchMap(count, Act<ActivationKind::ELU> { param }, x, y, st);
        case ActivationKind::ReLU6:
            return launchMap(count, Act<ActivationKind::ReLU6> { param }, x, y, st);
        case ActivationKind::Hardswish:
            return launchMap(count, Act<ActivationKind::Hardswish> { param }, x, y, st);
        case ActivationKind::Hardsigmoid:
            return launchMap(count, Act<ActivationKind::Hardsigmoid> { param }, x, y, st);
        case ActivationKind::SiLU:
            return launchMap(count, Act<ActivationKind::SiLU> { param }, x, y, st);
        }
    }
} // namespace

void activation(ActivationKind kind, float param, long long count, const float* x, float* y, cudaStream_t st)
{
    dispatch(kind, param, count, x, y, st);
}

void activationStored(
    ActivationKind kind, float param, long long count, DType type, const void* x, void* y, cudaStream_t st)
{
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        dispatch(kind, param, count, static_cast<const T*>(x), static_cast<T*>(y), st);
    });
}

} // namespace convscope::cuda
