// 16-byte packs of a storage type (4 FP32, 8 FP16 or 8 BF16 values) widened to FP32 registers and rounded back:
// the memory-bound kernels that run in a session's storage format (compute/storage_format.h) move their bytes in
// these, one 16-byte load and store per thread and step, whatever T is, and do their math in FP32. Also the
// grid-stride element-wise map that activations, hardtanh, and channels-last batch norm and prelu share.
#pragma once

#include "kernels/common/storage_types.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace convscope::cuda {

template <typename T> inline constexpr int kPack = 16 / int(sizeof(T));

template <typename T> __device__ __forceinline__ void unpack(const uint4& raw, float (&v)[kPack<T>])
{
    T e[kPack<T>];
    memcpy(e, &raw, 16);
#pragma unroll
    for (int k = 0; k < kPack<T>; ++k)
        v[k] = gpu::toFloat(e[k]);
}

// Cached load (read-only path): inputs that other threads or the next step read again.
template <typename T> __device__ __forceinline__ void loadPack(const T* p, float (&v)[kPack<T>])
{
    unpack<T>(__ldg(reinterpret_cast<const uint4*>(p)), v);
}

// Streamed load (evict first): data read exactly once, such as a linear layer's weights.
template <typename T> __device__ __forceinline__ void loadPackStreaming(const T* p, float (&v)[kPack<T>])
{
    unpack<T>(__ldcs(reinterpret_cast<const uint4*>(p)), v);
}

template <typename T> __device__ __forceinline__ void storePack(T* p, const float (&v)[kPack<T>])
{
    T e[kPack<T>];
#pragma unroll
    for (int k = 0; k < kPack<T>; ++k)
        e[k] = gpu::fromFloat<T>(v[k]);
    uint4 raw;
    memcpy(&raw, e, 16);
    *reinterpret_cast<uint4*>(p) = raw;
}

// V = 1 (one value) or kPack<T> (a pack): the width a channels-last kernel picked for its channel groups.
template <typename T, int V> __device__ __forceinline__ void loadValues(const T* p, float (&v)[V])
{
    if constexpr (V == 1)
        v[0] = gpu::toFloat(p[0]);
    else
        loadPack<T>(p, v);
}

template <typename T, int V> __device__ __forceinline__ void storeValues(T* p, const float (&v)[V])
{
    if constexpr (V == 1)
        p[0] = gpu::fromFloat<T>(v[0]);
    else
        storePack<T>(p, v);
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// y[i] = op(x[i]) for `count` elements. `op(v, i0)` rewrites an array of consecutive values in place, v[k] being
// element i0 + k (ops that need the channel derive it from i0 once per array). Vector path (packs) when the count
// is a whole number of packs and both pointers are 16-byte aligned; else one element per step. 32-bit indices:
// supports() caps tensors at 2^31 elements.
template <class Op, typename T>
__global__ void mapKernel(unsigned count, bool vec, Op op, const T* __restrict__ x, T* __restrict__ y)
{
    const unsigned stride = gridDim.x * blockDim.x;
    const unsigned first = blockIdx.x * blockDim.x + threadIdx.x;
    if (vec) {
        constexpr int V = kPack<T>;
        for (unsigned p = first; p < count / V; p += stride) {
            float v[V];
            loadPack<T>(x + size_t(p) * V, v);
            op(v, p * V);
            storePack<T>(y + size_t(p) * V, v);
        }
    } else {
        for (unsigned i = first; i < count; i += stride) {
            float v[1] = { gpu::toFloat(x[i]) };
            op(v, i);
            y[i] = gpu::fromFloat<T>(v[0]);
        }
    }
}

int elementwiseBlocks(long long work, int threads); // activation.cu

template <class Op, typename T> void launchMap(long long count, Op op, const T* x, T* y, cudaStream_t st)
{
    if (count <= 0)
        return;
    const bool vec = count % kPack<T> == 0 && aligned16(x) && aligned16(y);
    const long long work = vec ? count / kPack<T> : count;
    mapKernel<<<elementwiseBlocks(work, 256), 256, 0, st>>>(unsigned(count), vec, op, x, y);
}

// Where thread `idx` of a channels-last window kernel works (V channels a thread): the output position (image, row p,
// column q; `pos` counts positions over the batch) and its first channel.
struct ChannelsLastPosition {
    unsigned pos, image;
    int p, q;
    unsigned c0;
};
template <int V, typename Geometry>
__device__ __forceinline__ ChannelsLastPosition channelsLastPosition(const Geometry& g, unsigned idx)
{
    const unsigned groups = unsigned(g.c) / V;
    const unsigned pos = idx / groups;
    const unsigned row = pos / g.q;
    const unsigned image = row / g.p;
    return { pos, image, static_cast<int>(row - image * g.p), static_cast<int>(pos - row * g.q),
        (idx - pos * groups) * V };
}

// The launch every channels-last window kernel (max and average pooling) shares: one thread per output position and
// pack of kPack<T> channels when C and both pointers allow 16-byte access, else per channel. `launch(T{},
// std::integral_constant<int, V>{}, blocks, total)` launches the kernel for the element type T and V channels a thread.
template <typename Launch>
void launchChannelsLastWindows(
    long long positions, int channels, DType type, const void* x, const void* y, Launch&& launch)
{
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        const bool vec = channels % kPack<T> == 0 && aligned16(x) && aligned16(y);
        const long long total = positions * (vec ? channels / kPack<T> : channels);
        if (total <= 0)
            return;
        const unsigned blocks = static_cast<unsigned>(std::min<long long>((total + 255) / 256, 1LL << 30));
        if (vec)
            launch(t, std::integral_constant<int, kPack<T>> {}, blocks, unsigned(total));
        else
            launch(t, std::integral_constant<int, 1> {}, blocks, unsigned(total));
    });
}

} // namespace convscope::cuda
