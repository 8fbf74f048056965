// The GPU training sessions' shared element-wise kernels (training_kernels.cuh): grid-stride loops in FP32.
#include "kernels/common/cuda_check.h"
#include "kernels/common/training_kernels.cuh"

#include <algorithm>

namespace convscope::gpu::train {

namespace {
    constexpr int kThreads = 256;

    int blocksFor(int64_t count)
    {
        const int64_t blocks = (count + kThreads - 1) / kThreads;
        return int(std::max<int64_t>(1, std::min<int64_t>(blocks, 4096)));
    }

    __global__ void sgdKernel(float* p, const float* grad, float* buf, int64_t count, float lr, float momentum,
        float wd, bool started, const int* skip, int* nonFinite)
    {
        if (skip && *skip)
            return;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x) {
            if (nonFinite && !isfinite(grad[i]))
                *nonFinite = 1;
            float g = grad[i] + wd * p[i];
            if (buf) {
                const float b = started ? momentum * buf[i] + g : g;
                buf[i] = b;
                g = b;
            }
            p[i] -= lr * g;
        }
    }

    __global__ void adamKernel(float* p, const float* grad, float* m, float* v, int64_t count, float stepSize,
        float root2, float b1, float b2, float eps, float wd, const int* skip, int* nonFinite)
    {
        if (skip && *skip)
            return;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x) {
            if (nonFinite && !isfinite(grad[i]))
                *nonFinite = 1;
            const float g = grad[i] + wd * p[i];
            const float mi = b1 * m[i] + (1.0f - b1) * g;
            const float vi = b2 * v[i] + (1.0f - b2) * g * g;
            m[i] = mi;
            v[i] = vi;
            p[i] -= stepSize * mi / (sqrtf(vi) / root2 + eps);
        }
    }

    __global__ void accumulateKernel(float* dst, const float* src, int64_t count)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x)
            dst[i] += src[i];
    }

    __global__ void nonFiniteKernel(const float* x, int64_t count, int* flag)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x)
            if (!isfinite(x[i]))
                *flag = 1;
    }

    __global__ void activationBackwardKernel(
        ActivationGrad kind, float param, float param2, const float* x, const float* gy, float* gx, int64_t count)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x) {
            const float v = x[i];
            float d = 0.0f;
            switch (kind) {
            case ActivationGrad::LeakyReLU:
                d = v > 0.0f ? 1.0f : param;
                break;
            case ActivationGrad::ReLU6:
                d = (v <= 0.0f || v >= 6.0f) ? 0.0f : 1.0f;
                break;
            case ActivationGrad::Hardswish:
                d = v < -3.0f ? 0.0f : v <= 3.0f ? v / 3.0f + 0.5f : 1.0f;
                break;
            case ActivationGrad::Hardsigmoid:
                d = (v > -3.0f && v < 3.0f) ? 1.0f / 6.0f : 0.0f;
                break;
            case ActivationGrad::SiLU: {
                const float s = 1.0f / (1.0f + expf(-v));
                d = s * (1.0f + v * (1.0f - s));
                break;
            }
            case ActivationGrad::Hardtanh:
                d = (v <= param || v >= param2) ? 0.0f : 1.0f;
                break;
            case ActivationGrad::ReLU:
                d = v > 0.0f ? 1.0f : 0.0f;
                break;
            case ActivationGrad::Sigmoid: {
                const float s = 1.0f / (1.0f + expf(-v));
                d = s * (1.0f - s);
                break;
            }
            case ActivationGrad::Tanh: {
                const float t = tanhf(v);
                d = 1.0f - t * t;
                break;
            }
            case ActivationGrad::ELU:
                d = v > 0.0f ? 1.0f : param * expf(v);
                break;
            }
            gx[i] = d * gy[i];
        }
    }
    __global__ void preluDataKernel(const float* slopes, int64_t slopeCount, int64_t channels, int64_t plane,
        const float* x, const float* gy, float* gx, int64_t count)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x) {
            const float a = slopes[slopeCount == 1 ? 0 : (i / plane) % channels];
            gx[i] = x[i] > 0.0f ? gy[i] : a * gy[i];
        }
    }
} // namespace

void preluBackwardData(const float* slopes, int64_t slopeCount, int64_t n, int64_t channels, int64_t plane,
    const float* x, const float* gy, float* gx, cudaStream_t stream)
{
    const int64_t count = n * channels * plane;
    preluDataKernel<<<blocksFor(count), kThreads, 0, stream>>>(slopes, slopeCount, channels, plane, x, gy, gx, count);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::preluDataKernel");
}

void sgdUpdate(float* param, const float* grad, float* buf, int64_t count, float lr, float momentum, float weightDecay,
    bool started, const int* skip, int* nonFinite, cudaStream_t stream)
{
    sgdKernel<<<blocksFor(count), kThreads, 0, stream>>>(
        param, grad, buf, count, lr, momentum, weightDecay, started, skip, nonFinite);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::sgdKernel");
}

void adamUpdate(float* param, const float* grad, float* m, float* v, int64_t count, float stepSize, float root2,
    float beta1, float beta2, float eps, float weightDecay, const int* skip, int* nonFinite, cudaStream_t stream)
{
    adamKernel<<<blocksFor(count), kThreads, 0, stream>>>(
        param, grad, m, v, count, stepSize, root2, beta1, beta2, eps, weightDecay, skip, nonFinite);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::adamKernel");
}

void accumulate(float* dst, const float* src, int64_t count, cudaStream_t stream)
{
    accumulateKernel<<<blocksFor(count), kThreads, 0, stream>>>(dst, src, count);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::accumulateKernel");
}

void flagNonFinite(const float* values, int64_t count, int* flag, cudaStream_t stream)
{
    nonFiniteKernel<<<blocksFor(count), kThreads, 0, stream>>>(values, count, flag);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::nonFiniteKernel");
}

void activationBackward(ActivationGrad kind, float param, float param2, const float* x, const float* gy, float* gx,
    int64_t count, cudaStream_t stream)
{
    activationBackwardKernel<<<blocksFor(count), kThreads, 0, stream>>>(kind, param, param2, x, gy, gx, count);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::activationBackwardKernel");
}

} // namespace convscope::gpu::train
