// The GPU training sessions' shared element-wise kernels (training_kernels.cuh): grid-stride loops, FP32 math on
// elements of the step's storage type (storage_types.cuh's widening loads and rounding stores).
#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"
#include "kernels/common/training_kernels.cuh"

#include <algorithm>
#include <cstdint>

namespace convscope::gpu::train {

namespace {
    constexpr int kThreads = 256;

    int blocksFor(int64_t count)
    {
        const int64_t blocks = (count + kThreads - 1) / kThreads;
        return int(std::max<int64_t>(1, std::min<int64_t>(blocks, 4096)));
    }

    // The updated parameter's storage copy (mixed precision), or nothing.
    template <typename C> __device__ __forceinline__ void storeCopy(C* copy, int64_t i, float p)
    {
        if (copy)
            copy[i] = fromFloat<C>(p);
    }

    template <typename G, typename C>
    __global__ void sgdKernel(float* p, const G* grad, float unscale, C* copy, float* buf, int64_t count, float lr,
        float momentum, float wd, bool started, const int* skip, int* nonFinite)
    {
        if (skip && *skip)
            return;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x) {
            const float raw = toFloat(grad[i]) * unscale;
            if (nonFinite && !isfinite(raw))
                *nonFinite = 1;
            float g = raw + wd * p[i];
            if (buf) {
                const float b = started ? momentum * buf[i] + g : g;
                buf[i] = b;
                g = b;
            }
            const float updated = p[i] - lr * g;
            p[i] = updated;
            storeCopy(copy, i, updated);
        }
    }

    template <typename G, typename C>
    __global__ void adamKernel(float* p, const G* grad, float unscale, C* copy, float* m, float* v, int64_t count,
        float stepSize, float root2, float b1, float b2, float eps, float wd, const int* skip, int* nonFinite)
    {
        if (skip && *skip)
            return;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x) {
            const float raw = toFloat(grad[i]) * unscale;
            if (nonFinite && !isfinite(raw))
                *nonFinite = 1;
            const float g = raw + wd * p[i];
            const float mi = b1 * m[i] + (1.0f - b1) * g;
            const float vi = b2 * v[i] + (1.0f - b2) * g * g;
            m[i] = mi;
            v[i] = vi;
            const float updated = p[i] - stepSize * mi / (sqrtf(vi) / root2 + eps);
            p[i] = updated;
            storeCopy(copy, i, updated);
        }
    }

    // dst += src in FP32, each of its own type (accumulate: both the storage type; addInto: an FP32 sum).
    template <typename D, typename S> __global__ void addKernel(D* dst, const S* src, int64_t count)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x)
            dst[i] = fromFloat<D>(toFloat(dst[i]) + toFloat(src[i]));
    }

    template <typename T> __global__ void nonFiniteKernel(const T* x, int64_t count, int* flag)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x)
            if (!isfinite(toFloat(x[i])))
                *flag = 1;
    }

    template <typename S, typename D> __global__ void convertKernel(const S* src, D* dst, int64_t count, float factor)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x)
            dst[i] = fromFloat<D>(toFloat(src[i]) * factor);
    }

    // Four values a thread per load where the buffers are 16-byte aligned (every device buffer is; a window of one
    // may not be), then the tail.
    template <typename H> __global__ void roundThroughKernel(const float* src, float* dst, int64_t count)
    {
        const auto round = [](float v) { return toFloat(fromFloat<H>(v)); };
        const bool aligned = ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15) == 0;
        const int64_t quads = aligned ? count / 4 : 0;
        const int64_t stride = int64_t(gridDim.x) * blockDim.x;
        const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
        for (int64_t i = first; i < quads; i += stride) {
            float4 v = reinterpret_cast<const float4*>(src)[i];
            v = make_float4(round(v.x), round(v.y), round(v.z), round(v.w));
            reinterpret_cast<float4*>(dst)[i] = v;
        }
        for (int64_t i = quads * 4 + first; i < count; i += stride)
            dst[i] = round(src[i]);
    }

    template <typename T>
    __global__ void activationBackwardKernel(
        ActivationGrad kind, float param, float param2, const T* x, const T* gy, T* gx, int64_t count)
    {
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x) {
            const float v = toFloat(x[i]);
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
            gx[i] = fromFloat<T>(d * toFloat(gy[i]));
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

// The optimizers' kernels for the gradient's type G and the copy's type C (no copy: C = float with a null pointer).
template <typename F> static void withGradientAndCopy(const GradientIn& grad, const ParameterCopy& copy, F&& f)
{
    withStorageType(grad.type, [&](auto g) {
        using G = decltype(g);
        if (!copy.data)
            return f(static_cast<const G*>(grad.data), static_cast<float*>(nullptr));
        withStorageType(
            copy.type, [&](auto c) { f(static_cast<const G*>(grad.data), static_cast<decltype(c)*>(copy.data)); });
    });
}

void sgdUpdate(float* param, GradientIn grad, ParameterCopy copy, float* buf, int64_t count, float lr, float momentum,
    float weightDecay, bool started, const int* skip, int* nonFinite, cudaStream_t stream)
{
    withGradientAndCopy(grad, copy, [&](const auto* g, auto* c) {
        sgdKernel<<<blocksFor(count), kThreads, 0, stream>>>(
            param, g, grad.unscale, c, buf, count, lr, momentum, weightDecay, started, skip, nonFinite);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::sgdKernel");
}

void adamUpdate(float* param, GradientIn grad, ParameterCopy copy, float* m, float* v, int64_t count, float stepSize,
    float root2, float beta1, float beta2, float eps, float weightDecay, const int* skip, int* nonFinite,
    cudaStream_t stream)
{
    withGradientAndCopy(grad, copy, [&](const auto* g, auto* c) {
        adamKernel<<<blocksFor(count), kThreads, 0, stream>>>(
            param, g, grad.unscale, c, m, v, count, stepSize, root2, beta1, beta2, eps, weightDecay, skip, nonFinite);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::adamKernel");
}

void accumulate(void* dst, const void* src, int64_t count, cudaStream_t stream, DType type)
{
    withStorageType(type, [&](auto v) {
        using T = decltype(v);
        addKernel<<<blocksFor(count), kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), count);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::accumulate");
}

void addInto(float* dst, const void* src, DType type, int64_t count, cudaStream_t stream)
{
    withStorageType(type, [&](auto v) {
        addKernel<<<blocksFor(count), kThreads, 0, stream>>>(dst, static_cast<const decltype(v)*>(src), count);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::addInto");
}

void flagNonFinite(const void* values, int64_t count, int* flag, cudaStream_t stream, DType type)
{
    withStorageType(type, [&](auto v) {
        using T = decltype(v);
        nonFiniteKernel<<<blocksFor(count), kThreads, 0, stream>>>(static_cast<const T*>(values), count, flag);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::nonFiniteKernel");
}

void convertScaled(
    const void* src, DType srcType, void* dst, DType dstType, int64_t count, float factor, cudaStream_t stream)
{
    withStorageType(srcType, [&](auto s) {
        withStorageType(dstType, [&](auto d) {
            convertKernel<<<blocksFor(count), kThreads, 0, stream>>>(
                static_cast<const decltype(s)*>(src), static_cast<decltype(d)*>(dst), count, factor);
        });
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::convertKernel");
}

void roundThrough(const float* src, float* dst, int64_t count, DType type, cudaStream_t stream)
{
    if (type == DType::F32)
        throw Error("train::roundThrough: FP32 is not a half type");
    withStorageType(type, [&](auto h) {
        roundThroughKernel<decltype(h)><<<blocksFor((count + 3) / 4), kThreads, 0, stream>>>(src, dst, count);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::roundThroughKernel");
}

void activationBackward(ActivationGrad kind, float param, float param2, const void* x, const void* gy, void* gx,
    int64_t count, cudaStream_t stream, DType type)
{
    withStorageType(type, [&](auto v) {
        using T = decltype(v);
        activationBackwardKernel<<<blocksFor(count), kThreads, 0, stream>>>(
            kind, param, param2, static_cast<const T*>(x), static_cast<const T*>(gy), static_cast<T*>(gx), count);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::activationBackwardKernel");
}

} // namespace convscope::gpu::train
