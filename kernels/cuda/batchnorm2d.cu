// batchnorm2d, inference: y = (x − mean[c]) / sqrt(var[c] + eps) · weight[c] + bias[c].
//
// The statistics are constants at inference time, so prepare folds them once (in double, like the reference)
// into scale[c] and shift[c], and the per-pass kernel is a single FMA per element: y = x·scale[c] + shift[c].
// That makes it as memory-bound as an activation, and it is written the same way: float4 loads and stores
// (when H·W is a multiple of 4 a float4 never straddles two channels), a grid-stride loop over a few waves.
// The channel of element i is (i / HW) mod C; the two per-channel values come through the read-only cache.
//
// In a session's storage format (stored_layers.cuh) the tensor is channels-last, so the channel is the innermost
// index, c = i mod C: storage_pack.cuh's map over 16-byte packs (FP32, FP16 or BF16), the channel found once per
// pack and stepped, the FMA in FP32 with the FP32 folded statistics, one rounding on the store.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include "kernels/common/cuda_check.h"

namespace convscope::cuda {

namespace {
    __global__ void foldKernel(int channels, const float* mean, const float* var, const float* weight,
        const float* bias, double eps, float* folded)
    {
        const int c = blockIdx.x * blockDim.x + threadIdx.x;
        if (c >= channels)
            return;
        const double scale = (weight ? double(weight[c]) : 1.0) / sqrt(double(var[c]) + eps);
        folded[c] = static_cast<float>(scale);
        folded[channels + c] = static_cast<float>((bias ? double(bias[c]) : 0.0) - double(mean[c]) * scale);
    }

    __global__ void batchNormKernel(long long count, int c, int planeSize, const float* __restrict__ x,
        const float* __restrict__ folded, float* __restrict__ y)
    {
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        const float* scale = folded;
        const float* shift = folded + c;
        if (planeSize % 4 == 0) {
            const float4* x4 = reinterpret_cast<const float4*>(x);
            float4* y4 = reinterpret_cast<float4*>(y);
            const int plane4 = planeSize / 4;
            for (long long i = first; i < count / 4; i += stride) {
                const int ch = static_cast<int>((i / plane4) % c);
                const float a = __ldg(scale + ch), b = __ldg(shift + ch);
                float4 v = __ldg(x4 + i);
                v.x = fmaf(v.x, a, b), v.y = fmaf(v.y, a, b), v.z = fmaf(v.z, a, b), v.w = fmaf(v.w, a, b);
                y4[i] = v;
            }
        } else {
            for (long long i = first; i < count; i += stride) {
                const int ch = static_cast<int>((i / planeSize) % c);
                y[i] = fmaf(__ldg(x + i), __ldg(scale + ch), __ldg(shift + ch));
            }
        }
    }
    struct ScaleShiftLast {
        const float* folded;
        unsigned channels;
        template <int N> __device__ void operator()(float (&v)[N], unsigned i0) const
        {
            unsigned c = i0 % channels;
#pragma unroll
            for (int k = 0; k < N; ++k) {
                v[k] = fmaf(v[k], __ldg(folded + c), __ldg(folded + channels + c));
                c = c + 1 == channels ? 0 : c + 1;
            }
        }
    };
} // namespace

void batchNormFold(int channels, const float* mean, const float* var, const float* weight, const float* bias,
    double eps, float* folded, cudaStream_t st)
{
    foldKernel<<<(channels + 127) / 128, 128, 0, st>>>(channels, mean, var, weight, bias, eps, folded);
    CONVSCOPE_CUDA_CHECK_LAUNCH("batchnorm2d fold");
}

void batchNorm2d(int n, int c, int planeSize, const float* x, const float* folded, float* y, cudaStream_t st)
{
    const long long count = static_cast<long long>(n) * c * planeSize;
    const long long work = planeSize % 4 == 0 ? count / 4 : count;
    batchNormKernel<<<elementwiseBlocks(work, 256), 256, 0, st>>>(count, c, planeSize, x, folded, y);
}

void batchNormChannelsLast(
    long long count, int channels, DType type, const void* x, const float* folded, void* y, cudaStream_t st)
{
    const ScaleShiftLast op { folded, unsigned(channels) };
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        launchMap(count, op, static_cast<const T*>(x), static_cast<T*>(y), st);
    });
}

} // namespace convscope::cuda
