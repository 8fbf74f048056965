// The pad and crop steps of cuDNN's volume convolutions (volume_kernels.cuh). Both are copies: one thread per
// element of the tensor written, consecutive threads on consecutive columns so reads and writes coalesce along W.
// Channels-last, consecutive threads take consecutive units of one position's channel run (then the next position),
// which is contiguous in both tensors: 16-byte units where the run and the pointers allow, so the step runs near the
// memory's bandwidth in FP16/BF16 too.
#include "kernels/cudnn/volume_kernels.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/volume_index.cuh"

#include <cstdint>

namespace convscope::cudnn {

namespace {
    __global__ void padVolumeKernel(Pad3d g, const float* __restrict__ x, float* __restrict__ y, unsigned total)
    {
        const int pd = g.d + g.front + g.back, ph = g.h + g.top + g.bottom, pw = g.w + g.left + g.right;
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const cuda::VolumeIndex at = cuda::volumeIndex(idx, pd, ph, pw);
            const int ix = at.x - g.left, iy = at.y - g.top, iz = at.z - g.front;
            const unsigned plane = at.plane;
            const bool in = ix >= 0 && ix < g.w && iy >= 0 && iy < g.h && iz >= 0 && iz < g.d;
            y[idx] = in ? __ldg(x + ((size_t(plane) * g.d + iz) * g.h + iy) * g.w + ix) : 0.0f;
        }
    }

    __global__ void cropVolumeKernel(
        Crop3d g, const float* __restrict__ full, const float* __restrict__ bias, float* __restrict__ y, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const cuda::VolumeIndex at = cuda::volumeIndex(idx, g.od, g.oh, g.ow);
            const int fx = at.x + g.offW, fy = at.y + g.offH, fz = at.z + g.offD;
            const unsigned plane = at.plane; // n·C + c
            const float b = bias ? __ldg(bias + plane % g.c) : 0.0f;
            const bool in = fx < g.fw && fy < g.fh && fz < g.fd;
            y[idx] = (in ? __ldg(full + ((size_t(plane) * g.fd + fz) * g.fh + fy) * g.fw + fx) : 0.0f) + b;
        }
    }

    // Channels-last pad in units E (a whole number of them per position); zero bytes are +0 in every storage type.
    template <typename E>
    __global__ void padChannelsLastKernel(
        Pad3d g, const E* __restrict__ x, E* __restrict__ y, int units, long long total)
    {
        const int pd = g.d + g.front + g.back, ph = g.h + g.top + g.bottom, pw = g.w + g.left + g.right;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            const int u = int(i % units);
            long long p = i / units;
            const int ox = int(p % pw);
            p /= pw;
            const int oy = int(p % ph);
            p /= ph;
            const int oz = int(p % pd);
            const long long img = p / pd;
            const int ix = ox - g.left, iy = oy - g.top, iz = oz - g.front;
            const bool in = ix >= 0 && ix < g.w && iy >= 0 && iy < g.h && iz >= 0 && iz < g.d;
            y[i] = in ? x[(((img * g.d + iz) * g.h + iy) * g.w + ix) * units + u] : E {};
        }
    }

    // Channels-last crop plus bias, V values of type T per thread (V = 1, or a 16-byte pack when the channel count
    // is a whole number of packs).
    template <typename T, int V>
    __global__ void cropChannelsLastKernel(
        Crop3d g, const T* __restrict__ full, const float* __restrict__ bias, T* __restrict__ y, long long packs)
    {
        const int perPosition = g.c / V;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += stride) {
            const int c0 = int(i % perPosition) * V;
            long long p = i / perPosition;
            const int ox = int(p % g.ow);
            p /= g.ow;
            const int oy = int(p % g.oh);
            p /= g.oh;
            const int oz = int(p % g.od);
            const long long img = p / g.od;
            const int fx = ox + g.offW, fy = oy + g.offH, fz = oz + g.offD;
            const bool in = fx < g.fw && fy < g.fh && fz < g.fd;
            const long long src = (((img * g.fd + fz) * g.fh + fy) * g.fw + fx) * g.c + c0;
            if constexpr (V == 1) {
                const float v = (in ? gpu::toFloat(full[src]) : 0.0f) + (bias ? __ldg(bias + c0) : 0.0f);
                y[i] = gpu::fromFloat<T>(v);
            } else {
                uint4 raw = in ? *reinterpret_cast<const uint4*>(full + src) : uint4 { 0, 0, 0, 0 };
                T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
                for (int j = 0; j < V; ++j)
                    e[j] = gpu::fromFloat<T>(gpu::toFloat(e[j]) + (bias ? __ldg(bias + c0 + j) : 0.0f));
                reinterpret_cast<uint4*>(y)[i] = raw;
            }
        }
    }

    bool aligned(const void* p, size_t unit) { return reinterpret_cast<uintptr_t>(p) % unit == 0; }

    unsigned blocksFor(long long total)
    {
        const long long b = (total + 255) / 256;
        return unsigned(b < (1LL << 30) ? b : (1LL << 30));
    }
} // namespace

void padVolume(const Pad3d& g, const float* x, float* y, cudaStream_t stream)
{
    const long long total = static_cast<long long>(g.n) * g.c * (g.d + g.front + g.back) * (g.h + g.top + g.bottom)
        * (g.w + g.left + g.right);
    if (total == 0)
        return;
    padVolumeKernel<<<blocksFor(total), 256, 0, stream>>>(g, x, y, unsigned(total));
    CONVSCOPE_CUDA_CHECK_LAUNCH("padVolumeKernel");
}

void cropVolumeAddBias(const Crop3d& g, const float* full, const float* bias, float* y, cudaStream_t stream)
{
    const long long total = static_cast<long long>(g.n) * g.c * g.od * g.oh * g.ow;
    if (total == 0)
        return;
    cropVolumeKernel<<<blocksFor(total), 256, 0, stream>>>(g, full, bias, y, unsigned(total));
    CONVSCOPE_CUDA_CHECK_LAUNCH("cropVolumeKernel");
}

void padVolumeChannelsLast(const Pad3d& g, DType type, const void* x, void* y, cudaStream_t stream)
{
    const long long positions
        = static_cast<long long>(g.n) * (g.d + g.front + g.back) * (g.h + g.top + g.bottom) * (g.w + g.left + g.right);
    const long long runBytes = static_cast<long long>(g.c) * static_cast<long long>(dtypeBytes(type));
    if (positions == 0 || runBytes == 0)
        return;
    auto launch = [&](auto unit) {
        using E = decltype(unit);
        const int units = int(runBytes / static_cast<long long>(sizeof(E)));
        const long long total = positions * units;
        padChannelsLastKernel<E>
            <<<blocksFor(total), 256, 0, stream>>>(g, static_cast<const E*>(x), static_cast<E*>(y), units, total);
    };
    auto fits = [&](size_t unit) {
        return runBytes % static_cast<long long>(unit) == 0 && aligned(x, unit) && aligned(y, unit);
    };
    if (fits(16))
        launch(uint4 {});
    else if (fits(8))
        launch(uint2 {});
    else if (fits(4))
        launch(unsigned {});
    else
        launch(static_cast<unsigned short>(0));
    CONVSCOPE_CUDA_CHECK_LAUNCH("padChannelsLastKernel");
}

void cropVolumeChannelsLastAddBias(
    const Crop3d& g, DType type, const void* full, const float* bias, void* y, cudaStream_t stream)
{
    const long long total = static_cast<long long>(g.n) * g.c * g.od * g.oh * g.ow;
    if (total == 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        constexpr int V = 16 / sizeof(T);
        const T* f = static_cast<const T*>(full);
        T* out = static_cast<T*>(y);
        if (g.c % V == 0 && aligned(full, 16) && aligned(y, 16))
            cropChannelsLastKernel<T, V><<<blocksFor(total / V), 256, 0, stream>>>(g, f, bias, out, total / V);
        else
            cropChannelsLastKernel<T, 1><<<blocksFor(total), 256, 0, stream>>>(g, f, bias, out, total);
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("cropChannelsLastKernel");
}

} // namespace convscope::cudnn
