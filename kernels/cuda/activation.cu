// Activations: relu, leaky_relu, sigmoid, tanh, elu, relu6, hardswish, hardsigmoid, silu, y = f(x) element by
// element.
//
// Purely memory-bound (8 bytes moved per element, a handful of instructions), so the whole job is moving bytes
// at the device's bandwidth: 16-byte float4 loads and stores (every arena tensor is 256-byte aligned, so
// whenever the count is a multiple of 4 the whole tensor is float4-addressable), a grid-stride loop over a grid
// sized to a few waves of the device (no tail of tiny blocks), and the op chosen by a template parameter so the
// inner loop has no branch on the kind. The math follows PyTorch: sigmoid 1/(1+e^−x), elu x>0 ? x : α·expm1(x), hardswish
// x·relu6(x+3)/6, silu x/(1+e^−x).
#include "kernels/cuda/activation_op.cuh"
#include "kernels/cuda/elementwise.cuh"

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
    template <ActivationKind K>
    __global__ void activationKernel(long long count, float param, const float* __restrict__ x, float* __restrict__ y)
    {
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        if (count % 4 == 0) {
            const float4* x4 = reinterpret_cast<const float4*>(x);
            float4* y4 = reinterpret_cast<float4*>(y);
            for (long long i = first; i < count / 4; i += stride) {
                float4 v = __ldg(x4 + i);
                v.x = applyActivation<K>(v.x, param), v.y = applyActivation<K>(v.y, param);
                v.z = applyActivation<K>(v.z, param), v.w = applyActivation<K>(v.w, param);
                y4[i] = v;
            }
        } else {
            for (long long i = first; i < count; i += stride)
                y[i] = applyActivation<K>(__ldg(x + i), param);
        }
    }

    template <ActivationKind K>
    void launch(long long count, float param, const float* x, float* y, cudaStream_t st)
    {
        const long long work = count % 4 == 0 ? count / 4 : count;
        activationKernel<K><<<elementwiseBlocks(work, 256), 256, 0, st>>>(count, param, x, y);
    }
} // namespace

void activation(ActivationKind kind, float param, long long count, const float* x, float* y, cudaStream_t st)
{
    switch (kind) {
    case ActivationKind::ReLU:
        return launch<ActivationKind::ReLU>(count, param, x, y, st);
    case ActivationKind::LeakyReLU:
        return launch<ActivationKind::LeakyReLU>(count, param, x, y, st);
    case ActivationKind::Sigmoid:
        return launch<ActivationKind::Sigmoid>(count, param, x, y, st);
    case ActivationKind::Tanh:
        return launch<ActivationKind::Tanh>(count, param, x, y, st);
    case ActivationKind::ELU:
        return launch<ActivationKind::ELU>(count, param, x, y, st);
    case ActivationKind::ReLU6:
        return launch<ActivationKind::ReLU6>(count, param, x, y, st);
    case ActivationKind::Hardswish:
        return launch<ActivationKind::Hardswish>(count, param, x, y, st);
    case ActivationKind::Hardsigmoid:
        return launch<ActivationKind::Hardsigmoid>(count, param, x, y, st);
    case ActivationKind::SiLU:
        return launch<ActivationKind::SiLU>(count, param, x, y, st);
    }
}

} // namespace convscope::cuda
