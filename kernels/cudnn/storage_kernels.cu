#include "kernels/cudnn/storage_kernels.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"

#include <algorithm>

namespace convscope::cudnn {

namespace {
    template <typename T, EpilogueAct A>
    __global__ void biasActivationKernel(T* __restrict__ y, const float* __restrict__ bias, int64_t total, int channels,
        float param)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
            float v = gpu::toFloat(y[i]);
            if (bias)
                v += bias[i % channels];
            if constexpr (A == EpilogueAct::ReLU)
                v = v < 0.0f ? 0.0f : v; // a NaN stays NaN, as in PyTorch
            else if constexpr (A == EpilogueAct::Sigmoid)
                v = 1.0f / (1.0f + expf(-v));
            else if constexpr (A == EpilogueAct::Tanh)
                v = tanhf(v);
            else if constexpr (A == EpilogueAct::ELU)
                v = v > 0.0f ? v : param * expm1f(v);
            y[i] = gpu::fromFloat<T>(v);
        }
    }

    template <typename T>
    void launch(T* y, const float* bias, int64_t total, int channels, EpilogueAct act, float param, cudaStream_t st)
    {
        const unsigned blocks = unsigned(std::min<int64_t>((total + 255) / 256, 65535LL * 16));
        switch (act) {
        case EpilogueAct::None:
            biasActivationKernel<T, EpilogueAct::None><<<blocks, 256, 0, st>>>(y, bias, total, channels, param);
            break;
        case EpilogueAct::ReLU:
            biasActivationKernel<T, EpilogueAct::ReLU><<<blocks, 256, 0, st>>>(y, bias, total, channels, param);
            break;
        case EpilogueAct::Sigmoid:
            biasActivationKernel<T, EpilogueAct::Sigmoid><<<blocks, 256, 0, st>>>(y, bias, total, channels, param);
            break;
        case EpilogueAct::Tanh:
            biasActivationKernel<T, EpilogueAct::Tanh><<<blocks, 256, 0, st>>>(y, bias, total, channels, param);
            break;
        case EpilogueAct::ELU:
            biasActivationKernel<T, EpilogueAct::ELU><<<blocks, 256, 0, st>>>(y, bias, total, channels, param);
            break;
        }
    }
} // namespace

void biasActivation(void* y, const float* bias, int64_t total, int channels, DType type, EpilogueAct act, float param,
    cudaStream_t stream)
{
    if (total == 0 || (!bias && act == EpilogueAct::None))
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        launch(static_cast<T*>(y), bias, total, channels, act, param, stream);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("cudnn native bias/activation");
}

} // namespace convscope::cudnn
